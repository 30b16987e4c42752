//! `thread/metadata/update`: git facts a client sets for a thread, merged over what was kept
//! and shown on the thread from then on (not written into its rollout).

use keel_protocol::app_server::{ThreadMetadataUpdateParams, ThreadMetadataUpdateResponse};

use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

async fn update(
    state: &AppState,
    params: ThreadMetadataUpdateParams,
) -> Result<ThreadMetadataUpdateResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    let Some(git_info) = params.git_info else {
        return Err(AppServerError::InvalidRequest(
            "thread metadata update must include at least one field".into(),
        ));
    };
    if git_info.is_empty() {
        return Err(AppServerError::InvalidRequest(
            "gitInfo must include at least one field".into(),
        ));
    }
    let mut thread = super::threads::thread_by_id(state, id, false).await?.0;
    let known = thread.git_info.clone();
    thread.git_info = Some(
        state
            .organize(move |organizer| organizer.update_git_info(id, &git_info, known))
            .await?,
    );
    Ok(ThreadMetadataUpdateResponse { thread })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadMetadataUpdate, |ctx, p| Reply::now(
    &update(ctx.state, p).await?
));
