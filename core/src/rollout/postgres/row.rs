//! A thread's row read back as the summary listings show.

use std::path::PathBuf;

use keel_protocol::app_server::{SessionSource, ThreadSourceKind};
use tokio_postgres::Row;

use super::super::ConversationSummary;

/// The columns [`summary`] reads, in order (`t.` is the threads table).
pub(super) const SUMMARY_COLUMNS: &str = "t.id, t.list_key, t.created_at, t.cwd, t.preview, \
     t.name, t.updated_at, t.has_turns, t.model, t.source_json, t.model_provider";

/// The summary in `row` (selected with [`SUMMARY_COLUMNS`] first); `None` for a row this
/// Keel cannot read.
pub(super) fn summary(row: &Row) -> Option<ConversationSummary> {
    let id: String = row.try_get(0).ok()?;
    let source: String = row.try_get(9).ok()?;
    Some(ConversationSummary {
        id: id.parse().ok()?,
        path: PathBuf::from(row.try_get::<_, String>(1).ok()?),
        created_at: row.try_get(2).ok()?,
        cwd: PathBuf::from(row.try_get::<_, String>(3).ok()?),
        preview: row.try_get(4).ok()?,
        name: row.try_get(5).ok()?,
        updated_at: row.try_get(6).ok()?,
        has_turns: row.try_get(7).ok()?,
        model: row.try_get(8).ok()?,
        source: serde_json::from_str::<SessionSource>(&source).ok()?,
        model_provider: row.try_get(10).ok()?,
    })
}

/// The name a source kind is filtered by (as clients send it).
pub(super) fn kind_name(kind: ThreadSourceKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}
