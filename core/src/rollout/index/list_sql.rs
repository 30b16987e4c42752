//! A [`ThreadFilter`] as one SQL query over the index, with its parameters.

use rusqlite::types::Value;

use crate::rollout::thread_filter::{ListSort, ThreadFilter};

/// The query behind one page of `thread/list` (one row more than the page, to tell whether
/// another follows).
pub(super) struct ListSql {
    pub sql: String,
    pub params: Vec<Value>,
}

impl ListSql {
    /// The query selecting `columns` of the threads under `root` that pass `filter`.
    pub fn of(filter: &ThreadFilter, columns: &str, root: &str) -> Self {
        let mut query = Self {
            sql: format!("SELECT {columns} FROM threads t WHERE t.has_turns = 1"),
            params: Vec::new(),
        };
        // With a short list of candidates (ids, a parent, an ancestor), they drive the query
        // through their indexes and the page is sorted after; otherwise the walk follows the
        // order's index. `+` keeps SQLite from using an index for a term.
        let narrow =
            filter.included.is_some() || filter.parent.is_some() || filter.ancestor.is_some();
        let walk = if narrow { "+" } else { "" };
        query.and(
            &format!("{walk}t.root = ?"),
            [Value::from(root.to_string())],
        );
        if let Some(cursor) = &filter.cursor {
            let op = match (filter.ascending, cursor.inclusive) {
                (true, false) => ">",
                (true, true) => ">=",
                (false, false) => "<",
                (false, true) => "<=",
            };
            let name = Value::from(cursor.file_name.clone());
            match &cursor.updated_at {
                Some(updated_at) if filter.sort == ListSort::Updated => {
                    let updated = Value::from(updated_at.clone());
                    query.and(
                        &format!("(t.updated_at, t.file_name) {op} (?, ?)"),
                        [updated, name],
                    );
                }
                _ => query.and(&format!("t.file_name {op} ?"), [name]),
            }
        }
        if let Some(cwds) = &filter.cwds {
            let cwds = cwds.iter().map(|cwd| cwd.to_string_lossy().into_owned());
            query.and_in("t.cwd", cwds);
        }
        if let Some(text) = &filter.text {
            let text = Value::from(text.to_ascii_lowercase());
            query.and(
                "(instr(lower(t.preview), ?) > 0 OR instr(lower(coalesce(t.name, '')), ?) > 0)",
                [text.clone(), text],
            );
        }
        if !filter.source_kinds.is_empty() {
            let kinds = filter
                .source_kinds
                .iter()
                .map(|kind| kind.as_str().to_string());
            query.and_in("t.source_kind", kinds);
        }
        if !filter.model_providers.is_empty() {
            query.and_in("t.model_provider", filter.model_providers.iter().cloned());
        }
        if let Some(ids) = &filter.included {
            query.and_in("t.id", ids.iter().map(ToString::to_string));
        }
        if !filter.excluded.is_empty() {
            let ids: Vec<String> = filter.excluded.iter().map(ToString::to_string).collect();
            query
                .sql
                .push_str(" AND t.id NOT IN (SELECT value FROM json_each(?))");
            query.params.push(Value::from(json_list(ids)));
        }
        if let Some(parent) = filter.parent {
            query.and("t.parent_id = ?", [Value::from(parent.to_string())]);
        }
        if let Some(ancestor) = filter.ancestor {
            query.and(
                "t.id IN (WITH RECURSIVE below(id) AS (
                     SELECT id FROM threads WHERE parent_id = ?1
                     UNION SELECT c.id FROM threads c JOIN below ON c.parent_id = below.id)
                   SELECT id FROM below WHERE id <> ?1)"
                    .replace("?1", "?")
                    .as_str(),
                [
                    Value::from(ancestor.to_string()),
                    Value::from(ancestor.to_string()),
                ],
            );
        }
        let direction = if filter.ascending { "ASC" } else { "DESC" };
        match filter.sort {
            ListSort::Created => query
                .sql
                .push_str(&format!(" ORDER BY {walk}t.file_name {direction}")),
            ListSort::Updated => query.sql.push_str(&format!(
                " ORDER BY {walk}t.updated_at {direction}, {walk}t.file_name {direction}"
            )),
        }
        query.sql.push_str(" LIMIT ?");
        let limit = i64::try_from(filter.limit.saturating_add(1)).unwrap_or(i64::MAX);
        query.params.push(Value::from(limit));
        query
    }

    fn and<const N: usize>(&mut self, condition: &str, params: [Value; N]) {
        self.sql.push_str(" AND ");
        self.sql.push_str(condition);
        self.params.extend(params);
    }

    /// `column` is one of `values` (none: nothing matches), as one JSON parameter so the
    /// statement's text does not depend on how many there are.
    fn and_in(&mut self, column: &str, values: impl IntoIterator<Item = String>) {
        let values: Vec<String> = values.into_iter().collect();
        self.and(
            &format!("{column} IN (SELECT value FROM json_each(?))"),
            [Value::from(json_list(values))],
        );
    }
}

fn json_list(values: Vec<String>) -> String {
    serde_json::Value::from(values).to_string()
}
