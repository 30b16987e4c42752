//! The shared threads as a server browses them: every server lists and searches every
//! thread, whichever server recorded it.

use std::collections::HashSet;

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::super::search::snippet;
use super::super::{
    ConversationSummary, ConversationsPage, ListCursor, ListSort, SearchHit, SearchPage,
    ThreadCatalog, ThreadCatalogError, ThreadChange, ThreadChangeKind, ThreadFilter, ThreadSearch,
};
use super::PostgresThreadStore;
use super::changes::{ANNOUNCE, CHANNEL, channel, payload};
use super::digest::Digest;
use super::failure::store_error;
use super::row::{SUMMARY_COLUMNS, kind_name, summary};
use crate::error::CoreError;

/// `text` as a `LIKE` pattern matching it anywhere, its wildcards taken literally.
fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Of the threads `$1`, those another server's turn holds now (`$2`: this server's holder).
const RUNNING_ELSEWHERE: &str = "SELECT id FROM keel_threads
     WHERE id = ANY($1) AND lease_holder IS NOT NULL AND lease_holder <> $2
       AND lease_expires_at > now()";

/// Whether a listing can be answered by SQL alone: everything but a text, a parent or an
/// ancestor, in the order of creation (the rest is applied to every summary, as the file
/// store does).
fn in_sql(filter: &ThreadFilter) -> bool {
    filter.sort == ListSort::Created
        && filter.text.is_none()
        && filter.parent.is_none()
        && filter.ancestor.is_none()
}

/// A filter's list as an SQL array parameter; `None` (no condition) when it is not given.
fn any_of<T>(items: Option<&[T]>, name: impl Fn(&T) -> String) -> Option<Vec<String>> {
    items.map(|items| items.iter().map(name).collect())
}

impl PostgresThreadStore {
    async fn summaries(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<ConversationSummary>, CoreError> {
        let rows = self
            .shared
            .query(sql, params)
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        Ok(rows.iter().filter_map(summary).collect())
    }

    /// Runs `sql`, a change to thread `id` (`$1`) that announces itself (`$2`) to the other
    /// servers as `kind`; whether the thread was changed.
    async fn change_announced(
        &self,
        sql: &str,
        id: ConversationId,
        kind: ThreadChangeKind,
    ) -> Result<bool, CoreError> {
        let announce = payload(id, kind, &self.instance);
        let changed = self
            .shared
            .query(sql, &[&id.to_string(), &announce])
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        Ok(!changed.is_empty())
    }

    async fn sql_list(&self, filter: &ThreadFilter) -> Result<ConversationsPage, CoreError> {
        let (order, compare) = match (
            filter.ascending,
            filter.cursor.as_ref().map(|c| c.inclusive),
        ) {
            (true, Some(false)) => ("ASC", ">"),
            (true, _) => ("ASC", ">="),
            (false, Some(false)) => ("DESC", "<"),
            (false, _) => ("DESC", "<="),
        };
        let cursor = filter.cursor.as_ref().map(|c| c.file_name.clone());
        let limit = i64::try_from(filter.limit.saturating_add(1)).unwrap_or(i64::MAX);
        let kinds = any_of(
            (!filter.source_kinds.is_empty()).then_some(filter.source_kinds.as_slice()),
            |kind| kind_name(*kind),
        );
        let providers = any_of(
            (!filter.model_providers.is_empty()).then_some(filter.model_providers.as_slice()),
            String::clone,
        );
        let cwds = any_of(filter.cwds.as_deref(), |cwd| {
            cwd.to_string_lossy().into_owned()
        });
        let included = any_of(filter.included.as_deref(), ToString::to_string);
        let excluded: Vec<String> = filter.excluded.iter().map(ToString::to_string).collect();
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM keel_threads t
             WHERE t.archived = $1 AND t.has_turns
               AND ($2::text IS NULL OR t.list_key {compare} $2)
               AND ($4::text[] IS NULL OR t.source_kind = ANY($4))
               AND ($5::text[] IS NULL OR t.model_provider = ANY($5))
               AND ($6::text[] IS NULL OR t.cwd = ANY($6))
               AND ($7::text[] IS NULL OR t.id = ANY($7))
               AND NOT (t.id = ANY($8))
             ORDER BY t.list_key {order} LIMIT $3"
        );
        let mut items = self
            .summaries(
                &sql,
                &[
                    &filter.archived,
                    &cursor,
                    &limit,
                    &kinds,
                    &providers,
                    &cwds,
                    &included,
                    &excluded,
                ],
            )
            .await?;
        let next_cursor = (items.len() > filter.limit).then(|| {
            items.truncate(filter.limit);
            items
                .last()
                .map(|last| ListCursor::after(last, ListSort::Created).encode())
        });
        Ok(ConversationsPage {
            items,
            next_cursor: next_cursor.flatten(),
        })
    }

    async fn append_name(&self, id: ConversationId, name: String) -> Result<bool, CoreError> {
        let digest = Digest::of(
            &[super::super::RolloutItem::ThreadName(name.clone())],
            self.describe(),
        )?;
        let key = id.to_string();
        let mut client = self
            .shared
            .client()
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        let failed =
            |err: tokio_postgres::Error| store_error(&self.shared, self.shared.named(err.into()));
        // A name is not part of a turn: it is appended under the row's lock (which keeps the
        // items numbered in order) without the writer's epoch, from any server.
        let tx = client.transaction().await.map_err(failed)?;
        let Some(row) = tx
            .query_opt(
                "UPDATE keel_threads SET name = $2, item_count = item_count + 1, updated_at = $3
                 WHERE id = $1 RETURNING item_count - 1",
                &[&key, &name, &digest.timestamp],
            )
            .await
            .map_err(failed)?
        else {
            return Ok(false);
        };
        let seq: i64 = row.try_get(0).map_err(failed)?;
        tx.execute(
            "INSERT INTO keel_thread_items (thread_id, seq, line) VALUES ($1, $2, $3)",
            &[&key, &seq, &digest.lines[0]],
        )
        .await
        .map_err(failed)?;
        let announce = payload(id, ThreadChangeKind::Renamed, &self.instance);
        tx.execute(ANNOUNCE, &[&announce]).await.map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(true)
    }

    async fn search_page(&self, search: &ThreadSearch) -> Result<SearchPage, ThreadCatalogError> {
        let term = search.term.to_lowercase();
        let after = match &search.cursor {
            Some(cursor) => Some(
                ListCursor::decode(cursor, ListSort::Created)
                    .map_err(|_| ThreadCatalogError::UnknownCursor(cursor.clone()))?
                    .file_name,
            ),
            None => None,
        };
        let pattern = contains_pattern(&term);
        let limit = i64::try_from(search.limit.saturating_add(1)).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS},
                 (SELECT i.message FROM keel_thread_items i
                  WHERE i.thread_id = t.id AND i.message IS NOT NULL
                    AND lower(i.message) LIKE $2 ORDER BY i.seq LIMIT 1)
             FROM keel_threads t
             WHERE t.archived = $1 AND t.has_turns
               AND ($3::text IS NULL OR t.list_key < $3)
               AND (lower(t.name) LIKE $2 OR EXISTS (
                   SELECT 1 FROM keel_thread_items i
                   WHERE i.thread_id = t.id AND i.message IS NOT NULL
                     AND lower(i.message) LIKE $2))
             ORDER BY t.list_key DESC LIMIT $4"
        );
        let rows = self
            .shared
            .query(&sql, &[&search.archived, &pattern, &after, &limit])
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        let mut items: Vec<SearchHit> = rows
            .iter()
            .filter_map(|row| {
                let summary = summary(row)?;
                let message: Option<String> = row.try_get(11).ok().flatten();
                let snippet = message
                    .and_then(|message| snippet(&message, &term))
                    .or_else(|| summary.name.clone())?;
                Some(SearchHit { summary, snippet })
            })
            .collect();
        let next_cursor = (items.len() > search.limit).then(|| {
            items.truncate(search.limit);
            items
                .last()
                .map(|hit| ListCursor::after(&hit.summary, ListSort::Created).encode())
        });
        Ok(SearchPage {
            items,
            next_cursor: next_cursor.flatten(),
        })
    }
}

impl ThreadCatalog for PostgresThreadStore {
    fn find(
        &self,
        id: ConversationId,
        archived: bool,
    ) -> BoxFuture<'_, Result<Option<ConversationSummary>, ThreadCatalogError>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM keel_threads t WHERE t.id = $1 AND t.archived = $2"
            );
            Ok(self
                .summaries(&sql, &[&id.to_string(), &archived])
                .await?
                .pop())
        })
    }

    fn list(
        &self,
        filter: ThreadFilter,
    ) -> BoxFuture<'_, Result<ConversationsPage, ThreadCatalogError>> {
        Box::pin(async move {
            if in_sql(&filter) {
                return Ok(self.sql_list(&filter).await?);
            }
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM keel_threads t WHERE t.archived = $1 AND t.has_turns"
            );
            let all = self.summaries(&sql, &[&filter.archived]).await?;
            Ok(filter.page(all))
        })
    }

    fn search(
        &self,
        search: ThreadSearch,
    ) -> BoxFuture<'_, Result<SearchPage, ThreadCatalogError>> {
        Box::pin(async move { self.search_page(&search).await })
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<ThreadChange>> {
        Some(self.changes.subscribe())
    }

    fn notes(&self) -> Option<&dyn super::super::ThreadNotes> {
        Some(self)
    }

    fn running_elsewhere(
        &self,
        ids: Vec<ConversationId>,
    ) -> BoxFuture<'_, Result<HashSet<ConversationId>, ThreadCatalogError>> {
        Box::pin(async move {
            if ids.is_empty() {
                return Ok(HashSet::new());
            }
            let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
            let rows = self
                .shared
                .query(RUNNING_ELSEWHERE, &[&ids, &self.instance])
                .await
                .map_err(|err| store_error(&self.shared, err))?;
            Ok(rows
                .iter()
                .filter_map(|row| row.try_get::<_, String>(0).ok()?.parse().ok())
                .collect())
        })
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), ThreadCatalogError>> {
        Box::pin(async move {
            self.shared
                .query("SELECT 1", &[])
                .await
                .map_err(|err| store_error(&self.shared, err))?;
            Ok(())
        })
    }

    fn rename(
        &self,
        id: ConversationId,
        name: String,
    ) -> BoxFuture<'_, Result<bool, ThreadCatalogError>> {
        Box::pin(async move { Ok(self.append_name(id, name).await?) })
    }

    fn archive(&self, id: ConversationId) -> BoxFuture<'_, Result<bool, ThreadCatalogError>> {
        Box::pin(async move {
            const ARCHIVE: &str = concat!(
                "WITH changed AS (
                     UPDATE keel_threads SET archived = true
                     WHERE id = $1 AND NOT archived RETURNING id)
                 SELECT pg_notify('",
                channel!(),
                "', $2) FROM changed"
            );
            Ok(self
                .change_announced(ARCHIVE, id, ThreadChangeKind::Archived)
                .await?)
        })
    }

    fn unarchive(
        &self,
        id: ConversationId,
    ) -> BoxFuture<'_, Result<Option<ConversationSummary>, ThreadCatalogError>> {
        Box::pin(async move {
            let announce = payload(id, ThreadChangeKind::Unarchived, &self.instance);
            let sql = format!(
                "WITH changed AS (
                     UPDATE keel_threads t SET archived = false WHERE t.id = $1 AND t.archived
                     RETURNING {SUMMARY_COLUMNS})
                 SELECT changed.*, pg_notify('{CHANNEL}', $2) FROM changed"
            );
            Ok(self
                .summaries(&sql, &[&id.to_string(), &announce])
                .await?
                .pop())
        })
    }

    fn delete(&self, id: ConversationId) -> BoxFuture<'_, Result<bool, ThreadCatalogError>> {
        Box::pin(async move {
            const DELETE: &str = concat!(
                "WITH changed AS (DELETE FROM keel_threads WHERE id = $1 RETURNING id)
                 SELECT pg_notify('",
                channel!(),
                "', $2) FROM changed"
            );
            Ok(self
                .change_announced(DELETE, id, ThreadChangeKind::Deleted)
                .await?)
        })
    }
}
