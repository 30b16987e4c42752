//! Commands in a thread: approval requests, `commandExecution` items from begin to end,
//! their output as `item/commandExecution/outputDelta` (decoded across chunk boundaries), and
//! what the model types into a running `exec_command` session.

use keel_protocol::app_server::{
    CommandAction, CommandExecutionApprovalDecision, CommandExecutionRequestApprovalParams,
    CommandExecutionStatus, ItemDeltaNotification, ServerNotification, ServerRequest,
    TerminalInteractionNotification, ThreadItem,
};
use keel_protocol::{EventMsg, ExecApprovalRequestEvent, ExecCommandEndEvent};

use super::{Output, Translator, is_running_command, now_ms};
use crate::threads::items::{command_item, display_command};

impl Translator {
    /// Maps a command event; other events give nothing.
    pub(super) fn commands(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match msg {
            EventMsg::ExecApprovalRequest(request) => out.extend(self.approval_request(request)),
            EventMsg::ExecCommandBegin(begin) => {
                let item = command_item(
                    begin.call_id.as_str(),
                    &begin.command,
                    &begin.cwd,
                    &begin.parsed_cmd,
                    begin.process_id.clone(),
                    begin.source,
                );
                out.extend(self.start_once(item));
            }
            EventMsg::ExecCommandOutputDelta(delta) => {
                let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                out.push(Output::notify(
                    ServerNotification::CommandExecutionOutputDelta(ItemDeltaNotification {
                        thread_id,
                        turn_id,
                        item_id: delta.call_id.to_string(),
                        delta: self
                            .output_text
                            .entry((
                                delta.call_id.to_string(),
                                delta.stream
                                    == keel_protocol::exec_server::ExecOutputStream::Stdout,
                            ))
                            .or_default()
                            .decode(delta.chunk.as_bytes()),
                    }),
                ));
            }
            EventMsg::TerminalInteraction(interaction) => {
                let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                out.push(Output::notify(ServerNotification::TerminalInteraction(
                    TerminalInteractionNotification {
                        thread_id,
                        turn_id,
                        item_id: interaction.call_id.to_string(),
                        process_id: interaction.process_id.clone(),
                        stdin: interaction.stdin.clone(),
                    },
                )));
            }
            EventMsg::ExecCommandEnd(end) => out.extend(self.command_ended(end)),
            _ => {}
        }
        out
    }

    /// An approval asked for a command: its item starts (once) and the client is asked.
    fn approval_request(&mut self, request: &ExecApprovalRequestEvent) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        let item = command_item(
            request.call_id.as_str(),
            &request.command,
            &request.cwd,
            &request.parsed_cmd,
            request.process_id.clone(),
            keel_protocol::ExecCommandSource::Agent,
        );
        out.extend(self.start_once(item));
        let turn_id = self.active_turn_id().unwrap_or_default().to_string();
        out.push(Output::Approval {
            call_id: request.call_id.clone(),
            is_patch: false,
            request: ServerRequest::CommandExecutionRequestApproval(
                CommandExecutionRequestApprovalParams {
                    thread_id,
                    turn_id,
                    item_id: request.call_id.to_string(),
                    approval_id: None,
                    command: Some(display_command(&request.command)),
                    cwd: Some(request.cwd.clone()),
                    reason: request.reason.clone(),
                    command_actions: Some(
                        request
                            .parsed_cmd
                            .iter()
                            .cloned()
                            .map(CommandAction::from)
                            .collect(),
                    ),
                    started_at_ms: now_ms(),
                    available_decisions: Some(CommandExecutionApprovalDecision::ALL.to_vec()),
                },
            ),
        });
        out
    }

    /// A command ended: its item completes, in the turn that started it.
    fn command_ended(&mut self, end: &ExecCommandEndEvent) -> Vec<Output> {
        let mut out = Vec::new();
        // The aggregated output in the item is whole; the decoders are done.
        self.output_text
            .retain(|(call_id, _), _| call_id.as_str() != end.call_id.as_str());
        let item = ThreadItem::CommandExecution {
            id: end.call_id.to_string(),
            command: display_command(&end.command),
            cwd: end.cwd.clone(),
            process_id: end.process_id.clone(),
            source: crate::threads::items::source_of(end.source, end.process_id.as_deref()),
            status: if end.exit_code == 0 {
                CommandExecutionStatus::Completed
            } else {
                CommandExecutionStatus::Failed
            },
            command_actions: end
                .parsed_cmd
                .iter()
                .cloned()
                .map(CommandAction::from)
                .collect(),
            aggregated_output: Some(end.aggregated_output.clone()),
            exit_code: Some(end.exit_code),
            duration_ms: Some(end.duration.as_millis() as u64),
        };
        let running_now = self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.get(item.id()).is_some());
        // A session left running by an earlier turn ended (it exited, or a client
        // closed it): its item completes in the turn that started it.
        let earlier = if running_now {
            None
        } else {
            self.complete_in_finished_turn(&item)
        };
        match earlier {
            Some(output) => out.push(output),
            None => out.extend(self.complete(item)),
        }
        out
    }

    /// Completes `item` in the finished turn that holds it still in progress, if one does.
    fn complete_in_finished_turn(&mut self, item: &ThreadItem) -> Option<Output> {
        if !self.lingering.remove(item.id()) {
            return None;
        }
        let turn = self.turns.iter_mut().rev().find(|turn| {
            turn.items
                .iter()
                .any(|old| old.id() == item.id() && is_running_command(old))
        })?;
        let slot = turn.items.iter_mut().find(|old| old.id() == item.id())?;
        *slot = item.clone();
        let turn_id = turn.id.clone();
        Some(Output::notify(ServerNotification::ItemCompleted(
            self.completed_notification(&turn_id, item.clone()),
        )))
    }
}
