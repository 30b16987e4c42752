//! Turns engine events into app-server notifications and approval requests for one thread.
//!
//! Pure state machine: no I/O, so the mapping is unit-tested on its own. Items keep one id
//! from `item/started` to `item/completed`; tool items use the tool call id.

use keel_protocol::app_server::{
    CommandExecutionStatus, ErrorNotification, ItemCompletedNotification, ItemNotification,
    PatchApplyStatus, ServerNotification, ServerRequest, ThreadIdNotification, ThreadItem,
    ThreadTokenUsage, Turn, TurnError, TurnPlan, TurnStatus, UserInput,
};
use keel_protocol::{CallId, Event, EventMsg};

mod client_tools;
mod commands;
mod mcp;
mod messages;
mod notices;
mod patches;
mod progress;
mod reasoning;
mod review;
mod turn_lifecycle;

impl Output {
    fn notify(notification: ServerNotification) -> Self {
        Self::Notify(Box::new(notification))
    }
}

/// Something the thread's pump must do for an event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    /// Send to every subscriber (boxed: a notification can hold a whole thread).
    Notify(Box<ServerNotification>),
    /// Ask the client, then answer the engine for this call.
    Approval {
        /// The engine call the answer is for.
        call_id: CallId,
        /// `true` for a patch, `false` for a command.
        is_patch: bool,
        /// The request to send.
        request: ServerRequest,
    },
    /// Put the model's questions to the clients, then give the engine the first answers.
    UserInput {
        /// The engine call the answers are for.
        call_id: CallId,
        /// The request to send.
        request: ServerRequest,
    },
    /// Ask the client that defined the tool to run it, then give the engine its answer.
    ClientTool {
        /// The engine call the answer is for.
        call_id: CallId,
        /// The request to send.
        request: ServerRequest,
    },
    /// Put an MCP server's question to the clients, then give the engine the first answer.
    Elicitation {
        /// The server asking.
        server_name: String,
        /// The server's request id.
        request_id: serde_json::Value,
        /// The request to send.
        request: ServerRequest,
    },
}

/// The running turn's items, in order, by id.
#[derive(Debug, Default)]
struct TurnInProgress {
    id: String,
    items: Vec<ThreadItem>,
    agent_item: Option<String>,
    reasoning_item: Option<String>,
    /// The summary part the reasoning deltas belong to.
    reasoning_summary_index: u32,
    error: Option<TurnError>,
    /// When the engine started it, Unix seconds.
    started_at: Option<i64>,
    /// The plan as last set (kept with the turn for redrawing it).
    plan: Option<TurnPlan>,
    /// The token usage as last reported.
    token_usage: Option<ThreadTokenUsage>,
}

impl TurnInProgress {
    fn upsert(&mut self, item: ThreadItem) {
        match self.items.iter_mut().find(|i| i.id() == item.id()) {
            Some(slot) => *slot = item,
            None => self.items.push(item),
        }
    }

    fn get(&self, id: &str) -> Option<&ThreadItem> {
        self.items.iter().find(|i| i.id() == id)
    }
}

/// One thread's translation state.
/// Where an engine event stands in the turn's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnBoundary {
    /// The turn starts.
    Started,
    /// The turn ends (completed, interrupted or failed).
    Ended,
}

#[derive(Debug)]
pub(crate) struct Translator {
    thread_id: String,
    turn: Option<TurnInProgress>,
    /// Finished turns, for `thread/read` of a loaded thread.
    turns: Vec<Turn>,
    next_item: u64,
    /// Output of running commands, per call and stream, decoded across chunk boundaries.
    output_text: std::collections::HashMap<(String, bool), keel_exec_server::Utf8ChunkDecoder>,
    /// Command items finished turns left in progress (a session still running when its turn
    /// ended), so a command's end is matched to them without scanning every earlier turn.
    lingering: std::collections::HashSet<String>,
}

/// The ids of command items still in progress in `turns`.
fn lingering_in(turns: &[Turn]) -> std::collections::HashSet<String> {
    turns
        .iter()
        .flat_map(|turn| &turn.items)
        .filter(|item| is_running_command(item))
        .map(|item| item.id().to_string())
        .collect()
}

fn is_running_command(item: &ThreadItem) -> bool {
    matches!(
        item,
        ThreadItem::CommandExecution {
            status: CommandExecutionStatus::InProgress,
            ..
        }
    )
}

impl Translator {
    pub(crate) fn new(thread_id: String, turns: Vec<Turn>) -> Self {
        Self {
            thread_id,
            turn: None,
            lingering: lingering_in(&turns),
            turns,
            next_item: 0,
            output_text: std::collections::HashMap::new(),
        }
    }

    /// Replaces the finished turns (after a rollback).
    pub(crate) fn set_turns(&mut self, turns: Vec<Turn>) {
        self.lingering = lingering_in(&turns);
        self.turns = turns;
    }

    /// Whether the running turn is a review that has not ended.
    pub(crate) fn is_reviewing(&self) -> bool {
        self.turn.as_ref().is_some_and(|turn| {
            turn.items
                .iter()
                .any(|item| matches!(item, ThreadItem::EnteredReviewMode { .. }))
                && !turn
                    .items
                    .iter()
                    .any(|item| matches!(item, ThreadItem::ExitedReviewMode { .. }))
        })
    }

    /// The running turn's id, if any.
    pub(crate) fn active_turn_id(&self) -> Option<&str> {
        self.turn.as_ref().map(|t| t.id.as_str())
    }

    /// Every turn, the running one last (in progress).
    /// The finished turns, without copying them.
    pub(crate) fn into_turns(self) -> Vec<Turn> {
        self.turns
    }

    /// Forgets the latest `n` finished turns (a rollback).
    pub(crate) fn drop_last_turns(&mut self, n: usize) {
        let keep = self.turns.len().saturating_sub(n);
        for dropped in self.turns.drain(keep..) {
            for item in &dropped.items {
                self.lingering.remove(item.id());
            }
        }
    }

    /// Whether a turn ever started (finished or running), without copying any.
    pub(crate) fn has_turns(&self) -> bool {
        !self.turns.is_empty() || self.turn.is_some()
    }

    pub(crate) fn all_turns(&self) -> Vec<Turn> {
        let mut turns = self.turns.clone();
        if let Some(turn) = &self.turn {
            turns.push(Turn {
                id: turn.id.clone(),
                items: turn.items.clone(),
                status: TurnStatus::InProgress,
                error: None,
                started_at: turn.started_at,
                completed_at: None,
                duration_ms: None,
                plan: turn.plan.clone(),
                token_usage: turn.token_usage.clone(),
            });
        }
        turns
    }

    fn item_id(&mut self, prefix: &str) -> String {
        self.next_item += 1;
        format!(
            "{prefix}-{}-{}",
            self.thread_id.get(..8).unwrap_or_default(),
            self.next_item
        )
    }

    fn started_notification(&self, turn_id: &str, item: ThreadItem) -> ItemNotification {
        ItemNotification {
            thread_id: self.thread_id.clone(),
            turn_id: turn_id.to_string(),
            item,
            started_at_ms: now_ms(),
        }
    }

    fn completed_notification(&self, turn_id: &str, item: ThreadItem) -> ItemCompletedNotification {
        ItemCompletedNotification {
            thread_id: self.thread_id.clone(),
            turn_id: turn_id.to_string(),
            item,
            completed_at_ms: now_ms(),
        }
    }

    /// Records a user message (from `turn/steer`) in the running turn.
    pub(crate) fn steer_input(&mut self, input: Vec<UserInput>) -> Vec<Output> {
        let id = self.item_id("user");
        let Some(turn) = self.turn.as_mut() else {
            return Vec::new();
        };
        let item = ThreadItem::UserMessage { id, content: input };
        turn.upsert(item.clone());
        let turn_id = turn.id.clone();
        vec![
            Output::notify(ServerNotification::ItemStarted(
                self.started_notification(&turn_id, item.clone()),
            )),
            Output::notify(ServerNotification::ItemCompleted(
                self.completed_notification(&turn_id, item),
            )),
        ]
    }

    /// Marks a command or patch item declined after the client said no.
    pub(crate) fn declined(&mut self, call_id: &CallId) -> Vec<Output> {
        let Some(turn) = self.turn.as_mut() else {
            return Vec::new();
        };
        let Some(item) = turn.get(call_id.as_str()).cloned() else {
            return Vec::new();
        };
        let item = match item {
            ThreadItem::CommandExecution {
                id,
                command,
                cwd,
                process_id,
                command_actions,
                source,
                ..
            } => ThreadItem::CommandExecution {
                id,
                command,
                cwd,
                process_id,
                source,
                status: CommandExecutionStatus::Declined,
                command_actions,
                aggregated_output: None,
                exit_code: None,
                duration_ms: None,
            },
            ThreadItem::FileChange { id, changes, .. } => ThreadItem::FileChange {
                id,
                changes,
                status: PatchApplyStatus::Declined,
            },
            _ => return Vec::new(),
        };
        turn.upsert(item.clone());
        let turn_id = turn.id.clone();
        vec![Output::notify(ServerNotification::ItemCompleted(
            self.completed_notification(&turn_id, item),
        ))]
    }

    /// Whether `event` starts or ends the running turn: the one place that decides it, for
    /// the translator's items and the thread's status and waiters alike. An `error` ends the
    /// turn only when it is about the turn's own submission (a refused rollback, say, is not).
    pub(crate) fn boundary(&self, event: &Event) -> Option<TurnBoundary> {
        match &event.msg {
            EventMsg::TaskStarted(_) => Some(TurnBoundary::Started),
            EventMsg::TaskComplete(_) | EventMsg::TurnAborted(_) => Some(TurnBoundary::Ended),
            EventMsg::Error(_) if self.active_turn_id() == Some(event.id.as_str()) => {
                Some(TurnBoundary::Ended)
            }
            _ => None,
        }
    }

    /// Maps one engine event.
    pub(crate) fn handle(&mut self, event: &Event) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match &event.msg {
            EventMsg::TaskStarted(started) => out.push(self.turn_started(started)),
            EventMsg::AgentReasoningSectionBreak(_)
            | EventMsg::AgentReasoningDelta(_)
            | EventMsg::AgentReasoning(_) => out.extend(self.reasoning(&event.msg)),
            EventMsg::ExecApprovalRequest(_)
            | EventMsg::ExecCommandBegin(_)
            | EventMsg::ExecCommandOutputDelta(_)
            | EventMsg::TerminalInteraction(_)
            | EventMsg::ExecCommandEnd(_) => out.extend(self.commands(&event.msg)),
            EventMsg::RequestUserInput(request) => out.push(self.user_input_request(request)),
            EventMsg::McpToolCallBegin(_)
            | EventMsg::McpToolCallEnd(_)
            | EventMsg::McpToolCallProgress(_)
            | EventMsg::McpStartupUpdate(_)
            | EventMsg::ElicitationRequest(_) => out.extend(self.mcp(&event.msg)),
            EventMsg::DynamicToolCallRequest(_)
            | EventMsg::DynamicToolCallEnd(_)
            | EventMsg::ToolCallBegin(_)
            | EventMsg::ToolCallEnd(_) => {
                out.extend(self.client_tool(&event.msg));
            }
            EventMsg::Error(error) if self.boundary(event).is_none() => {
                // An error about another submission (e.g. a refused rollback) leaves the
                // running turn alone.
                out.push(self.error(&error.message, error.codex_error_info, false));
            }
            EventMsg::Error(error) => out.extend(self.turn_failed(error)),
            EventMsg::TaskComplete(done) => {
                out.extend(self.ended(TurnStatus::Completed, done.completed_at, done.duration_ms))
            }
            EventMsg::TurnAborted(aborted) => out.extend(self.ended(
                TurnStatus::Interrupted,
                aborted.completed_at,
                aborted.duration_ms,
            )),
            EventMsg::ShutdownComplete => {
                out.push(Output::notify(ServerNotification::ThreadClosed(
                    ThreadIdNotification { thread_id },
                )));
            }
            EventMsg::UserMessage(_)
            | EventMsg::AgentMessageDelta(_)
            | EventMsg::AgentMessage(_) => out.extend(self.messages(&event.msg)),
            EventMsg::ApplyPatchApprovalRequest(_)
            | EventMsg::PatchApplyBegin(_)
            | EventMsg::PatchApplyEnd(_) => out.extend(self.patches(&event.msg)),
            EventMsg::PlanUpdate(_)
            | EventMsg::TurnDiff(_)
            | EventMsg::TokenCount(_)
            | EventMsg::RateLimits(_)
            | EventMsg::ContextCompactionStarted(_)
            | EventMsg::ContextCompacted(_)
            | EventMsg::ThreadGoalUpdated(_)
            | EventMsg::ThreadGoalCleared => out.extend(self.progress(&event.msg)),
            EventMsg::EnteredReviewMode(_)
            | EventMsg::ExitedReviewMode(_)
            | EventMsg::CollabToolCallBegin(_)
            | EventMsg::CollabToolCallEnd(_)
            | EventMsg::SubAgentActivity(_)
            | EventMsg::AsyncAgentMessage(_)
            | EventMsg::SleepStarted(_)
            | EventMsg::SleepEnded(_) => out.extend(self.review(&event.msg)),
            EventMsg::StreamError(_)
            | EventMsg::SkillsChanged(_)
            | EventMsg::HookStarted(_)
            | EventMsg::HookCompleted(_)
            | EventMsg::Warning(_) => out.extend(self.notices(&event.msg)),
            // Events with nothing to tell a client (NOT_TRANSLATED says why for each), and any
            // event newer than this translator (`EventMsg` is non-exhaustive), which is named
            // in the log rather than dropped unseen.
            other => {
                let tag = serde_json::to_value(other)
                    .ok()
                    .and_then(|value| value["type"].as_str().map(str::to_string))
                    .unwrap_or_default();
                if !NOT_TRANSLATED.iter().any(|(name, _)| *name == tag) {
                    tracing::warn!(thread = %thread_id, "engine event `{tag}` not translated");
                }
            }
        }
        out
    }

    /// The model's question to the user, as a `tool/requestUserInput` server request.
    fn user_input_request(&self, request: &keel_protocol::RequestUserInputEvent) -> Output {
        Output::UserInput {
            call_id: request.call_id.clone(),
            request: ServerRequest::ToolRequestUserInput(
                keel_protocol::app_server::ToolRequestUserInputParams {
                    thread_id: self.thread_id.clone(),
                    turn_id: request.turn_id.to_string(),
                    item_id: request.call_id.to_string(),
                    questions: request.questions.clone(),
                    is_blocking: true,
                },
            ),
        }
    }

    fn error(
        &self,
        message: &str,
        kind: Option<keel_protocol::CodexErrorInfo>,
        will_retry: bool,
    ) -> Output {
        Output::notify(ServerNotification::Error(ErrorNotification {
            thread_id: self.thread_id.clone(),
            turn_id: self.active_turn_id().unwrap_or_default().to_string(),
            error: TurnError {
                message: message.to_string(),
                additional_details: None,
                codex_error_info: kind,
            },
            will_retry,
        }))
    }

    fn ensure_agent_item(&mut self) -> (String, String, Option<ThreadItem>) {
        let fresh = self.item_id("msg");
        let Some(turn) = self.turn.as_mut() else {
            return (String::new(), fresh, None);
        };
        if let Some(id) = &turn.agent_item {
            return (turn.id.clone(), id.clone(), None);
        }
        let item = ThreadItem::AgentMessage {
            id: fresh.clone(),
            text: String::new(),
            phase: None,
            delivery: None,
            questions: None,
        };
        turn.agent_item = Some(fresh.clone());
        turn.upsert(item.clone());
        (turn.id.clone(), fresh, Some(item))
    }

    /// `item/started` unless the item already started (an approval starts it early).
    fn start_once(&mut self, item: ThreadItem) -> Vec<Output> {
        let Some(turn) = self.turn.as_mut() else {
            return Vec::new();
        };
        if turn.get(item.id()).is_some() {
            return Vec::new();
        }
        turn.upsert(item.clone());
        let turn_id = turn.id.clone();
        vec![Output::notify(ServerNotification::ItemStarted(
            self.started_notification(&turn_id, item),
        ))]
    }

    fn complete(&mut self, item: ThreadItem) -> Vec<Output> {
        let mut out = self.start_once(item.clone());
        let Some(turn) = self.turn.as_mut() else {
            return out;
        };
        turn.upsert(item.clone());
        let turn_id = turn.id.clone();
        out.push(Output::notify(ServerNotification::ItemCompleted(
            self.completed_notification(&turn_id, item),
        )));
        out
    }

    fn start_and_complete(&mut self, item: ThreadItem) -> Vec<Output> {
        self.complete(item)
    }
}

/// The engine events an app-server client hears nothing of, by wire tag, with the reason; every
/// other event in the engine's schema is translated (a test checks the two lists cover it).
pub(crate) const NOT_TRANSLATED: &[(&str, &str)] = &[
    (
        "session_configured",
        "thread/start and thread/resume answer with the thread's settings",
    ),
    (
        "background_event",
        "Codex's app-server protocol has no notification for the engine's background notes",
    ),
    (
        "thread_rolled_back",
        "thread/rollback answers with the thread as it now stands",
    ),
    (
        "agent_job_progress",
        "Codex's app-server protocol has no job progress notification; the job's tool call \
         item ends with its summary",
    ),
    (
        "mcp_startup_complete",
        "each server's mcpServer/startupStatus/updated has already gone out",
    ),
];

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

/// Milliseconds since the Unix epoch, as Codex 0.169 stamps items and approvals.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}
