//! Notes beside each thread, in the shared database: a conditional write changes a note
//! only when it still reads what the writer saw, so servers never overwrite each other.

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::super::{NoteSwap, ThreadCatalogError, ThreadNotes};
use super::PostgresThreadStore;
use super::failure::store_error;

impl PostgresThreadStore {
    async fn read_note(
        &self,
        id: ConversationId,
        key: &str,
    ) -> Result<Option<String>, ThreadCatalogError> {
        let rows = self
            .shared
            .query(
                "SELECT value FROM keel_thread_notes WHERE thread_id = $1 AND key = $2",
                &[&id.to_string(), &key],
            )
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        Ok(rows.first().and_then(|row| row.try_get(0).ok()))
    }

    async fn write_note(
        &self,
        id: ConversationId,
        key: &str,
        expected: Option<String>,
        value: Option<String>,
    ) -> Result<NoteSwap, ThreadCatalogError> {
        let thread = id.to_string();
        if expected.is_none() && value.is_none() {
            return Ok(match self.read_note(id, key).await? {
                None => NoteSwap::Done,
                now => NoteSwap::Changed(now),
            });
        }
        let sql = match (&expected, &value) {
            // Only for a thread the store holds: the insert selects it.
            (None, _) => {
                "INSERT INTO keel_thread_notes (thread_id, key, value)
                 SELECT id, $2, $4 FROM keel_threads WHERE id = $1 AND $3::text IS NULL
                 ON CONFLICT (thread_id, key) DO NOTHING"
            }
            (Some(_), Some(_)) => {
                "UPDATE keel_thread_notes SET value = $4
                 WHERE thread_id = $1 AND key = $2 AND value = $3"
            }
            (Some(_), None) => {
                "DELETE FROM keel_thread_notes
                 WHERE thread_id = $1 AND key = $2 AND value = $3 AND $4::text IS NULL"
            }
        };
        let changed = self
            .shared
            .execute(sql, &[&thread, &key, &expected, &value])
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        if changed > 0 {
            return Ok(NoteSwap::Done);
        }
        Ok(NoteSwap::Changed(self.read_note(id, key).await?))
    }
}

impl ThreadNotes for PostgresThreadStore {
    fn note(
        &self,
        id: ConversationId,
        key: &'static str,
    ) -> BoxFuture<'_, Result<Option<String>, ThreadCatalogError>> {
        Box::pin(self.read_note(id, key))
    }

    fn swap_note(
        &self,
        id: ConversationId,
        key: &'static str,
        expected: Option<String>,
        value: Option<String>,
    ) -> BoxFuture<'_, Result<NoteSwap, ThreadCatalogError>> {
        Box::pin(self.write_note(id, key, expected, value))
    }
}
