//! File changes: a patch's approval request, its begin and end, as one `fileChange` item.

use keel_protocol::EventMsg;
use keel_protocol::app_server::{
    FileChangeRequestApprovalParams, FileUpdateChange, PatchApplyStatus, ServerRequest, ThreadItem,
};

use super::{Output, Translator, now_ms};

impl Translator {
    /// Maps one of its events; other events give nothing.
    pub(super) fn patches(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match msg {
            EventMsg::ApplyPatchApprovalRequest(request) => {
                let item = ThreadItem::FileChange {
                    id: request.call_id.to_string(),
                    changes: FileUpdateChange::from_changes(&request.changes),
                    status: PatchApplyStatus::InProgress,
                };
                out.extend(self.start_once(item));
                let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                out.push(Output::Approval {
                    call_id: request.call_id.clone(),
                    is_patch: true,
                    request: ServerRequest::FileChangeRequestApproval(
                        FileChangeRequestApprovalParams {
                            thread_id,
                            turn_id,
                            item_id: request.call_id.to_string(),
                            reason: request.reason.clone(),
                            grant_root: request.grant_root.clone(),
                            started_at_ms: now_ms(),
                        },
                    ),
                });
            }
            EventMsg::PatchApplyBegin(begin) => {
                let item = ThreadItem::FileChange {
                    id: begin.call_id.to_string(),
                    changes: FileUpdateChange::from_changes(&begin.changes),
                    status: PatchApplyStatus::InProgress,
                };
                out.extend(self.start_once(item));
            }
            EventMsg::PatchApplyEnd(end) => {
                // Live, the begin event said what changes; read back from a rollout (which
                // keeps only the end), the end event says it.
                let changes = match self.turn.as_ref().and_then(|t| t.get(end.call_id.as_str())) {
                    Some(ThreadItem::FileChange { changes, .. }) if !changes.is_empty() => {
                        changes.clone()
                    }
                    _ => FileUpdateChange::from_changes(&end.changes),
                };
                let item = ThreadItem::FileChange {
                    id: end.call_id.to_string(),
                    changes,
                    status: if end.success {
                        PatchApplyStatus::Completed
                    } else {
                        PatchApplyStatus::Failed
                    },
                };
                out.extend(self.complete(item));
            }
            _ => {}
        }
        out
    }
}
