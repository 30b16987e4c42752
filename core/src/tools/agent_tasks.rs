//! The second generation of sub-agent tools, offered to the models whose catalogue entry says
//! `multi_agent_version: "v2"` (Codex 0.171's `collaboration` namespace): agents are named by
//! task path (`/root/worker`), any agent of a tree can message any other, a finished agent's
//! answer arrives in its parent's history by itself, and `wait_agent` waits on the caller's
//! mailbox rather than on named agents.
//!
//! `spawn_agent`, `send_message` (joins the target's history, no new turn), `followup_task`
//! (the target's next turn, or its running one), `wait_agent`, `interrupt_agent` and
//! `list_agents`. Each answers with JSON and is announced to clients as a collab tool call.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use keel_protocol::{
    CollabAgentStatus, CollabAgentTool, CollabAgentToolCallStatus, ConversationId, EventMsg,
    InputItem, Op, ReasoningEffort, SubAgentActivityEvent, SubAgentActivityKind,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::agents::{CallDetails, collab_end, collab_event};
use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::agents::{AgentControl, AgentError, MailboxUpdate};
use crate::models::ResponseItem;
use crate::turn_context::TurnStop;

/// How long `wait_agent` waits when the model does not say, and its bounds.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
const MIN_WAIT: Duration = Duration::from_secs(10);
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// The six tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskKind {
    FollowupTask,
    InterruptAgent,
    ListAgents,
    SendMessage,
    SpawnAgent,
    WaitAgent,
}

/// The three that act on one target agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetAction {
    SendMessage,
    FollowupTask,
    Interrupt,
}

/// One of the six tools.
struct TaskTool {
    kind: TaskKind,
}

/// The second-generation sub-agent tools.
pub(super) fn task_tools() -> Vec<Arc<dyn DynTool>> {
    [
        TaskKind::FollowupTask,
        TaskKind::InterruptAgent,
        TaskKind::ListAgents,
        TaskKind::SendMessage,
        TaskKind::SpawnAgent,
        TaskKind::WaitAgent,
    ]
    .into_iter()
    .map(|kind| Arc::new(TaskTool { kind }) as Arc<dyn DynTool>)
    .collect()
}

impl DynTool for TaskTool {
    fn name(&self) -> &str {
        name(self.kind)
    }

    fn spec(&self) -> Value {
        super::agent_spec::task_tool(name(self.kind))
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
            let arguments = input.text();
            Ok(match self.kind {
                TaskKind::SpawnAgent => spawn_agent(&ctx, arguments).await,
                TaskKind::WaitAgent => wait_agent(&ctx, arguments).await?,
                TaskKind::ListAgents => list_agents(&ctx, arguments),
                TaskKind::SendMessage => {
                    act_on_target(&ctx, TargetAction::SendMessage, arguments).await
                }
                TaskKind::FollowupTask => {
                    act_on_target(&ctx, TargetAction::FollowupTask, arguments).await
                }
                TaskKind::InterruptAgent => {
                    act_on_target(&ctx, TargetAction::Interrupt, arguments).await
                }
            })
        })
    }
}

fn name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::SpawnAgent => "spawn_agent",
        TaskKind::WaitAgent => "wait_agent",
        TaskKind::SendMessage => "send_message",
        TaskKind::FollowupTask => "followup_task",
        TaskKind::InterruptAgent => "interrupt_agent",
        TaskKind::ListAgents => "list_agents",
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    task_name: String,
    message: String,
    #[serde(default)]
    fork_turns: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    reasoning_effort: Option<ReasoningEffort>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetArgs {
    target: String,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    #[serde(default)]
    timeout_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path_prefix: Option<String>,
}

/// A task name: lowercase letters, digits and underscores, not `root` (Codex's rules and
/// messages).
fn check_task_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        Err("agent_name must not be empty".to_string())
    } else if name == "root" {
        Err("agent_name `root` is reserved".to_string())
    } else if name.contains('/') {
        Err("agent_name must not contain `/`".to_string())
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Err("agent_name must use only lowercase letters, digits, and underscores".to_string())
    } else {
        Ok(())
    }
}

/// An effort the catalogue says `model` does not take, refused in Codex's words.
fn check_effort(
    catalog: &crate::model_catalog::ModelCatalog,
    model: &str,
    effort: Option<&ReasoningEffort>,
) -> Result<(), String> {
    let (Some(effort), Some(levels)) = (
        effort,
        catalog
            .find(model)
            .and_then(|entry| entry.supported_reasoning_levels.as_ref()),
    ) else {
        return Ok(());
    };
    if levels.iter().any(|level| &level.effort == effort) {
        return Ok(());
    }
    let supported: Vec<&str> = levels.iter().map(|level| level.effort.as_str()).collect();
    Err(format!(
        "Reasoning effort `{}` is not supported for model `{model}`. Supported reasoning \
         efforts: {}",
        effort.as_str(),
        supported.join(", ")
    ))
}

/// A refusal, as Codex words its failed collaboration calls: the sentence alone.
fn failed(err: impl std::fmt::Display) -> String {
    err.to_string()
}

/// Arguments that do not parse, in Codex's words.
fn unparsed(err: &serde_json::Error) -> String {
    format!("failed to parse function arguments: {err}")
}

/// `spawn_agent`: a new agent at `<caller's path>/<task_name>` starts on the message, with
/// the caller's history unless `fork_turns` is `none`.
async fn spawn_agent(ctx: &ToolContext, arguments: &str) -> String {
    let call_id = ctx.call_id().to_string();
    let args: SpawnArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return unparsed(&err),
    };
    let agents = ctx.host.agents();
    let catalog = ctx.turn.client.settings().catalog.clone();
    let config = agents.child_config(&ctx.turn, args.model, args.reasoning_effort.clone());
    let details = CallDetails {
        prompt: Some(args.message.clone()),
        model: Some(config.model.clone()),
        reasoning_effort: config.model_reasoning_effort.clone(),
    };
    let checked = check_task_name(&args.task_name)
        .and_then(|()| check_effort(&catalog, &config.model, args.reasoning_effort.as_ref()))
        .and_then(|()| match args.fork_turns.as_deref().unwrap_or("all") {
            "all" => Ok(true),
            "none" => Ok(false),
            _ => Err("fork_turns must be `none` or `all`".to_string()),
        });
    let fork = match checked {
        Ok(fork) => fork,
        Err(err) => return failed(err),
    };
    let parent_path = agents.path().to_string();
    let path = format!("{parent_path}/{}", args.task_name);
    let history = if fork {
        let mut history = ctx.host.history();
        let closing = crate::models::outputs_for_unanswered_calls(&history, "aborted");
        history.extend(closing);
        history.push(ResponseItem::developer_text(format!(
            "You are now `{path}`, a sub-agent of `{parent_path}`. The conversation above is \
             your parent's, inherited as context: its tasks, identities and approvals are \
             your ancestors', its tool calls are history (no process or session of theirs is \
             yours). Do the task below and report the result to your parent."
        )));
        history
    } else {
        Vec::new()
    };
    let input = vec![InputItem::AgentMessage {
        author: parent_path,
        recipient: path.clone(),
        message_type: "NEW_TASK".to_string(),
        payload: args.message,
    }];
    match agents
        .spawn(
            config,
            history,
            input,
            Some(&args.task_name),
            ctx.ids.turn_id.as_ref(),
        )
        .await
    {
        Ok((id, child)) => {
            report_to_parent(ctx, agents, path.clone(), &child);
            activity(
                ctx,
                call_id,
                SubAgentActivityKind::Started,
                id,
                path.clone(),
                details,
            )
            .await;
            json!({"task_name": path}).to_string()
        }
        Err(err) => match err {
            AgentError::LimitReached(_) => {
                failed("collab spawn failed: agent thread limit reached")
            }
            AgentError::PathTaken(path) => failed(format!("agent path `{path}` already exists")),
            other => failed(other),
        },
    }
}

/// Each time the child `path` finishes a turn, its answer joins the parent's history (with
/// the parent's next request, or before its next turn) and the parent's mailbox says so.
fn report_to_parent(
    ctx: &ToolContext,
    agents: &AgentControl,
    path: String,
    child: &Arc<crate::Conversation>,
) {
    let mut status = child.watch_agent_status();
    let child_id = child.id();
    // Weakly: a parent that goes away is not kept for its child's sake.
    let host = Arc::downgrade(&ctx.host);
    let sub_id = ctx.ids.sub_id.clone();
    let tree = agents.tree().clone();
    let parent_path = agents.path().to_string();
    let parent = agents.conversation(agents.own_id());
    let Ok(parent) = parent.map(|parent| Arc::downgrade(&parent)) else {
        return;
    };
    tokio::spawn(async move {
        while status.changed().await.is_ok() {
            let state = status.borrow_and_update().clone();
            let answer = match state.status {
                CollabAgentStatus::Completed => state.message.clone().unwrap_or_default(),
                CollabAgentStatus::Errored => format!(
                    "Agent errored: {}\n\nThis agent's turn failed. If you still need this \
                     agent, use the available collaboration tools to give it another task.",
                    state.message.as_deref().unwrap_or("")
                ),
                // An interrupted agent says nothing; one still working has nothing to say.
                CollabAgentStatus::PendingInit
                | CollabAgentStatus::Running
                | CollabAgentStatus::Interrupted
                | CollabAgentStatus::Shutdown
                | CollabAgentStatus::NotFound => continue,
            };
            let Some(parent) = parent.upgrade() else {
                break;
            };
            // The mailbox first: a `wait_agent` the answer wakes finds it there.
            tree.post(
                &parent_path,
                MailboxUpdate {
                    from: path.clone(),
                    kind: status_name(state.status),
                },
            );
            let item = ResponseItem::agent_message("FINAL_ANSWER", &path, &parent_path, &answer);
            if let Err(err) = parent.submit(inject(item)).await {
                tracing::debug!(agent = %path, "parent gone: {err}");
                break;
            }
            if let Some(host) = host.upgrade() {
                let event = SubAgentActivityEvent {
                    id: format!("subagent-completed-{}", uuid::Uuid::now_v7()),
                    kind: SubAgentActivityKind::Completed,
                    agent_thread_id: child_id,
                    agent_path: path.clone(),
                    model: None,
                    reasoning_effort: None,
                };
                host.send_event(&sub_id, EventMsg::SubAgentActivity(event))
                    .await;
            }
        }
    });
}

/// Tells the caller's clients what happened to a sub-agent (a `subAgentActivity` item).
async fn activity(
    ctx: &ToolContext,
    id: String,
    kind: SubAgentActivityKind,
    agent: ConversationId,
    path: String,
    details: CallDetails,
) {
    let event = SubAgentActivityEvent {
        id,
        kind,
        agent_thread_id: agent,
        agent_path: path,
        model: details.model,
        reasoning_effort: details.reasoning_effort,
    };
    ctx.host
        .send_event(&ctx.ids.sub_id, EventMsg::SubAgentActivity(event))
        .await;
}

/// An `Op` that adds `item` to a conversation's history without starting a turn: with its
/// running turn's next request, or before its next turn.
fn inject(item: ResponseItem) -> Op {
    let items = serde_json::to_value(item)
        .map(|item| vec![item])
        .unwrap_or_default();
    Op::InjectItems { items }
}

/// An agent's status as `list_agents` and `interrupt_agent` show it: `running`,
/// `interrupted`, …, or `{"completed": answer}` / `{"errored": error}`.
fn status_value(state: &keel_protocol::CollabAgentState) -> Value {
    match state.status {
        CollabAgentStatus::Completed => json!({"completed": state.message}),
        CollabAgentStatus::Errored => json!({"errored": state.message}),
        CollabAgentStatus::PendingInit => json!("pending_init"),
        CollabAgentStatus::NotFound => json!("not_found"),
        other => json!(status_name(other)),
    }
}

fn status_name(status: CollabAgentStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The path and conversation a target names: a full path (`/root/…`), an agent id, or a
/// task name relative to the caller; refused in Codex's words.
fn resolve(agents: &AgentControl, target: &str) -> Result<(String, ConversationId), String> {
    let target = target.trim();
    let tree = agents.tree();
    if let Ok(id) = target.parse::<ConversationId>()
        && let Some(path) = tree.path_of(id)
    {
        return Ok((path, id));
    }
    let path = if target.starts_with('/') {
        target.trim_end_matches('/').to_string()
    } else {
        check_task_name(target)?;
        format!("{}/{target}", agents.path())
    };
    tree.id_at(&path)
        .map(|id| (path.clone(), id))
        .ok_or_else(|| format!("live agent path `{path}` not found"))
}

/// `send_message`, `followup_task` and `interrupt_agent`: one target, named by path or id.
async fn act_on_target(ctx: &ToolContext, tool: TargetAction, arguments: &str) -> String {
    let call_id = ctx.call_id().to_string();
    let args: TargetArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return unparsed(&err),
    };
    let agents = ctx.host.agents();
    let (path, id) = match resolve(agents, &args.target) {
        Ok(target) => target,
        Err(err) => return failed(err),
    };
    match act(agents, tool, path.clone(), id, args.message).await {
        Ok(answer) => {
            let kind = match tool {
                TargetAction::Interrupt => SubAgentActivityKind::Interrupted,
                TargetAction::SendMessage | TargetAction::FollowupTask => {
                    SubAgentActivityKind::Interacted
                }
            };
            activity(ctx, call_id, kind, id, path, CallDetails::default()).await;
            answer
        }
        Err(err) => failed(err),
    }
}

async fn act(
    agents: &AgentControl,
    tool: TargetAction,
    path: String,
    id: ConversationId,
    message: Option<String>,
) -> Result<String, String> {
    let conversation = agents.conversation(id).map_err(|err| err.to_string())?;
    let message = || {
        message
            .clone()
            .filter(|message| !message.trim().is_empty())
            .ok_or_else(|| "message must not be empty".to_string())
    };
    let sent = |err: crate::error::CoreError| err.to_string();
    match tool {
        TargetAction::SendMessage => {
            let item = ResponseItem::agent_message("MESSAGE", agents.path(), &path, &message()?);
            // The mailbox first: a `wait_agent` the message wakes finds it there.
            agents.tree().post(
                &path,
                MailboxUpdate {
                    from: agents.path().to_string(),
                    kind: "message".to_string(),
                },
            );
            conversation.submit(inject(item)).await.map_err(sent)?;
            Ok(String::new())
        }
        TargetAction::FollowupTask => {
            if path == crate::client::ROOT_AGENT {
                return Err("Follow-up tasks can't target the root agent".to_string());
            }
            let payload = message()?;
            conversation.mark_running();
            conversation
                .submit(Op::UserInput {
                    items: vec![InputItem::AgentMessage {
                        author: agents.path().to_string(),
                        recipient: path,
                        message_type: "NEW_TASK".to_string(),
                        payload,
                    }],
                })
                .await
                .map_err(sent)?;
            Ok(String::new())
        }
        TargetAction::Interrupt => {
            let before = conversation.agent_status();
            if before.status == CollabAgentStatus::Running {
                conversation.submit(Op::Interrupt).await.map_err(sent)?;
            }
            Ok(json!({"previous_status": status_value(&before)}).to_string())
        }
    }
}

/// `wait_agent`: until something arrives in the caller's mailbox (a message, an agent's
/// answer) or the timeout; says which, not what (that is in the history).
async fn wait_agent(ctx: &ToolContext, arguments: &str) -> Result<String, TurnStop> {
    let call_id = ctx.call_id().to_string();
    let args: WaitArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return Ok(unparsed(&err)),
    };
    let asked = args
        .timeout_ms
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(DEFAULT_WAIT, |ms| Duration::from_millis(ms as u64));
    let timeout = asked.clamp(MIN_WAIT, MAX_WAIT);
    let clamped = if asked < MIN_WAIT {
        Some(("minimum", MIN_WAIT))
    } else if asked > MAX_WAIT {
        Some(("maximum", MAX_WAIT))
    } else {
        None
    };
    let tool = CollabAgentTool::Wait;
    let details = CallDetails::default();
    // Listening before the wait is announced: a steer sent as soon as the client sees it
    // still ends it.
    let input = ctx.host.input_arrived();
    collab_event(
        ctx,
        &call_id,
        tool,
        &[],
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let agents = ctx.host.agents();
    let tree = agents.tree();
    let (updates, steered) = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => {
            collab_end(ctx, &call_id, tool, &[], &details, false).await;
            return Err(TurnStop::Interrupted);
        }
        updates = tokio::time::timeout(timeout, tree.next(agents.path())) => (updates.ok(), false),
        // Input from outside (the user steering the turn) ends the wait too, unless the
        // mailbox has news by then.
        () = input => {
            let updates = tree.take(agents.path());
            (Some(updates.clone()).filter(|_| !updates.is_empty()), updates.is_empty())
        }
    };
    collab_end(ctx, &call_id, tool, &[], &details, true).await;
    let mut message = if steered {
        "Wait interrupted by new input.".to_string()
    } else if updates.is_some() {
        "Wait completed.".to_string()
    } else {
        "Wait timed out.".to_string()
    };
    if let Some((bound, to)) = clamped {
        message.push_str(&format!(
            "\n\nRequested timeout of {}ms was clamped to the {bound} of {}ms.",
            asked.as_millis(),
            to.as_millis()
        ));
    }
    Ok(json!({"message": message, "timed_out": updates.is_none() && !steered}).to_string())
}

/// `list_agents`: the live agents of the caller's tree, under `path_prefix` if given, in the
/// order they were spawned.
fn list_agents(ctx: &ToolContext, arguments: &str) -> String {
    let args: ListArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return unparsed(&err),
    };
    let agents = ctx.host.agents();
    let prefix = args
        .path_prefix
        .as_deref()
        .map(|prefix| prefix.trim_end_matches('/'))
        .filter(|prefix| !prefix.is_empty());
    let listed: Vec<Value> = agents
        .tree()
        .list(prefix)
        .into_iter()
        .map(|(path, id)| {
            let state = agents.conversation(id).map_or_else(
                |_| keel_protocol::CollabAgentState::new(CollabAgentStatus::NotFound),
                |conversation| conversation.agent_status(),
            );
            json!({"agent_name": path, "agent_status": status_value(&state)})
        })
        .collect();
    json!({ "agents": listed }).to_string()
}
