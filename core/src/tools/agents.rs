//! The sub-agent tools: `spawn_agent`, `send_input`, `wait_agent`, `close_agent` and
//! `resume_agent`. Each answers the model with JSON (agent id, status, last message) and is
//! announced to clients as a collab tool call.

use std::collections::BTreeMap;
use std::time::Duration;

use keel_protocol::{
    CollabAgentState, CollabAgentTool, CollabAgentToolCallStatus, CollabToolCallEvent,
    ConversationId, EventMsg, InputItem, ReasoningEffort,
};
use serde::Deserialize;
use serde_json::json;

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::agents::{AgentControl, AgentError, wait_any_final};
use crate::turn_context::TurnStop;

/// One of the five sub-agent tools.
struct CollabTool {
    kind: CollabAgentTool,
    spec: serde_json::Value,
}

/// The sub-agent tools, each with its definition.
pub(super) fn collab_tools() -> Vec<Arc<dyn DynTool>> {
    super::agent_spec::collab_tools()
        .into_iter()
        .filter_map(|spec| {
            let kind = match spec.get("name").and_then(serde_json::Value::as_str)? {
                "spawn_agent" => CollabAgentTool::SpawnAgent,
                "send_input" => CollabAgentTool::SendInput,
                "wait_agent" => CollabAgentTool::Wait,
                "close_agent" => CollabAgentTool::CloseAgent,
                "resume_agent" => CollabAgentTool::ResumeAgent,
                _ => return None,
            };
            Some(Arc::new(CollabTool { kind, spec }) as Arc<dyn DynTool>)
        })
        .collect()
}

impl DynTool for CollabTool {
    fn name(&self) -> &str {
        tool_name(self.kind)
    }

    fn spec(&self) -> serde_json::Value {
        self.spec.clone()
    }

    fn approval(&self) -> ToolApproval {
        ToolApproval::PerCall
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let call_id = ctx.call_id().to_string();
            let arguments = input.text();
            Ok(match self.kind {
                CollabAgentTool::SpawnAgent => spawn_agent(&ctx, &call_id, arguments).await,
                CollabAgentTool::SendInput => send_input(&ctx, &call_id, arguments).await,
                CollabAgentTool::Wait => wait_agent(&ctx, &call_id, arguments).await?,
                CollabAgentTool::CloseAgent => close_agent(&ctx, &call_id, arguments).await,
                CollabAgentTool::ResumeAgent => resume_agent(&ctx, &call_id, arguments).await,
                // `collab_tools` makes none of these: they are the second generation's.
                CollabAgentTool::SendMessage
                | CollabAgentTool::FollowupTask
                | CollabAgentTool::InterruptAgent
                | CollabAgentTool::ListAgents => refused("not a first-generation sub-agent tool"),
            })
        })
    }
}

/// How long `wait_agent` waits when the model does not say.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// Bounds of `timeout_ms`: a waiter never spins, and never parks a turn for hours.
const MIN_WAIT: Duration = Duration::from_secs(1);
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// One piece of input in `items`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputArg {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image_url: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    items: Option<Vec<InputArg>>,
    /// Codex's agent roles; Keel runs every agent with the same instructions.
    #[serde(default)]
    #[allow(dead_code)]
    agent_type: Option<String>,
    #[serde(default)]
    fork_context: Option<bool>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    reasoning_effort: Option<ReasoningEffort>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendInputArgs {
    id: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    items: Option<Vec<InputArg>>,
    #[serde(default)]
    interrupt: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    ids: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
}

/// The input a message and/or items describe; an error names what is wrong.
fn input_items(
    message: Option<String>,
    items: Option<Vec<InputArg>>,
) -> Result<Vec<InputItem>, String> {
    let mut input = Vec::new();
    if let Some(text) = message.filter(|m| !m.trim().is_empty()) {
        input.push(InputItem::Text { text });
    }
    for (i, item) in items.into_iter().flatten().enumerate() {
        let kind = item.kind.clone().unwrap_or_else(|| "text".to_string());
        input.push(match (kind.as_str(), item) {
            ("text", InputArg { text: Some(text), .. }) => InputItem::Text { text },
            ("image", InputArg { image_url: Some(image_url), .. }) => InputItem::Image { image_url },
            ("local_image", InputArg { path: Some(path), .. }) => InputItem::LocalImage {
                path: path.into(),
            },
            (kind, _) => {
                return Err(format!(
                    "items[{i}]: type `{kind}` needs `text` (text), `image_url` (image) or `path` (local_image)"
                ));
            }
        });
    }
    if input.is_empty() {
        return Err("give the agent a `message` or `items`".to_string());
    }
    Ok(input)
}

fn prompt_text(input: &[InputItem]) -> Option<String> {
    let text: Vec<&str> = input
        .iter()
        .filter_map(|item| match item {
            InputItem::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

pub(super) fn refused(err: impl std::fmt::Display) -> String {
    json!({ "error": err.to_string() }).to_string()
}

/// What a collab event says beyond the tool and its receivers.
#[derive(Default)]
pub(super) struct CallDetails {
    pub prompt: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
}

pub(super) async fn collab_event(
    ctx: &ToolContext,
    call_id: &str,
    tool: CollabAgentTool,
    receivers: &[ConversationId],
    details: &CallDetails,
    status: CollabAgentToolCallStatus,
) {
    let ids: Vec<String> = receivers.iter().map(ToString::to_string).collect();
    let agents_states: BTreeMap<String, CollabAgentState> = if ids.is_empty() {
        BTreeMap::new()
    } else {
        ctx.host.agents().states(&ids)
    };
    let event = CollabToolCallEvent {
        call_id: call_id.to_string(),
        tool,
        sender_thread_id: ctx.host.id(),
        receiver_thread_ids: receivers.to_vec(),
        prompt: details.prompt.clone(),
        model: details.model.clone(),
        reasoning_effort: details.reasoning_effort.clone(),
        agents_states,
        status,
    };
    let msg = if status == CollabAgentToolCallStatus::InProgress {
        EventMsg::CollabToolCallBegin(event)
    } else {
        EventMsg::CollabToolCallEnd(event)
    };
    ctx.host.send_event(&ctx.ids.sub_id, msg).await;
}

pub(super) async fn collab_end(
    ctx: &ToolContext,
    call_id: &str,
    tool: CollabAgentTool,
    receivers: &[ConversationId],
    details: &CallDetails,
    ok: bool,
) {
    let status = if ok {
        CollabAgentToolCallStatus::Completed
    } else {
        CollabAgentToolCallStatus::Failed
    };
    collab_event(ctx, call_id, tool, receivers, details, status).await;
}

/// `spawn_agent`: a new agent with this conversation's settings starts on the message.
async fn spawn_agent(ctx: &ToolContext, call_id: &str, arguments: &str) -> String {
    let args: SpawnArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return refused(format!("bad spawn_agent arguments: {err}")),
    };
    let agents = ctx.host.agents();
    let config = agents.child_config(&ctx.turn, args.model, args.reasoning_effort);
    let input = input_items(args.message, args.items);
    let details = CallDetails {
        prompt: input.as_ref().ok().and_then(|i| prompt_text(i)),
        model: Some(config.model.clone()),
        reasoning_effort: config.model_reasoning_effort.clone(),
    };
    let tool = CollabAgentTool::SpawnAgent;
    collab_event(
        ctx,
        call_id,
        tool,
        &[],
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let input = match input {
        Ok(input) => input,
        Err(err) => {
            collab_end(ctx, call_id, tool, &[], &details, false).await;
            return refused(err);
        }
    };
    let history = if args.fork_context.unwrap_or(false) {
        let mut history = ctx.host.history();
        let closing = crate::models::outputs_for_unanswered_calls(
            &history,
            "this call is being answered by the parent agent",
        );
        history.extend(closing);
        history
    } else {
        Vec::new()
    };
    let turn = ctx.ids.turn_id.to_string();
    match agents.spawn(config, history, input, None, &turn).await {
        Ok((id, _)) => {
            collab_end(ctx, call_id, tool, &[id], &details, true).await;
            json!({ "agent_id": id.to_string(), "status": "running" }).to_string()
        }
        Err(err) => {
            collab_end(ctx, call_id, tool, &[], &details, false).await;
            refused(err)
        }
    }
}

/// `send_input`: more input for an open agent (optionally interrupting it first).
async fn send_input(ctx: &ToolContext, call_id: &str, arguments: &str) -> String {
    let args: SendInputArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return refused(format!("bad send_input arguments: {err}")),
    };
    let tool = CollabAgentTool::SendInput;
    let input = input_items(args.message, args.items);
    let details = CallDetails {
        prompt: input.as_ref().ok().and_then(|i| prompt_text(i)),
        ..CallDetails::default()
    };
    let target = AgentControl::parse_id(&args.id);
    let receivers: Vec<ConversationId> = target.as_ref().ok().copied().into_iter().collect();
    collab_event(
        ctx,
        call_id,
        tool,
        &receivers,
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let sent = async {
        let id = target?;
        let input = input.map_err(AgentError::BadInput)?;
        ctx.host
            .agents()
            .send_input(id, input, args.interrupt.unwrap_or(false))
            .await?;
        Ok::<_, AgentError>(id)
    }
    .await;
    collab_end(ctx, call_id, tool, &receivers, &details, sent.is_ok()).await;
    match sent {
        Ok(id) => json!({ "agent_id": id.to_string(), "status": "running" }).to_string(),
        Err(err) => refused(err),
    }
}

/// `wait_agent`: blocks until one of the agents is done with its input (or the timeout);
/// answers with every agent's state.
async fn wait_agent(ctx: &ToolContext, call_id: &str, arguments: &str) -> Result<String, TurnStop> {
    let args: WaitArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return Ok(refused(format!("bad wait_agent arguments: {err}"))),
    };
    if args.ids.is_empty() {
        return Ok(refused("`ids` is empty: name the agents to wait for"));
    }
    let timeout = args
        .timeout_ms
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(DEFAULT_WAIT, |ms| Duration::from_millis(ms as u64))
        .clamp(MIN_WAIT, MAX_WAIT);
    let tool = CollabAgentTool::Wait;
    let receivers: Vec<ConversationId> = args
        .ids
        .iter()
        .filter_map(|id| AgentControl::parse_id(id).ok())
        .collect();
    let details = CallDetails::default();
    collab_event(
        ctx,
        call_id,
        tool,
        &receivers,
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let agents = ctx.host.agents();
    let states = agents.states(&args.ids);
    let ready = states.values().any(|state| state.status.is_final());
    let timed_out = if ready {
        false
    } else {
        let waiting = wait_any_final(agents.watchers(&args.ids));
        tokio::select! {
            () = ctx.cancel.cancelled() => {
                collab_end(ctx, call_id, tool, &receivers, &details, false).await;
                return Err(TurnStop::Interrupted);
            }
            waited = tokio::time::timeout(timeout, waiting) => waited.is_err(),
        }
    };
    collab_end(ctx, call_id, tool, &receivers, &details, true).await;
    let states = agents.states(&args.ids);
    Ok(json!({ "status": states, "timed_out": timed_out }).to_string())
}

/// `close_agent`: stops an agent (and its commands) and frees its slot.
async fn close_agent(ctx: &ToolContext, call_id: &str, arguments: &str) -> String {
    let agents = ctx.host.agents();
    one_agent_call(
        ctx,
        call_id,
        arguments,
        CollabAgentTool::CloseAgent,
        |id| async move {
            let before = agents.close(id).await?;
            Ok(json!({
                "agent_id": id.to_string(),
                "status": "shutdown",
                "previous_status": before,
            }))
        },
    )
    .await
}

/// `resume_agent`: reopens a closed agent from its recording; it waits for input.
async fn resume_agent(ctx: &ToolContext, call_id: &str, arguments: &str) -> String {
    let agents = ctx.host.agents();
    let context = &ctx.turn;
    one_agent_call(
        ctx,
        call_id,
        arguments,
        CollabAgentTool::ResumeAgent,
        |id| async move {
            let state = agents.resume(id, context).await?;
            Ok(json!({ "agent_id": id.to_string(), "status": state }))
        },
    )
    .await
}

/// A tool that acts on the one agent named by `id`: parses the arguments, announces the
/// call around `act`, and answers with its JSON or the refusal.
async fn one_agent_call<F, Fut>(
    ctx: &ToolContext,
    call_id: &str,
    arguments: &str,
    tool: CollabAgentTool,
    act: F,
) -> String
where
    F: FnOnce(ConversationId) -> Fut,
    Fut: std::future::Future<Output = Result<serde_json::Value, AgentError>>,
{
    let args: IdArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return refused(format!("bad {} arguments: {err}", tool_name(tool))),
    };
    let target = AgentControl::parse_id(&args.id);
    let receivers: Vec<ConversationId> = target.as_ref().ok().copied().into_iter().collect();
    let details = CallDetails::default();
    collab_event(
        ctx,
        call_id,
        tool,
        &receivers,
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let answer = match target {
        Ok(id) => act(id).await,
        Err(err) => Err(err),
    };
    collab_end(ctx, call_id, tool, &receivers, &details, answer.is_ok()).await;
    match answer {
        Ok(answer) => answer.to_string(),
        Err(err) => refused(err),
    }
}
/// The tool's name as the model calls it.
fn tool_name(tool: CollabAgentTool) -> &'static str {
    match tool {
        CollabAgentTool::SpawnAgent => "spawn_agent",
        CollabAgentTool::SendInput => "send_input",
        CollabAgentTool::ResumeAgent => "resume_agent",
        CollabAgentTool::Wait => "wait_agent",
        CollabAgentTool::CloseAgent => "close_agent",
        CollabAgentTool::SendMessage => "send_message",
        CollabAgentTool::FollowupTask => "followup_task",
        CollabAgentTool::InterruptAgent => "interrupt_agent",
        CollabAgentTool::ListAgents => "list_agents",
    }
}
