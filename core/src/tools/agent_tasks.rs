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
    CollabAgentStatus, CollabAgentTool, CollabAgentToolCallStatus, ConversationId, InputItem, Op,
    ReasoningEffort,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::agents::{CallDetails, collab_end, collab_event, refused};
use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::agents::{AgentControl, AgentError, MailboxUpdate};
use crate::models::ResponseItem;
use crate::turn_context::TurnStop;

/// How long `wait_agent` waits when the model does not say, and its bounds.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
const MIN_WAIT: Duration = Duration::from_secs(10);
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// One of the six tools.
struct TaskTool {
    kind: CollabAgentTool,
}

/// The second-generation sub-agent tools.
pub(super) fn task_tools() -> Vec<Arc<dyn DynTool>> {
    [
        CollabAgentTool::FollowupTask,
        CollabAgentTool::InterruptAgent,
        CollabAgentTool::ListAgents,
        CollabAgentTool::SendMessage,
        CollabAgentTool::SpawnAgent,
        CollabAgentTool::Wait,
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
            let kind = self.kind;
            Ok(match kind {
                CollabAgentTool::SpawnAgent => spawn_agent(&ctx, arguments).await,
                CollabAgentTool::Wait => wait_agent(&ctx, arguments).await?,
                CollabAgentTool::ListAgents => list_agents(&ctx, arguments),
                _ => act_on_target(&ctx, kind, arguments).await,
            })
        })
    }
}

fn name(kind: CollabAgentTool) -> &'static str {
    match kind {
        CollabAgentTool::SpawnAgent => "spawn_agent",
        CollabAgentTool::Wait => "wait_agent",
        CollabAgentTool::SendMessage => "send_message",
        CollabAgentTool::FollowupTask => "followup_task",
        CollabAgentTool::InterruptAgent => "interrupt_agent",
        _ => "list_agents",
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

/// A task name: lowercase letters, digits and underscores.
fn check_task_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "invalid task_name `{name}`: use 1 to 64 lowercase letters, digits and underscores"
        ))
    }
}

/// `spawn_agent`: a new agent at `<caller's path>/<task_name>` starts on the message, with
/// the caller's history unless `fork_turns` is `none`.
async fn spawn_agent(ctx: &ToolContext, arguments: &str) -> String {
    let call_id = ctx.call_id().to_string();
    let args: SpawnArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return refused(format!("bad spawn_agent arguments: {err}")),
    };
    let agents = ctx.host.agents();
    let config = agents.child_config(&ctx.turn, args.model, args.reasoning_effort);
    let details = CallDetails {
        prompt: Some(args.message.clone()),
        model: Some(config.model.clone()),
        reasoning_effort: config.model_reasoning_effort.clone(),
    };
    let tool = CollabAgentTool::SpawnAgent;
    collab_event(
        ctx,
        &call_id,
        tool,
        &[],
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let checked = check_task_name(&args.task_name).and_then(|()| {
        match args.fork_turns.as_deref().unwrap_or("all") {
            "all" => Ok(true),
            "none" => Ok(false),
            other => Err(format!(
                "invalid fork_turns `{other}`: only `all` and `none` are supported"
            )),
        }
    });
    let fork = match checked {
        Ok(fork) => fork,
        Err(err) => {
            collab_end(ctx, &call_id, tool, &[], &details, false).await;
            return refused(err);
        }
    };
    let history = if fork {
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
    let path = format!("{}/{}", agents.path(), args.task_name);
    let input = vec![
        InputItem::Text {
            text: format!(
                "You are the agent `{path}`. Other agents reach you by that name; your final \
                 answer goes to `{}` when you finish.",
                agents.path()
            ),
        },
        InputItem::Text { text: args.message },
    ];
    match agents
        .spawn(config, history, input, Some(&args.task_name))
        .await
    {
        Ok((id, child)) => {
            report_to_parent(agents, path.clone(), &child);
            collab_end(ctx, &call_id, tool, &[id], &details, true).await;
            json!({"agent_id": id.to_string(), "task_name": path, "status": "running"}).to_string()
        }
        Err(err) => {
            collab_end(ctx, &call_id, tool, &[], &details, false).await;
            refused(err)
        }
    }
}

/// Each time the child `path` finishes a turn, its answer joins the parent's history (with
/// the parent's next request, or before its next turn) and the parent's mailbox says so.
fn report_to_parent(agents: &AgentControl, path: String, child: &Arc<crate::Conversation>) {
    let mut status = child.watch_agent_status();
    let tree = agents.tree().clone();
    let parent_path = agents.path().to_string();
    let parent = agents.conversation(agents.own_id());
    let Ok(parent) = parent.map(|parent| Arc::downgrade(&parent)) else {
        return;
    };
    tokio::spawn(async move {
        while status.changed().await.is_ok() {
            let state = status.borrow_and_update().clone();
            if !state.status.is_final() || state.status == CollabAgentStatus::Shutdown {
                continue;
            }
            let kind = status_name(state.status);
            let Some(parent) = parent.upgrade() else {
                break;
            };
            let text = format!(
                "<agent_update from=\"{path}\" status=\"{kind}\">\n{}\n</agent_update>",
                state.message.as_deref().unwrap_or("")
            );
            if let Err(err) = parent.submit(inject(text)).await {
                tracing::debug!(agent = %path, "parent gone: {err}");
                break;
            }
            tree.post(
                &parent_path,
                MailboxUpdate {
                    from: path.clone(),
                    kind,
                },
            );
        }
    });
}

/// An `Op` that adds a user message to a conversation's history without starting a turn.
fn inject(text: String) -> Op {
    let items = serde_json::to_value(ResponseItem::user_text(text))
        .map(|item| vec![item])
        .unwrap_or_default();
    Op::InjectItems { items }
}

fn status_name(status: CollabAgentStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The path and conversation a target names: a canonical path (`/root/…`), an agent id, or a
/// task name relative to the caller.
fn resolve(agents: &AgentControl, target: &str) -> Result<(String, ConversationId), AgentError> {
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
        format!("{}/{target}", agents.path())
    };
    tree.id_at(&path)
        .map(|id| (path.clone(), id))
        .ok_or(AgentError::NoTask(path))
}

/// `send_message`, `followup_task` and `interrupt_agent`: one target, named by path or id.
async fn act_on_target(ctx: &ToolContext, tool: CollabAgentTool, arguments: &str) -> String {
    let call_id = ctx.call_id().to_string();
    let args: TargetArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return refused(format!("bad {} arguments: {err}", name(tool))),
    };
    let agents = ctx.host.agents();
    let target = resolve(agents, &args.target);
    let receivers: Vec<ConversationId> = target.iter().map(|(_, id)| *id).collect();
    let details = CallDetails {
        prompt: args.message.clone(),
        ..CallDetails::default()
    };
    collab_event(
        ctx,
        &call_id,
        tool,
        &receivers,
        &details,
        CollabAgentToolCallStatus::InProgress,
    )
    .await;
    let answer = match target {
        Ok((path, id)) => act(agents, tool, path, id, args.message).await,
        Err(err) => Err(err),
    };
    collab_end(ctx, &call_id, tool, &receivers, &details, answer.is_ok()).await;
    match answer {
        Ok(answer) => answer.to_string(),
        Err(err) => refused(err),
    }
}

async fn act(
    agents: &AgentControl,
    tool: CollabAgentTool,
    path: String,
    id: ConversationId,
    message: Option<String>,
) -> Result<Value, AgentError> {
    let conversation = agents.conversation(id)?;
    let message = || {
        message
            .clone()
            .filter(|message| !message.trim().is_empty())
            .ok_or_else(|| AgentError::BadInput("`message` is empty".to_string()))
    };
    match tool {
        CollabAgentTool::SendMessage => {
            let text = format!(
                "<agent_message from=\"{}\">\n{}\n</agent_message>",
                agents.path(),
                message()?
            );
            conversation.submit(inject(text)).await?;
            agents.tree().post(
                &path,
                MailboxUpdate {
                    from: agents.path().to_string(),
                    kind: "message".to_string(),
                },
            );
            Ok(json!({"delivered_to": path}))
        }
        CollabAgentTool::FollowupTask => {
            if path == crate::client::ROOT_AGENT {
                return Err(AgentError::BadInput(
                    "followup_task gives a task to a sub-agent, not to the root agent; \
                     send_message reaches it"
                        .to_string(),
                ));
            }
            let text = message()?;
            conversation.mark_running();
            conversation
                .submit(Op::UserInput {
                    items: vec![InputItem::Text { text }],
                })
                .await?;
            Ok(json!({"task_name": path, "status": "running"}))
        }
        _ => {
            let before = conversation.agent_status();
            if before.status == CollabAgentStatus::Running {
                conversation.submit(Op::Interrupt).await?;
            }
            Ok(json!({"task_name": path, "previous_status": before}))
        }
    }
}

/// `wait_agent`: until something arrives in the caller's mailbox (a message, an agent's news)
/// or the timeout; says what arrived, not its content (which is in the history).
async fn wait_agent(ctx: &ToolContext, arguments: &str) -> Result<String, TurnStop> {
    let call_id = ctx.call_id().to_string();
    let args: WaitArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return Ok(refused(format!("bad wait_agent arguments: {err}"))),
    };
    let timeout = args
        .timeout_ms
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(DEFAULT_WAIT, |ms| Duration::from_millis(ms as u64))
        .clamp(MIN_WAIT, MAX_WAIT);
    let tool = CollabAgentTool::Wait;
    let details = CallDetails::default();
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
    let updates = tokio::select! {
        () = ctx.cancel.cancelled() => {
            collab_end(ctx, &call_id, tool, &[], &details, false).await;
            return Err(TurnStop::Interrupted);
        }
        updates = tokio::time::timeout(timeout, tree.next(agents.path())) => updates.ok(),
    };
    let receivers: Vec<ConversationId> = updates
        .iter()
        .flatten()
        .filter_map(|update| tree.id_at(&update.from))
        .collect();
    collab_end(ctx, &call_id, tool, &receivers, &details, true).await;
    Ok(match updates {
        Some(updates) => json!({
            "timed_out": false,
            "updates": updates
                .iter()
                .map(|update| json!({"from": update.from, "kind": update.kind}))
                .collect::<Vec<_>>(),
        }),
        None => json!({"timed_out": true, "updates": []}),
    }
    .to_string())
}

/// `list_agents`: the live agents of the caller's tree, under `path_prefix` if given.
fn list_agents(ctx: &ToolContext, arguments: &str) -> String {
    let args: ListArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return refused(format!("bad list_agents arguments: {err}")),
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
            let status = agents
                .conversation(id)
                .map(|conversation| conversation.agent_status().status)
                .unwrap_or(CollabAgentStatus::NotFound);
            json!({"task_name": path, "agent_id": id.to_string(), "status": status})
        })
        .collect();
    json!({ "agents": listed }).to_string()
}
