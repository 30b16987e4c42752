//! Reviews and sub-agents: entering and leaving review mode as items, a collaboration tool
//! call as a `collabAgentToolCall` item, what happened to a second-generation sub-agent as a
//! `subAgentActivity` item, and a message to the user that does not hold the turn as an
//! `agentMessage` item with `delivery: "async"`, and a `clock.sleep` as a `sleep` item.

use keel_protocol::EventMsg;
use keel_protocol::app_server::ThreadItem;

use super::{Output, Translator};

impl Translator {
    /// Maps one of its events; other events give nothing.
    pub(super) fn review(&mut self, msg: &EventMsg) -> Vec<Output> {
        let mut out = Vec::new();
        match msg {
            EventMsg::CollabToolCallBegin(call) => {
                out.extend(self.start_once(crate::threads::items::collab_item(call)));
            }
            EventMsg::CollabToolCallEnd(call) => {
                out.extend(self.complete(crate::threads::items::collab_item(call)));
            }
            EventMsg::SubAgentActivity(activity) => {
                let item = keel_protocol::app_server::SubAgentActivityItem {
                    id: activity.id.clone(),
                    kind: activity.kind,
                    agent_thread_id: activity.agent_thread_id.to_string(),
                    agent_path: activity.agent_path.clone(),
                    model: activity.model.clone(),
                    reasoning_effort: activity.reasoning_effort.clone(),
                };
                out.extend(self.start_and_complete(ThreadItem::SubAgentActivity(Box::new(item))));
            }
            EventMsg::SleepStarted(sleep) => {
                out.extend(self.start_once(ThreadItem::Sleep {
                    id: sleep.call_id.clone(),
                    duration_ms: sleep.duration_ms,
                }));
            }
            EventMsg::SleepEnded(sleep) => {
                out.extend(self.complete(ThreadItem::Sleep {
                    id: sleep.call_id.clone(),
                    duration_ms: sleep.duration_ms,
                }));
            }
            EventMsg::AsyncAgentMessage(message) => {
                out.extend(self.start_and_complete(ThreadItem::AgentMessage {
                    id: message.call_id.clone(),
                    text: message.message.clone(),
                    phase: Some("final_answer".to_string()),
                    delivery: Some("async".to_string()),
                    questions: message.questions.clone(),
                }));
            }
            EventMsg::EnteredReviewMode(request) => {
                let id = self.item_id("review");
                let review = request
                    .user_facing_hint
                    .clone()
                    .unwrap_or_else(|| "a review".to_string());
                out.extend(self.start_and_complete(ThreadItem::EnteredReviewMode { id, review }));
            }
            EventMsg::ExitedReviewMode(exited) => {
                let id = self.item_id("review");
                let (review, review_output) = match &exited.review_output {
                    Some(output) => (
                        keel_core::review::render_review(output),
                        serde_json::to_value(output).ok(),
                    ),
                    None => (keel_core::review::REVIEW_FAILED_TEXT.to_string(), None),
                };
                out.extend(self.start_and_complete(ThreadItem::ExitedReviewMode {
                    id,
                    review,
                    review_output,
                }));
            }
            _ => {}
        }
        out
    }
}
