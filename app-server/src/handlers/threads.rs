//! `thread/*` methods.

use std::path::PathBuf;
use std::sync::Arc;

use keel_core::{ConversationSummary, read_transcript, summarise};
use keel_protocol::ConversationId;
use keel_protocol::app_server::{
    EmptyResponse, ServerNotification, SessionSource, SortDirection, Thread, ThreadForkParams,
    ThreadGoalGetParams, ThreadGoalGetResponse, ThreadIdNotification, ThreadIdParams,
    ThreadItemEntry, ThreadItemsListAnchor, ThreadItemsListCursor, ThreadItemsListParams,
    ThreadItemsListResponse, ThreadLoadedListParams, ThreadLoadedListResponse,
    ThreadNameUpdatedNotification, ThreadReadParams, ThreadReadResponse, ThreadResponse,
    ThreadResumeParams, ThreadRollbackParams, ThreadSetNameParams, ThreadStartParams,
    ThreadStartResponse, ThreadStartedNotification, ThreadStatus, ThreadStatusChangedNotification,
    ThreadTurnsListParams, ThreadTurnsListResponse, ThreadUnsubscribeResponse,
    ThreadUnsubscribeStatus, TurnItemsView,
};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::{AppState, RecordedMeta, parse_thread_id};
use crate::threads::{LoadedThread, ThreadMeta, TurnsBuilder, thread_object, turns_from_events};

fn unix_seconds(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339).map_or(0, |t| t.timestamp())
}

fn not_found(id: ConversationId) -> AppServerError {
    AppServerError::InvalidRequest(format!("no thread with id {id}"))
}

/// Sends `thread/started` to the connection after the response.
fn started_reply(
    response: ThreadStartResponse,
    outgoing: &Arc<Outgoing>,
    thread: &Arc<LoadedThread>,
) -> Result<Reply> {
    let (reply, _turns) = started_reply_keeping_turns(response, outgoing, thread)?;
    Ok(reply)
}

/// The answer to a start, resume or fork (serialised now, turns included), followed by
/// `thread/started` for the same thread without its turns (the answer carries them; a long
/// thread's turns are not sent twice); the thread's own events follow. Returns the turns, for
/// the loaded thread to keep.
fn started_reply_keeping_turns(
    mut response: ThreadStartResponse,
    outgoing: &Arc<Outgoing>,
    thread: &Arc<LoadedThread>,
) -> Result<(Reply, Vec<keel_protocol::app_server::Turn>)> {
    let outgoing = outgoing.clone();
    let thread = thread.clone();
    let mut reply = Reply::now(&response)?;
    let turns = std::mem::take(&mut response.thread.turns);
    // A resumed or forked thread's usage is told again (as Codex does): clients show the
    // context left before the next turn reports it.
    let usage = restored_usage(&response.thread.id, &turns);
    let notification = ServerNotification::ThreadStarted(ThreadStartedNotification {
        thread: response.thread,
    });
    reply.after = Some(Box::pin(async move {
        outgoing.notify(notification).await;
        if let Some(usage) = usage {
            outgoing.notify(usage).await;
        }
        thread.answered();
    }));
    Ok((reply, turns))
}

/// The token usage the latest turn that reported any ended with, as its notification.
fn restored_usage(
    thread_id: &str,
    turns: &[keel_protocol::app_server::Turn],
) -> Option<ServerNotification> {
    let turn = turns.iter().rev().find(|turn| turn.token_usage.is_some())?;
    Some(ServerNotification::ThreadTokenUsageUpdated(
        keel_protocol::app_server::ThreadTokenUsageUpdatedNotification {
            thread_id: thread_id.to_string(),
            turn_id: turn.id.clone(),
            token_usage: turn.token_usage.clone()?,
        },
    ))
}

/// Loads `new` as a thread and answers with it and `turns`, which the answer is serialised
/// from before the thread keeps them: they are never copied.
async fn load_and_answer(
    state: &AppState,
    new: keel_core::NewConversation,
    config: &keel_core::Config,
    file_meta: Option<RecordedMeta>,
    turns: Vec<keel_protocol::app_server::Turn>,
    permission_profile: Option<String>,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let thread = state
        .load(new, config, false, file_meta, Vec::new(), outgoing.clone())
        .await;
    thread.set_permission_profile(permission_profile);
    let mut response = start_response(&thread, false);
    state.decorate(&mut response.thread).await;
    response.thread.turns = turns;
    let (reply, turns) = started_reply_keeping_turns(response, outgoing, &thread)?;
    thread.set_turns(turns);
    Ok(reply)
}

fn start_response(thread: &LoadedThread, include_turns: bool) -> ThreadStartResponse {
    ThreadStartResponse {
        thread: thread.to_thread(include_turns),
        settings: thread.settings(),
    }
}

/// `thread/start`.
pub(crate) async fn start(
    state: &AppState,
    params: ThreadStartParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let mut overrides = params.overrides;
    AppState::apply_permissions("thread/start", &mut overrides)?;
    let permissions = overrides.permissions.clone();
    let mut config = match &params.environments {
        Some(environments) => {
            super::environments::resolve_thread_config(state, environments, overrides)?
        }
        None => state.resolve_config(&overrides)?,
    };
    config.dynamic_tools = params.dynamic_tools.unwrap_or_default();
    let ephemeral = params.ephemeral.unwrap_or(false);
    let new = if ephemeral {
        state
            .manager
            .new_ephemeral_conversation(config.clone())
            .await?
    } else {
        state.manager.new_conversation(config.clone()).await?
    };
    let thread = state
        .load(new, &config, ephemeral, None, Vec::new(), outgoing.clone())
        .await;
    thread.set_permission_profile(permissions);
    started_reply(start_response(&thread, false), outgoing, &thread)
}

/// The rollout file of a recorded thread (live sessions first, then the archive).
async fn rollout_path(state: &AppState, id: ConversationId) -> Result<Option<PathBuf>> {
    if let Some(thread) = state.loaded(id).await {
        return Ok(thread.meta().path);
    }
    if let Some(path) = state.find_rollout(id, false).await? {
        return Ok(Some(path));
    }
    state.find_rollout(id, true).await
}

/// `thread/resume`.
pub(crate) async fn resume(
    state: &AppState,
    params: ThreadResumeParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    // Held until the thread is loaded: a second client resuming it meanwhile joins it.
    let _resuming = state.resumes.hold(id).await;
    if let Some(thread) = state.loaded(id).await {
        // The thread's own tools outlive the client that defined them while the thread
        // stays loaded: when that client is gone, the next one to resume runs them.
        thread.adopt_tool_client(outgoing);
        thread.subscribe(outgoing.clone());
        let mut response = start_response(&thread, true);
        state.decorate(&mut response.thread).await;
        let (mut reply, _turns) = started_reply_keeping_turns(response, outgoing, &thread)?;
        let started = reply.after.take();
        let outgoing = outgoing.clone();
        // Approvals still waiting go to the resuming client too, after the answer.
        reply.after = Some(Box::pin(async move {
            if let Some(started) = started {
                started.await;
            }
            thread.resend_approvals(&outgoing).await;
        }));
        return Ok(reply);
    }
    // Files are read by path; a shared store by id.
    let path = match state.shares_threads() {
        true => None,
        false => Some(
            state
                .find_rollout(id, false)
                .await?
                .ok_or_else(|| not_found(id))?,
        ),
    };
    let summary = match &path {
        Some(path) => summarise(path).await,
        None => Some(
            state
                .catalog
                .find(id, false)
                .await?
                .ok_or_else(|| not_found(id))?,
        ),
    };
    let mut overrides = params.overrides;
    AppState::apply_permissions("thread/resume", &mut overrides)?;
    if overrides.cwd.is_none() {
        overrides.cwd = summary.as_ref().map(|s| s.cwd.clone());
    }
    let config = state.resolve_config(&overrides)?;
    let (new, turns) = match path {
        Some(path) => {
            // The turns are built while the file is read, one entry at a time, so a long
            // thread's transcript is never held as a whole (an open last turn ends as
            // interrupted).
            let builder = TurnsBuilder::new(&id.to_string());
            let (new, builder) = state
                .manager
                .resume_conversation_folding(config.clone(), &path, builder, TurnsBuilder::push)
                .await?;
            (new, builder.finish())
        }
        None => {
            // The store's record, with the repairs resume made (a turn left open by a
            // server that died is recorded as interrupted).
            let mut new = state
                .manager
                .resume_conversation_by_id(config.clone(), id)
                .await?;
            let events = new
                .session_configured
                .initial_messages
                .take()
                .unwrap_or_default();
            (new, turns_from_events(&id.to_string(), events))
        }
    };
    let file_meta = summary.map(|s| RecordedMeta {
        created_at: unix_seconds(&s.created_at),
        preview: s.preview,
        name: s.name,
        source: s.source,
    });
    let goal = new.conversation.goal();
    let mut reply = load_and_answer(
        state,
        new,
        &config,
        file_meta,
        turns,
        overrides.permissions,
        outgoing,
    )
    .await?;
    // The goal the thread had is announced after the answer (it continues once the next
    // turn ends, or when a client sets it active again).
    if let Some(goal) = goal {
        let started = reply.after.take();
        let outgoing = outgoing.clone();
        reply.after = Some(Box::pin(async move {
            if let Some(started) = started {
                started.await;
            }
            outgoing
                .notify(ServerNotification::ThreadGoalUpdated(
                    keel_protocol::app_server::ThreadGoalUpdatedNotification {
                        thread_id: goal.thread_id.clone(),
                        turn_id: None,
                        goal,
                    },
                ))
                .await;
        }));
    }
    Ok(reply)
}

/// `thread/fork`.
pub(crate) async fn fork(
    state: &AppState,
    params: ThreadForkParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    // Files are read by path; a shared store by id.
    let path = match state.shares_threads() {
        true => None,
        false => Some(
            rollout_path(state, id)
                .await?
                .ok_or_else(|| not_found(id))?,
        ),
    };
    let original = match &path {
        Some(path) => summarise(path).await,
        None => Some(
            state
                .recorded_summary(id)
                .await?
                .ok_or_else(|| not_found(id))?,
        ),
    };
    let mut overrides = params.overrides;
    AppState::apply_permissions("thread/fork", &mut overrides)?;
    let config = state.resolve_config(&overrides)?;
    let mut new = match &path {
        Some(path) => {
            state
                .manager
                .fork_conversation_with(config.clone(), path, params.ephemeral)
                .await?
        }
        None => {
            state
                .manager
                .fork_conversation_by_id(config.clone(), id, params.ephemeral)
                .await?
        }
    };
    // A fork of a spawned thread stays under the same parent (as the engine records it).
    let source = match original.as_ref().map(|s| &s.source) {
        Some(source @ SessionSource::SubAgent(_)) => source.clone(),
        _ => state.config.session_source.clone(),
    };
    let preview = original.map(|s| s.preview).unwrap_or_default();
    let now = chrono::Utc::now().timestamp();
    let events = new
        .session_configured
        .initial_messages
        .take()
        .unwrap_or_default();
    // `excludeTurns` (a side conversation): the copy keeps the whole history for the model,
    // but its record starts empty.
    let turns = if params.exclude_turns {
        Vec::new()
    } else {
        turns_from_events(&new.conversation_id.to_string(), events)
    };
    let thread = state
        .load(
            new,
            &config,
            params.ephemeral,
            Some(RecordedMeta {
                preview,
                name: None,
                created_at: now,
                source,
            }),
            Vec::new(),
            outgoing.clone(),
        )
        .await;
    thread.set_permission_profile(overrides.permissions);
    thread.set_forked_from(id.to_string());
    let mut response = start_response(&thread, false);
    state.decorate(&mut response.thread).await;
    response.thread.turns = turns;
    let (reply, turns) = started_reply_keeping_turns(response, outgoing, &thread)?;
    thread.set_turns(turns);
    Ok(reply)
}

/// A thread read from its file, and whether it ever had a turn.
async fn recorded_thread(path: &std::path::Path, include_turns: bool) -> Result<(Thread, bool)> {
    let summary = summarise(path).await.ok_or_else(|| {
        AppServerError::InvalidRequest(format!("{} is not a Keel rollout file", path.display()))
    })?;
    let turns = if include_turns {
        // Streamed: only the turns being built are held, never the whole transcript.
        let builder = TurnsBuilder::new(&summary.id.to_string());
        read_transcript(path, builder, TurnsBuilder::push)
            .await?
            .finish()
    } else {
        Vec::new()
    };
    Ok((
        summary_thread(&summary, ThreadStatus::NotLoaded, turns),
        summary.has_turns,
    ))
}

/// A thread read by id from the shared store, and whether it ever had a turn.
async fn stored_thread(
    state: &AppState,
    id: ConversationId,
    include_turns: bool,
) -> Result<(Thread, bool)> {
    let summary = state
        .recorded_summary(id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let turns = if include_turns {
        let config = state.resolve_config(&Default::default())?;
        let loaded = state
            .manager
            .read_conversation_by_id(&config, id)
            .await?
            .ok_or_else(|| not_found(id))?;
        turns_from_events(&id.to_string(), loaded.events)
    } else {
        Vec::new()
    };
    // Running on another server (its lease held) or merely recorded.
    let status = super::thread_status::statuses(state, vec![id])
        .await
        .pop()
        .unwrap_or(ThreadStatus::NotLoaded);
    Ok((summary_thread(&summary, status, turns), summary.has_turns))
}

pub(super) fn summary_thread(
    summary: &ConversationSummary,
    status: ThreadStatus,
    turns: Vec<keel_protocol::app_server::Turn>,
) -> Thread {
    let meta = ThreadMeta {
        forked_from_id: None,
        model: summary.model.clone(),
        // A shared store names a record, not a file: clients are given no path.
        path: summary.path.is_absolute().then(|| summary.path.clone()),
        name: summary.name.clone(),
        preview: summary.preview.clone(),
        cwd: summary.cwd.clone(),
        model_provider: summary.model_provider.clone().unwrap_or_default(),
        created_at: unix_seconds(&summary.created_at),
        updated_at: unix_seconds(&summary.updated_at),
        ephemeral: false,
        source: summary.source.clone(),
        environment_id: keel_core::config::LOCAL_ENVIRONMENT.to_string(),
    };
    thread_object(summary.id, &meta, None, status, turns)
}

/// `thread/turns/list`: the turns `thread/read` would give, newest first unless asked
/// otherwise, `limit` at a time; the cursor is the number of turns already returned.
pub(crate) async fn turns_list(
    state: &AppState,
    params: ThreadTurnsListParams,
) -> Result<ThreadTurnsListResponse> {
    let invalid = |message: String| AppServerError::InvalidParams {
        method: "thread/turns/list".to_string(),
        message,
    };
    let skip = match &params.cursor {
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            invalid(format!(
                "`cursor` {cursor:?} is not a cursor this server returned"
            ))
        })?,
        None => 0,
    };
    if params.limit == Some(0) {
        return Err(invalid("`limit` must be at least 1".to_string()));
    }
    let id = parse_thread_id(&params.thread_id)?;
    let (thread, _) = thread_by_id(state, id, true).await?;
    let mut turns = thread.turns;
    if params.sort_direction != Some(SortDirection::Asc) {
        turns.reverse();
    }
    let total = turns.len();
    let limit = params.limit.map_or(usize::MAX, |limit| limit as usize);
    let mut page: Vec<_> = turns.into_iter().skip(skip).take(limit).collect();
    if params.items_view == Some(TurnItemsView::NotLoaded) {
        for turn in &mut page {
            turn.items.clear();
        }
    }
    let end = skip.saturating_add(page.len());
    Ok(ThreadTurnsListResponse {
        data: page,
        next_cursor: (end < total).then(|| end.to_string()),
        backwards_cursor: (skip > 0).then(|| skip.saturating_sub(limit).to_string()),
    })
}

/// `thread/items/list`: the thread's items in turn order (or one turn's), `limit` at a time;
/// cursors are item offsets, or an item of `turnId` to start just past.
pub(crate) async fn items_list(
    state: &AppState,
    params: ThreadItemsListParams,
) -> Result<ThreadItemsListResponse> {
    let invalid = |message: String| AppServerError::InvalidParams {
        method: "thread/items/list".to_string(),
        message,
    };
    if params.limit == Some(0) {
        return Err(invalid("`limit` must be at least 1".to_string()));
    }
    let id = parse_thread_id(&params.thread_id)?;
    let (thread, _) = thread_by_id(state, id, true).await?;
    let mut entries: Vec<ThreadItemEntry> = thread
        .turns
        .into_iter()
        .filter(|turn| params.turn_id.as_ref().is_none_or(|id| *id == turn.id))
        .flat_map(|turn| {
            let turn_id = turn.id;
            turn.items.into_iter().map(move |item| ThreadItemEntry {
                turn_id: turn_id.clone(),
                item,
                started_at_ms: None,
                completed_at_ms: None,
            })
        })
        .collect();
    if params.sort_direction == Some(SortDirection::Desc) {
        entries.reverse();
    }
    let skip = match &params.cursor {
        None => 0,
        Some(ThreadItemsListCursor::Cursor(cursor)) => cursor.parse::<usize>().map_err(|_| {
            invalid(format!(
                "`cursor` {cursor:?} is not a cursor this server returned"
            ))
        })?,
        Some(ThreadItemsListCursor::Anchor(ThreadItemsListAnchor::Item { item_id })) => {
            if params.turn_id.is_none() {
                return Err(invalid("an item cursor needs `turnId`".to_string()));
            }
            entries
                .iter()
                .position(|entry| entry.item.id() == item_id)
                .map(|at| at + 1)
                .ok_or_else(|| invalid(format!("item {item_id} is not in that turn")))?
        }
    };
    let total = entries.len();
    let limit = params.limit.map_or(usize::MAX, |limit| limit as usize);
    let page: Vec<ThreadItemEntry> = entries.into_iter().skip(skip).take(limit).collect();
    let end = skip.saturating_add(page.len());
    Ok(ThreadItemsListResponse {
        data: page,
        next_cursor: (end < total).then(|| end.to_string()),
        backwards_cursor: (skip > 0).then(|| skip.saturating_sub(limit).to_string()),
    })
}

/// `thread/read`.
pub(crate) async fn read(state: &AppState, params: ThreadReadParams) -> Result<ThreadReadResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    let (thread, has_read_state) = thread_by_id(state, id, params.include_turns).await?;
    Ok(ThreadReadResponse {
        thread,
        read_state: match has_read_state {
            true => Some(state.read_states.get(id).await),
            false => None,
        },
    })
}

/// A thread, loaded or recorded, and whether it has a read state (it is recorded and had a
/// turn).
pub(super) async fn thread_by_id(
    state: &AppState,
    id: ConversationId,
    include_turns: bool,
) -> Result<(Thread, bool)> {
    let (mut thread, has_read_state) = match state.loaded(id).await {
        Some(thread) => {
            let has_read_state = !thread.meta().ephemeral && thread.has_turns();
            (thread.to_thread(include_turns), has_read_state)
        }
        None if state.shares_threads() => stored_thread(state, id, include_turns).await?,
        None => {
            let path = rollout_path(state, id)
                .await?
                .ok_or_else(|| not_found(id))?;
            recorded_thread(&path, include_turns).await?
        }
    };
    state.decorate(&mut thread).await;
    Ok((thread, has_read_state))
}

/// `thread/loaded/list`.
pub(crate) async fn loaded_list(
    state: &AppState,
    params: ThreadLoadedListParams,
) -> Result<ThreadLoadedListResponse> {
    let mut ids: Vec<String> = state
        .threads
        .lock()
        .await
        .keys()
        .map(ToString::to_string)
        .collect();
    ids.sort();
    let start = params.cursor.as_ref().map_or(0, |cursor| {
        ids.iter().position(|id| id > cursor).unwrap_or(ids.len())
    });
    let limit = params.limit.unwrap_or(100).max(1) as usize;
    let page: Vec<String> = ids.iter().skip(start).take(limit).cloned().collect();
    let next_cursor = (start + page.len() < ids.len())
        .then(|| page.last().cloned())
        .flatten();
    Ok(ThreadLoadedListResponse {
        data: page,
        next_cursor,
    })
}

/// `thread/archive`: unloads the thread and moves its file to the archive.
pub(crate) async fn archive(
    state: &AppState,
    params: ThreadIdParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    if let Some(thread) = state.loaded(id).await
        && thread.meta().ephemeral
    {
        return Err(AppServerError::InvalidRequest(format!(
            "thread {id} is ephemeral and cannot be archived"
        )));
    }
    state.unload(id).await;
    if !keel_core::ThreadCatalog::archive(state.catalog.as_ref(), id).await? {
        return Err(not_found(id));
    }
    let notification = ServerNotification::ThreadArchived(ThreadIdNotification {
        thread_id: id.to_string(),
    });
    Reply::then_notify(&EmptyResponse {}, outgoing, notification)
}

/// `thread/unarchive`.
pub(crate) async fn unarchive(
    state: &AppState,
    params: ThreadIdParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    let summary = keel_core::ThreadCatalog::unarchive(state.catalog.as_ref(), id)
        .await?
        .ok_or_else(|| {
            AppServerError::InvalidRequest(format!("no archived thread with id {id}"))
        })?;
    let mut thread = summary_thread(&summary, ThreadStatus::NotLoaded, Vec::new());
    state.decorate(&mut thread).await;
    let notification = ServerNotification::ThreadUnarchived(ThreadIdNotification {
        thread_id: id.to_string(),
    });
    Reply::then_notify(&ThreadResponse { thread }, outgoing, notification)
}

/// A thread that exists here: loaded, recorded (live or archived), or both; an error naming
/// it otherwise.
pub(super) async fn existing_thread(
    state: &AppState,
    id: ConversationId,
) -> Result<(Option<Arc<LoadedThread>>, Option<PathBuf>)> {
    let loaded = state.loaded(id).await;
    let path = rollout_path(state, id).await?;
    let recorded = match (&loaded, &path) {
        (None, None) if state.shares_threads() => state.recorded_summary(id).await?.is_some(),
        (None, None) => false,
        _ => true,
    };
    if !recorded {
        return Err(not_found(id));
    }
    Ok((loaded, path))
}

/// `thread/delete`: unloads the thread and removes its file, live or archived, and its
/// file checkpoints.
pub(crate) async fn delete(
    state: &AppState,
    params: ThreadIdParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    existing_thread(state, id).await?;
    state.unload(id).await;
    keel_core::ThreadCatalog::delete(state.catalog.as_ref(), id).await?;
    state.read_states.remove(id);
    if let Err(err) = state
        .organize(move |organizer| organizer.forget_thread(id))
        .await
    {
        tracing::warn!(thread = %id, "could not forget the thread's sections and attachments: {err}");
    }
    // The thread's file checkpoints go with it.
    let checkpoints = keel_core::checkpoints::checkpoint_dir(state.keel_home(), &id.to_string());
    match tokio::fs::remove_dir_all(&checkpoints).await {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!("could not remove {}: {err}", checkpoints.display());
        }
        _ => {}
    }
    let notification = ServerNotification::ThreadDeleted(ThreadIdNotification {
        thread_id: id.to_string(),
    });
    Reply::then_notify(&EmptyResponse {}, outgoing, notification)
}

/// `thread/name/set`: recorded with the thread (by its conversation when it is loaded, so the
/// record keeps one writer) so lists show it after a restart.
pub(crate) async fn set_name(
    state: &AppState,
    params: ThreadSetNameParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    let (loaded, _) = existing_thread(state, id).await?;
    match &loaded {
        // A loaded thread's record has one writer, its conversation (a turn may be writing).
        Some(thread) => {
            thread.conversation.record_name(&params.name).await?;
        }
        None => {
            keel_core::ThreadCatalog::rename(state.catalog.as_ref(), id, params.name.clone())
                .await?;
        }
    }
    let notification = ServerNotification::ThreadNameUpdated(ThreadNameUpdatedNotification {
        thread_id: id.to_string(),
        thread_name: Some(params.name.clone()),
    });
    let outgoing = outgoing.clone();
    Reply::then(&EmptyResponse {}, async move {
        match loaded {
            Some(thread) => {
                thread.update_meta(|meta| meta.name = Some(params.name));
                thread.broadcast(notification).await;
            }
            None => outgoing.notify(notification).await,
        }
    })
}

/// `thread/unsubscribe`. When the last subscriber leaves, the thread is unloaded (as the
/// reference server does): that connection then gets `thread/status/changed` (`notLoaded`)
/// and `thread/closed`; `thread/resume` loads it again from its file.
pub(crate) async fn unsubscribe(
    state: &AppState,
    params: ThreadIdParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    let status = match state.loaded(id).await {
        None => ThreadUnsubscribeStatus::NotLoaded,
        Some(thread) if thread.unsubscribe(outgoing.id()) => {
            // A client that stops following the thread stops running its own tools too.
            thread.forget_tool_client(outgoing.id());
            ThreadUnsubscribeStatus::Unsubscribed
        }
        Some(_) => ThreadUnsubscribeStatus::NotSubscribed,
    };
    let response = ThreadUnsubscribeResponse { status };
    if status != ThreadUnsubscribeStatus::Unsubscribed || !state.unload_if_unfollowed(id).await {
        return Reply::now(&response);
    }
    let outgoing = outgoing.clone();
    let thread_id = id.to_string();
    Reply::then(&response, async move {
        outgoing
            .notify(ServerNotification::ThreadStatusChanged(
                ThreadStatusChangedNotification {
                    thread_id: thread_id.clone(),
                    status: ThreadStatus::NotLoaded,
                },
            ))
            .await;
        outgoing
            .notify(ServerNotification::ThreadClosed(ThreadIdNotification {
                thread_id,
            }))
            .await;
    })
}

/// `thread/rollback`: drops the latest turns from what the model sees (the thread must be
/// loaded and idle).
pub(crate) async fn rollback(
    state: &AppState,
    params: ThreadRollbackParams,
) -> Result<ThreadResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    let thread = state.loaded(id).await.ok_or_else(|| {
        AppServerError::InvalidRequest(format!(
            "thread {id} is not loaded; call thread/resume first"
        ))
    })?;
    if thread.active_turn_id().is_some() {
        return Err(AppServerError::InvalidRequest(
            "cannot roll back while a turn is running; interrupt it first".into(),
        ));
    }
    if params.num_turns == 0 {
        return Err(AppServerError::InvalidParams {
            method: "thread/rollback".into(),
            message: "`numTurns` must be at least 1".into(),
        });
    }
    thread
        .conversation
        .submit(keel_protocol::Op::ThreadRollback {
            num_turns: params.num_turns,
        })
        .await?;
    let mut turns = thread.turns();
    let keep = turns.len().saturating_sub(params.num_turns as usize);
    turns.truncate(keep);
    thread.set_turns(turns);
    Ok(ThreadResponse {
        thread: thread.to_thread(true),
    })
}

/// `thread/goal/get`: a loaded thread's goal, or the one a recorded thread last had.
pub(crate) async fn goal_get(
    state: &AppState,
    params: ThreadGoalGetParams,
) -> Result<ThreadGoalGetResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    if let Some(thread) = state.loaded(id).await {
        return Ok(ThreadGoalGetResponse {
            goal: thread.conversation.goal(),
        });
    }
    if state.shares_threads() {
        let config = state.resolve_config(&Default::default())?;
        let loaded = state
            .manager
            .read_conversation_by_id(&config, id)
            .await?
            .ok_or_else(|| not_found(id))?;
        return Ok(ThreadGoalGetResponse { goal: loaded.goal });
    }
    let Some(path) = rollout_path(state, id).await? else {
        return Err(not_found(id));
    };
    let loaded = keel_core::load_rollout(&path).await?;
    Ok(ThreadGoalGetResponse { goal: loaded.goal })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadStart, |ctx, p| start(ctx.state, p, ctx.outgoing())
    .await);
handle!(ThreadResume, |ctx, p| resume(ctx.state, p, ctx.outgoing())
    .await);
handle!(ThreadFork, |ctx, p| fork(ctx.state, p, ctx.outgoing())
    .await);
handle!(ThreadRead, |ctx, p| Reply::now(&read(ctx.state, p).await?));
handle!(ThreadLoadedList, |ctx, p| Reply::now(
    &loaded_list(ctx.state, p).await?
));
handle!(ThreadArchive, |ctx, p| archive(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ThreadUnarchive, |ctx, p| unarchive(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ThreadDelete, |ctx, p| delete(ctx.state, p, ctx.outgoing())
    .await);
handle!(ThreadSetName, |ctx, p| set_name(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ThreadUnsubscribe, |ctx, p| unsubscribe(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ThreadRollback, |ctx, p| Reply::now(
    &rollback(ctx.state, p).await?
));
handle!(ThreadTurnsList, |ctx, p| Reply::now(
    &turns_list(ctx.state, p).await?
));
handle!(ThreadItemsList, |ctx, p| Reply::now(
    &items_list(ctx.state, p).await?
));
handle!(ThreadGoalGet, |ctx, p| Reply::now(
    &goal_get(ctx.state, p).await?
));
