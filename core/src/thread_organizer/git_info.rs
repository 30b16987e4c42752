//! Git metadata a client set for a thread, merged field by field over what was known.

use keel_protocol::ConversationId;
use keel_protocol::app_server::{GitInfo, ThreadMetadataGitInfoUpdate};
use rusqlite::{OptionalExtension, params};

use super::{ThreadOrganizer, ThreadOrganizerError};

impl ThreadOrganizer {
    /// The git metadata kept for `thread`. Blocking.
    pub fn git_info(
        &self,
        thread: ConversationId,
    ) -> Result<Option<GitInfo>, ThreadOrganizerError> {
        self.lock()
            .query_row(
                "SELECT sha, branch, origin_url FROM git_info WHERE thread_id = ?1",
                [thread.to_string()],
                |row| {
                    Ok(GitInfo {
                        sha: row.get(0)?,
                        branch: row.get(1)?,
                        origin_url: row.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(|err| self.fail(err))
    }

    /// Applies `update` over what is kept for `thread` (or over `known`, the facts found
    /// otherwise, when nothing is kept yet) and keeps the result. Blocking.
    pub fn update_git_info(
        &self,
        thread: ConversationId,
        update: &ThreadMetadataGitInfoUpdate,
        known: Option<GitInfo>,
    ) -> Result<GitInfo, ThreadOrganizerError> {
        let mut info = self.git_info(thread)?.or(known).unwrap_or_default();
        for (field, change) in [
            (&mut info.sha, &update.sha),
            (&mut info.branch, &update.branch),
            (&mut info.origin_url, &update.origin_url),
        ] {
            if let Some(value) = change {
                field.clone_from(value);
            }
        }
        self.lock()
            .execute(
                "INSERT INTO git_info(thread_id, sha, branch, origin_url) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(thread_id) DO UPDATE
                 SET sha = excluded.sha, branch = excluded.branch,
                     origin_url = excluded.origin_url",
                params![thread.to_string(), info.sha, info.branch, info.origin_url],
            )
            .map_err(|err| self.fail(err))?;
        Ok(info)
    }
}
