//! Where the turn loop runs hooks: when the user's prompt arrives (`UserPromptSubmit`),
//! around each tool call (`PreToolUse`, `PostToolUse`) and when the turn would end (`Stop`).
//! What they decide reaches the model as Codex delivers it: a blocked call's output names the
//! reason, context comes as developer messages, a `Stop` block goes on with the reason as a
//! `<hook_prompt>` user message. A hook that fails is ignored with a warning to the client; a
//! hook held back for lack of trust is reported once per conversation.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use keel_protocol::{EventMsg, WarningEvent};

use super::Session;
use crate::hooks::{
    EventOutcome, HookEvent, HookSession, finished_events, run_event, started_events, tool_view,
    trust_hint,
};
use crate::models::ResponseItem;
use crate::turn_context::{TurnContext, TurnIds};

/// The agent type hooks are told for a sub-agent (Keel's sub-agents have one role).
const SUBAGENT_TYPE: &str = "default";

/// Turns a `Stop` hook may continue in a row before Keel ends the turn anyway.
const MAX_STOP_CONTINUATIONS: usize = 8;

/// What every hook of this conversation is told.
fn hook_session(session: &Session, context: &TurnContext) -> HookSession {
    context.hook_session(session.id().to_string(), session.rollout_path())
}

async fn warn(session: &Session, ids: &TurnIds, message: String) {
    session
        .send_event(&ids.sub_id, EventMsg::Warning(WarningEvent { message }))
        .await;
}

/// Tells the client which hooks of `event` are starting (those it waits for).
async fn announce(
    session: &Session,
    ids: &TurnIds,
    context: &TurnContext,
    event: HookEvent,
    name: Option<&str>,
    call_id: Option<&str>,
) {
    for msg in started_events(
        &context.hooks,
        event,
        name,
        context.bypass_hook_trust,
        call_id,
        ids.turn_id.as_str(),
    ) {
        session.send_event(&ids.sub_id, msg).await;
    }
}

/// Reports each run's end, and failed hooks and their messages as warnings.
async fn report(session: &Session, ids: &TurnIds, outcome: &EventOutcome, call_id: Option<&str>) {
    for msg in finished_events(outcome, call_id, ids.turn_id.as_str()) {
        session.send_event(&ids.sub_id, msg).await;
    }
}

/// Runs the hooks of `event` that take no decision here (the model-request, interrupt and
/// session-end events): announced, run, reported; their context is returned for the events
/// that take it.
pub(super) async fn fire(
    session: &Session,
    ids: &TurnIds,
    context: &TurnContext,
    event: HookEvent,
    name: Option<&str>,
    fields: serde_json::Value,
) -> Vec<ResponseItem> {
    if context.hooks.is_empty() {
        return Vec::new();
    }
    announce(session, ids, context, event, name, None).await;
    let outcome = run_event(
        &context.hooks,
        &hook_session(session, context),
        event,
        name,
        Some(ids.turn_id.as_str()),
        fields,
    )
    .await;
    report(session, ids, &outcome, None).await;
    developer_messages(outcome.contexts)
}

/// `SessionEnd`, as the conversation shuts down (Codex reports the reason as `other`).
pub(super) async fn session_end(session: &Session, ids: &TurnIds) {
    fire(
        session,
        ids,
        &session.turn_context(),
        HookEvent::SessionEnd,
        Some("other"),
        serde_json::json!({ "reason": "other" }),
    )
    .await;
}

/// `SessionStart`, once per conversation, before its first prompt is recorded: its context
/// goes into the history ahead of the prompt. `source` is `startup` or `resume`.
pub(super) async fn session_start_once(
    session: &Session,
    ids: &TurnIds,
    context: &TurnContext,
    source: &str,
) -> Vec<ResponseItem> {
    if session.session_started.swap(true, Ordering::Relaxed) {
        return Vec::new();
    }
    if session.agents().parent().is_some() {
        // A sub-agent's session starts: `SubagentStart` (matched on the agent type).
        fire(
            session,
            ids,
            context,
            HookEvent::SubagentStart,
            Some(SUBAGENT_TYPE),
            serde_json::json!({"agent_id": session.id().to_string(), "agent_type": SUBAGENT_TYPE}),
        )
        .await;
    }
    fire(
        session,
        ids,
        context,
        HookEvent::SessionStart,
        Some(source),
        serde_json::json!({ "source": source }),
    )
    .await
}

/// Reads the user's trust and on/off choices for the thread's hooks again (a client may have
/// recorded them since the thread loaded, as the TUI's `/hooks` does); returns the context
/// to use.
pub(super) fn refresh_hook_choices(
    session: &Session,
    context: Arc<TurnContext>,
) -> Arc<TurnContext> {
    if context.hooks.hooks.is_empty() {
        return context;
    }
    let Ok(text) = std::fs::read_to_string(&context.user_config_file) else {
        return context;
    };
    let Some(fresh) = context.hooks.with_choices_from(&text) else {
        return context;
    };
    let mut updated = (*context).clone();
    updated.hooks = Arc::new(fresh);
    session.set_turn_context(updated);
    session.turn_context()
}

/// Reads the skill folders (and the user's choices of skills turned off) again; when the
/// skills changed, the conversation is offered the
/// new set from now on and the client is told (`skills_changed`). Returns the context to use.
pub(super) async fn refresh_skills(
    session: &Session,
    ids: &TurnIds,
    context: Arc<TurnContext>,
) -> Arc<TurnContext> {
    let switches = crate::skills::read_switches(&context.user_config_file)
        .unwrap_or_else(|| context.skill_switches.clone());
    let (roots, fresh) = if session.processes().is_local() {
        // The folders are found again too: a plugin installed since the last turn brings
        // its own.
        let roots = crate::skills::with_extra_roots(
            crate::skills::skill_roots(
                &context.keel_home(),
                crate::skills::user_home().as_deref(),
                &context.cwd,
                context.project_trusted,
            ),
            &context.extra_skill_roots,
        );
        let fresh = crate::skills::load_skills(&roots);
        (roots, fresh)
    } else {
        let found = super::remote_skills::remote_skills(
            session.processes(),
            &context.keel_home(),
            crate::skills::user_home().as_deref(),
            &context.cwd,
            context.project_trusted,
        )
        .await;
        match found {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!("the remote environment's skills could not be read: {err}");
                return context;
            }
        }
    };
    let fresh = fresh.with_switches(&switches);
    if fresh == *context.skills && roots == context.skill_roots {
        return context;
    }
    let mut updated = (*context).clone();
    updated.skills = Arc::new(fresh);
    updated.skill_roots = roots;
    session.set_turn_context(updated);
    session
        .send_event(
            &ids.sub_id,
            EventMsg::SkillsChanged(keel_protocol::SkillsChangedEvent {}),
        )
        .await;
    session.turn_context()
}

/// Once per conversation: names each hook held back for lack of trust, and how to trust it.
pub(super) async fn warn_held_back_once(session: &Session, ids: &TurnIds, context: &TurnContext) {
    if context.bypass_hook_trust || session.hook_warnings_sent.swap(true, Ordering::Relaxed) {
        return;
    }
    for hook in context.hooks.held_back() {
        warn(session, ids, trust_hint(hook, &context.user_config_file)).await;
    }
}

/// `UserPromptSubmit`: `Err(reason)` when a hook dropped the prompt; else the context items to
/// follow it.
pub(super) async fn user_prompt_submit(
    session: &Session,
    ids: &TurnIds,
    context: &TurnContext,
    prompt: &str,
) -> Result<Vec<ResponseItem>, String> {
    announce(
        session,
        ids,
        context,
        HookEvent::UserPromptSubmit,
        None,
        None,
    )
    .await;
    let outcome = run_event(
        &context.hooks,
        &hook_session(session, context),
        HookEvent::UserPromptSubmit,
        None,
        Some(ids.turn_id.as_str()),
        serde_json::json!({ "prompt": prompt }),
    )
    .await;
    report(session, ids, &outcome, None).await;
    if let Some((reason, _)) = outcome.block {
        return Err(reason);
    }
    if let Some(reason) = outcome.stop {
        return Err(reason);
    }
    Ok(developer_messages(outcome.contexts))
}

/// Runs one tool call with its `PreToolUse` and `PostToolUse` hooks around it; returns the
/// items to record: context messages, then the call's output.
pub(super) async fn around_tool_call<F, Fut>(
    session: &Arc<Session>,
    ids: &TurnIds,
    context: &TurnContext,
    call: &ResponseItem,
    run: F,
) -> Result<Vec<ResponseItem>, crate::turn_context::TurnStop>
where
    F: FnOnce(ResponseItem) -> Fut,
    Fut: Future<Output = Result<ResponseItem, crate::turn_context::TurnStop>>,
{
    let Some((name, arguments, call_id)) = call_parts(call) else {
        return run(call.clone()).await.map(|output| vec![output]);
    };
    if context.hooks.is_empty() {
        return run(call.clone()).await.map(|output| vec![output]);
    }
    let hooks_session = hook_session(session, context);
    let (tool_name, tool_input) = tool_view(&name, &arguments);
    announce(
        session,
        ids,
        context,
        HookEvent::PreToolUse,
        Some(&tool_name),
        Some(&call_id),
    )
    .await;
    let pre = run_event(
        &context.hooks,
        &hooks_session,
        HookEvent::PreToolUse,
        Some(&tool_name),
        Some(ids.turn_id.as_str()),
        serde_json::json!({
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_use_id": call_id,
        }),
    )
    .await;
    report(session, ids, &pre, Some(&call_id)).await;
    let mut items = developer_messages(pre.contexts.clone());
    if let Some((reason, _)) = &pre.block {
        let command = tool_input
            .get("command")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| tool_input.to_string());
        let text = if tool_name == "Bash" {
            format!("Command blocked by PreToolUse hook: {reason}. Command: {command}")
        } else {
            format!("Tool call blocked by PreToolUse hook: {reason}")
        };
        items.push(output_for(call, text));
        return Ok(items);
    }
    let call = match &pre.updated_input {
        Some(updated) => with_input(call, &name, updated),
        None => call.clone(),
    };
    let mut output = run(call).await?;
    let response = output_text(&output);
    announce(
        session,
        ids,
        context,
        HookEvent::PostToolUse,
        Some(&tool_name),
        Some(&call_id),
    )
    .await;
    let post = run_event(
        &context.hooks,
        &hooks_session,
        HookEvent::PostToolUse,
        Some(&tool_name),
        Some(ids.turn_id.as_str()),
        serde_json::json!({
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_use_id": call_id,
            "tool_response": response,
        }),
    )
    .await;
    report(session, ids, &post, Some(&call_id)).await;
    items.extend(developer_messages(post.contexts.clone()));
    if let Some(replacement) = post.block.map(|(reason, _)| reason).or(post.stop) {
        output = output_for(&output_call(call_id.as_str(), &output), replacement);
    }
    items.push(output);
    Ok(items)
}

/// `Stop`: the reason to go on with, when a hook blocks the end of the turn.
pub(super) async fn stop(
    session: &Session,
    ids: &TurnIds,
    context: &TurnContext,
    last_message: Option<&str>,
    continuations: usize,
) -> Option<ResponseItem> {
    if continuations >= MAX_STOP_CONTINUATIONS {
        return None;
    }
    // A sub-agent's turn ends with `SubagentStop` instead (matched on the agent type).
    let (event, name, fields) = if session.agents().parent().is_some() {
        (
            HookEvent::SubagentStop,
            Some(SUBAGENT_TYPE),
            serde_json::json!({
                "agent_id": session.id().to_string(),
                "agent_type": SUBAGENT_TYPE,
                "agent_transcript_path": session.rollout_path(),
                "stop_hook_active": continuations > 0,
                "last_assistant_message": last_message,
            }),
        )
    } else {
        (
            HookEvent::Stop,
            None,
            serde_json::json!({
                "stop_hook_active": continuations > 0,
                "last_assistant_message": last_message,
            }),
        )
    };
    announce(session, ids, context, event, name, None).await;
    let outcome = run_event(
        &context.hooks,
        &hook_session(session, context),
        event,
        name,
        Some(ids.turn_id.as_str()),
        fields,
    )
    .await;
    report(session, ids, &outcome, None).await;
    let (reason, hook) = outcome.block?;
    Some(ResponseItem::user_text(format!(
        "<hook_prompt hook_run_id=\"stop:{hook}\">{reason}</hook_prompt>"
    )))
}

fn developer_messages(contexts: Vec<String>) -> Vec<ResponseItem> {
    contexts
        .into_iter()
        .map(ResponseItem::developer_text)
        .collect()
}

/// Name, arguments and call id of a tool call.
fn call_parts(call: &ResponseItem) -> Option<(String, String, String)> {
    match call {
        ResponseItem::FunctionCall {
            name,
            arguments,
            call_id,
            ..
        } => Some((name.clone(), arguments.clone(), call_id.clone())),
        ResponseItem::CustomToolCall {
            name,
            input,
            call_id,
            ..
        } => Some((name.clone(), input.clone(), call_id.clone())),
        _ => None,
    }
}

/// The call with a hook's replacement input: for a command, `{"command": "..."}` becomes the
/// command the tool runs; for other tools the replacement is the new arguments.
fn with_input(call: &ResponseItem, name: &str, updated: &serde_json::Value) -> ResponseItem {
    let mut call = call.clone();
    let command = updated.get("command").and_then(serde_json::Value::as_str);
    match &mut call {
        ResponseItem::FunctionCall { arguments, .. } => {
            let mut args: serde_json::Value =
                serde_json::from_str(arguments).unwrap_or_else(|_| serde_json::json!({}));
            match (name, command, args.as_object_mut()) {
                ("exec_command", Some(command), Some(map)) => {
                    map.insert("cmd".into(), command.into());
                }
                ("shell" | "local_shell" | "container.exec", Some(command), Some(map)) => {
                    map.insert(
                        "command".into(),
                        serde_json::json!(["bash", "-lc", command]),
                    );
                }
                _ => args = updated.clone(),
            }
            *arguments = args.to_string();
        }
        ResponseItem::CustomToolCall { input, .. } => {
            *input = updated
                .as_str()
                .map_or_else(|| updated.to_string(), str::to_string);
        }
        _ => {}
    }
    call
}

fn output_text(output: &ResponseItem) -> String {
    match output {
        ResponseItem::FunctionCallOutput { output, .. }
        | ResponseItem::CustomToolCallOutput { output, .. } => output.text().into_owned(),
        _ => String::new(),
    }
}

/// A stand-in call of the same kind as `output`, to build a replacement output for it.
fn output_call(call_id: &str, output: &ResponseItem) -> ResponseItem {
    match output {
        ResponseItem::CustomToolCallOutput { .. } => ResponseItem::CustomToolCall {
            id: None,
            call_id: call_id.to_string(),
            name: String::new(),
            namespace: None,
            input: String::new(),
        },
        _ => ResponseItem::FunctionCall {
            id: None,
            name: String::new(),
            namespace: None,
            arguments: String::new(),
            call_id: call_id.to_string(),
        },
    }
}

/// The output item answering `call` with `text`.
fn output_for(call: &ResponseItem, text: String) -> ResponseItem {
    match call {
        ResponseItem::CustomToolCall { call_id, .. } => ResponseItem::CustomToolCallOutput {
            call_id: call_id.clone(),
            output: text.into(),
        },
        other => ResponseItem::FunctionCallOutput {
            call_id: other.tool_call_id().unwrap_or_default().to_string(),
            output: text.into(),
        },
    }
}
