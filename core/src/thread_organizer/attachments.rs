//! Attachments: records a thread owns, unique per thread by type and identity key, with the
//! client's payload kept verbatim.

use keel_protocol::ConversationId;
use keel_protocol::app_server::{ThreadAttachment, ThreadAttachmentAddOutcome};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{ThreadOrganizer, ThreadOrganizerError, now};

/// One page of a thread's attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentPage {
    /// Oldest first.
    pub items: Vec<ThreadAttachment>,
    /// Pass back for the next page; `None` at the end.
    pub next_cursor: Option<String>,
}

const COLUMNS: &str = "id, attachment_type, identity_key, payload, created_at";

type Row = (String, String, String, String, i64);

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
    ))
}

impl ThreadOrganizer {
    /// Adds an attachment to `thread`; one it already has (same type and key) is returned
    /// unchanged instead. Blocking.
    pub fn add_attachment(
        &self,
        thread: ConversationId,
        attachment_type: &str,
        identity_key: &str,
        payload: serde_json::Value,
    ) -> Result<(ThreadAttachmentAddOutcome, ThreadAttachment), ThreadOrganizerError> {
        let thread = thread.to_string();
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        let existing = tx
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM attachments
                     WHERE thread_id = ?1 AND attachment_type = ?2 AND identity_key = ?3"
                ),
                params![thread, attachment_type, identity_key],
                read_row,
            )
            .optional()
            .map_err(|err| self.fail(err))?;
        if let Some(row) = existing {
            return Ok((ThreadAttachmentAddOutcome::Existing, self.decode(row)?));
        }
        let attachment = ThreadAttachment {
            id: uuid::Uuid::now_v7().to_string(),
            attachment_type: attachment_type.to_string(),
            identity_key: identity_key.to_string(),
            payload,
            created_at: now(),
        };
        let payload =
            serde_json::to_string(&attachment.payload).map_err(|err| self.unreadable(err))?;
        tx.execute(
            "INSERT INTO attachments(id, thread_id, attachment_type, identity_key, payload,
                                     created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                attachment.id,
                thread,
                attachment.attachment_type,
                attachment.identity_key,
                payload,
                attachment.created_at
            ],
        )
        .map_err(|err| self.fail(err))?;
        tx.commit().map_err(|err| self.fail(err))?;
        Ok((ThreadAttachmentAddOutcome::Created, attachment))
    }

    /// `thread`'s attachments, oldest first, `limit` after `cursor` (a previous page's
    /// `next_cursor`). Blocking.
    pub fn attachments(
        &self,
        thread: ConversationId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<AttachmentPage, ThreadOrganizerError> {
        let thread = thread.to_string();
        let after = cursor
            .map(|cursor| parse_cursor(cursor, &thread))
            .transpose()?;
        let (after_at, after_id) = after.unzip();
        let db = self.lock();
        let mut statement = db
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM attachments
                 WHERE thread_id = ?1 AND (?2 IS NULL OR (created_at, id) > (?2, ?3))
                 ORDER BY created_at, id LIMIT ?4"
            ))
            .map_err(|err| self.fail(err))?;
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = statement
            .query_map(params![thread, after_at, after_id, fetch], read_row)
            .map_err(|err| self.fail(err))?;
        let mut items = Vec::new();
        for row in rows {
            items.push(self.decode(row.map_err(|err| self.fail(err))?)?);
        }
        let next_cursor = (items.len() > limit).then(|| {
            items.truncate(limit);
            items
                .last()
                .map(|last| format!("{thread}|{}|{}", last.created_at, last.id))
        });
        Ok(AttachmentPage {
            items,
            next_cursor: next_cursor.flatten(),
        })
    }

    /// Removes `thread`'s attachment of this type and key; its id, if it had one. Blocking.
    pub fn remove_attachment(
        &self,
        thread: ConversationId,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Option<String>, ThreadOrganizerError> {
        let db = self.lock();
        db.query_row(
            "DELETE FROM attachments
             WHERE thread_id = ?1 AND attachment_type = ?2 AND identity_key = ?3
             RETURNING id",
            params![thread.to_string(), attachment_type, identity_key],
            |row| row.get(0),
        )
        .optional()
        .map_err(|err| self.fail(err))
    }

    /// The threads that own an attachment of this type and key, in the order they added it.
    /// Blocking.
    pub fn attachment_owners(
        &self,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Vec<ConversationId>, ThreadOrganizerError> {
        let db = self.lock();
        let mut statement = db
            .prepare_cached(
                "SELECT thread_id FROM attachments
                 WHERE attachment_type = ?1 AND identity_key = ?2 ORDER BY created_at, id",
            )
            .map_err(|err| self.fail(err))?;
        let rows = statement
            .query_map(params![attachment_type, identity_key], |row| {
                row.get::<_, String>(0)
            })
            .map_err(|err| self.fail(err))?;
        let mut found = Vec::new();
        for row in rows {
            if let Ok(id) = row.map_err(|err| self.fail(err))?.parse() {
                found.push(id);
            }
        }
        Ok(found)
    }

    fn decode(&self, row: Row) -> Result<ThreadAttachment, ThreadOrganizerError> {
        let (id, attachment_type, identity_key, payload, created_at) = row;
        Ok(ThreadAttachment {
            id,
            attachment_type,
            identity_key,
            payload: serde_json::from_str(&payload).map_err(|err| self.unreadable(err))?,
            created_at,
        })
    }
}

/// A page cursor: `THREAD|CREATED_AT|ID`, for this thread.
fn parse_cursor(cursor: &str, thread: &str) -> Result<(i64, String), ThreadOrganizerError> {
    let mut parts = cursor.splitn(3, '|');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(owner), Some(at), Some(id)) if owner == thread => at
            .parse()
            .map(|at| (at, id.to_string()))
            .map_err(|_| ThreadOrganizerError::InvalidCursor),
        _ => Err(ThreadOrganizerError::InvalidCursor),
    }
}
