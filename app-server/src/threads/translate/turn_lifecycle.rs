//! A turn's life as a client sees it: `turn/started`, and its end (completed, interrupted or
//! failed) with every item still in progress closed first.

use keel_protocol::app_server::{
    CommandExecutionStatus, ItemCompletedNotification, McpToolCallStatus, PatchApplyStatus,
    ServerNotification, ThreadItem, Turn, TurnError, TurnNotification, TurnStatus,
};

use super::{Output, Translator, TurnInProgress, is_running_command, now_ms};

impl Translator {
    /// `turn/started`, and the new turn's state.
    pub(super) fn turn_started(&mut self, started: &keel_protocol::TaskStartedEvent) -> Output {
        let id = started.turn_id.to_string();
        self.turn = Some(TurnInProgress {
            id: id.clone(),
            started_at: started.started_at,
            ..TurnInProgress::default()
        });
        Output::notify(ServerNotification::TurnStarted(TurnNotification {
            thread_id: self.thread_id.clone(),
            turn: Turn::in_progress(id, started.started_at),
        }))
    }

    /// An `error` notification for the running turn.
    /// An error that ends the running turn: the `error` notification, then the failed turn.
    pub(super) fn turn_failed(&mut self, error: &keel_protocol::ErrorEvent) -> Vec<Output> {
        let mut out = vec![self.error(&error.message, error.codex_error_info, false)];
        if let Some(turn) = self.turn.as_mut() {
            turn.error = Some(TurnError {
                message: error.message.clone(),
                additional_details: None,
                codex_error_info: error.codex_error_info,
            });
        }
        out.extend(self.finish(TurnStatus::Failed, None));
        out
    }

    /// The running turn ended with `status` at the time and after the run the engine
    /// recorded (when it did).
    pub(super) fn ended(
        &mut self,
        status: TurnStatus,
        at: Option<i64>,
        duration_ms: Option<u64>,
    ) -> Vec<Output> {
        self.finish(status, EndTime::of(at, duration_ms))
    }

    /// Ends the running turn with `status`: what is still open closes, then `turn/completed`.
    fn finish(&mut self, status: TurnStatus, end: Option<EndTime>) -> Vec<Output> {
        let Some(mut turn) = self.turn.take() else {
            return Vec::new();
        };
        // A message or reasoning item still streaming when the turn ends belongs to a response
        // that never completed: the model never saw it, so the turn's record leaves it out.
        let unfinished = [turn.agent_item.take(), turn.reasoning_item.take()];
        turn.items
            .retain(|item| !unfinished.iter().flatten().any(|id| id == item.id()));
        // An interrupt stops every command, patch and MCP call of the turn (and withdraws its
        // approvals): their items end with it, as failed, so no client is left showing them
        // running. A turn that completes leaves its `exec_command` sessions running; their
        // items complete once the engine reports their end (see `commands`).
        let mut out = Vec::new();
        for item in &mut turn.items {
            if status == TurnStatus::Interrupted && end_unfinished(item) {
                out.push(Output::notify(ServerNotification::ItemCompleted(
                    ItemCompletedNotification {
                        thread_id: self.thread_id.clone(),
                        turn_id: turn.id.clone(),
                        item: item.clone(),
                        completed_at_ms: now_ms(),
                    },
                )));
            }
        }
        let turn = Turn {
            id: turn.id,
            items: turn.items,
            status,
            error: turn.error,
            started_at: turn.started_at,
            completed_at: end.map(|end| end.at),
            duration_ms: end.map(|end| end.duration_ms),
            plan: turn.plan,
            token_usage: turn.token_usage,
        };
        self.lingering.extend(
            turn.items
                .iter()
                .filter(|item| is_running_command(item))
                .map(|item| item.id().to_string()),
        );
        self.turns.push(turn.clone());
        out.push(Output::notify(ServerNotification::TurnCompleted(
            TurnNotification {
                thread_id: self.thread_id.clone(),
                turn,
            },
        )));
        out
    }
}

/// When a turn ended and how long it ran, as the engine recorded them.
#[derive(Debug, Clone, Copy)]
struct EndTime {
    at: i64,
    duration_ms: u64,
}

impl EndTime {
    fn of(at: Option<i64>, duration_ms: Option<u64>) -> Option<Self> {
        Some(Self {
            at: at?,
            duration_ms: duration_ms?,
        })
    }
}

/// Marks an item still in progress as failed; `true` if it was in progress.
fn end_unfinished(item: &mut ThreadItem) -> bool {
    match item {
        ThreadItem::CommandExecution { status, .. }
            if *status == CommandExecutionStatus::InProgress =>
        {
            *status = CommandExecutionStatus::Failed;
            true
        }
        ThreadItem::FileChange { status, .. } if *status == PatchApplyStatus::InProgress => {
            *status = PatchApplyStatus::Failed;
            true
        }
        ThreadItem::McpToolCall(call) if call.status == McpToolCallStatus::InProgress => {
            call.status = McpToolCallStatus::Failed;
            true
        }
        ThreadItem::CollabAgentToolCall(call)
            if call.status == keel_protocol::CollabAgentToolCallStatus::InProgress =>
        {
            call.status = keel_protocol::CollabAgentToolCallStatus::Failed;
            true
        }
        ThreadItem::DynamicToolCall(call)
            if call.status == keel_protocol::app_server::DynamicToolCallStatus::InProgress =>
        {
            call.status = keel_protocol::app_server::DynamicToolCallStatus::Failed;
            call.success = Some(false);
            true
        }
        _ => false,
    }
}
