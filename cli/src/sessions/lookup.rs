//! Finding a recorded session by what a user types: its id, or its thread name.

use keel_app_server::AppServerClient;
use keel_protocol::app_server::{ThreadListParams, ThreadSourceKind, client_request};

use crate::failure::usage;

/// Threads looked at per page when a thread is named rather than given by id.
const NAME_PAGE: u32 = 100;

/// The id `session` stands for: itself when it is a UUID (ids win, as in Codex), else the
/// newest thread named exactly `session` (among archived threads when `archived`).
pub async fn thread_id<C: AppServerClient>(
    client: &C,
    session: &str,
    archived: bool,
) -> anyhow::Result<String> {
    if uuid::Uuid::parse_str(session).is_ok() {
        return Ok(session.to_string());
    }
    match find_by_name(client, session, archived).await? {
        Some(id) => Ok(id),
        None => Err(usage(format!(
            "no recorded {}session has the id or thread name `{session}`",
            if archived { "archived " } else { "" }
        ))),
    }
}

/// The threads Keel's own commands (`resume --last`, `sessions`, `apply`, lookups by name)
/// pick from: every thread a person or a program started, not the agents those spawned.
pub(crate) fn top_level_kinds() -> Option<Vec<ThreadSourceKind>> {
    Some(vec![
        ThreadSourceKind::Cli,
        ThreadSourceKind::Vscode,
        ThreadSourceKind::Exec,
        ThreadSourceKind::AppServer,
        ThreadSourceKind::Unknown,
    ])
}

/// The id of the newest thread named exactly `name`, if any.
pub async fn find_by_name<C: AppServerClient>(
    client: &C,
    name: &str,
    archived: bool,
) -> anyhow::Result<Option<String>> {
    let mut cursor = None;
    loop {
        let page = client
            .request::<client_request::ThreadList>(ThreadListParams {
                cursor,
                limit: Some(NAME_PAGE),
                search_term: Some(name.to_string()),
                archived: archived.then_some(true),
                source_kinds: top_level_kinds(),
                ..ThreadListParams::default()
            })
            .await?;
        if let Some(thread) = page
            .data
            .iter()
            .find(|thread| thread.name.as_deref() == Some(name))
        {
            return Ok(Some(thread.id.clone()));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(None),
        }
    }
}
