//! The server's way to the thread organizer (sections, attachments, git metadata): opened
//! on first use, worked on off the async threads, and shown on every thread object a client
//! receives.

use std::sync::Arc;

use keel_core::{ThreadOrganizer, ThreadOrganizerError};
use keel_protocol::app_server::Thread;

use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

impl AppState {
    /// Runs `work` on the home's organizer (opened on first use) on a blocking thread.
    pub(crate) async fn organize<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&ThreadOrganizer) -> std::result::Result<T, ThreadOrganizerError>
            + Send
            + 'static,
    {
        let organizer = self
            .thread_organizer
            .get_or_try_init(|| async {
                let home = self.keel_home().to_path_buf();
                tokio::task::spawn_blocking(move || ThreadOrganizer::open(&home))
                    .await
                    .map_err(|err| AppServerError::Internal(format!("thread organizer: {err}")))?
                    .map(Arc::new)
                    .map_err(AppServerError::from)
            })
            .await?
            .clone();
        tokio::task::spawn_blocking(move || work(&organizer))
            .await
            .map_err(|err| AppServerError::Internal(format!("thread organizer: {err}")))?
            .map_err(AppServerError::from)
    }

    /// Fills in what the organizer keeps of `thread`: its section and git metadata. A store
    /// that cannot be read leaves the thread as it is (and says so in the log).
    pub(crate) async fn decorate(&self, thread: &mut Thread) {
        let Ok(id) = parse_thread_id(&thread.id) else {
            return;
        };
        // Reading a thread never creates the store: without one, nothing was organised.
        if self.thread_organizer.get().is_none()
            && !self
                .keel_home()
                .join(keel_core::THREAD_ORGANIZER_FILE)
                .exists()
        {
            return;
        }
        match self
            .organize(move |organizer| Ok((organizer.membership(id)?, organizer.git_info(id)?)))
            .await
        {
            Ok((membership, git_info)) => {
                if let Some(membership) = membership {
                    thread.section = Some(membership.section);
                    thread.section_entered_at = Some(membership.entered_at);
                }
                if git_info.is_some() {
                    thread.git_info = git_info;
                }
            }
            Err(err) => tracing::warn!(thread = %id, "thread organizer: {err}"),
        }
    }
}
