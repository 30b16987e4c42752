//! Reasoning summaries as a `reasoning` item: started by the first part or delta, streamed
//! as `item/reasoning/summaryPartAdded` / `item/reasoning/summaryTextDelta`, completed with
//! the summary text.

use keel_protocol::EventMsg;
use keel_protocol::app_server::{
    ReasoningSummaryPartAddedNotification, ReasoningSummaryTextDeltaNotification,
    ServerNotification, ThreadItem,
};

use super::{Output, Translator};

impl Translator {
    /// Maps a reasoning event (section break, delta, completed summary).
    pub(super) fn reasoning(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match msg {
            EventMsg::AgentReasoningSectionBreak(part) => {
                let (turn_id, item_id, started) = self.ensure_reasoning_item();
                if let Some(item) = started {
                    out.push(Output::notify(ServerNotification::ItemStarted(
                        self.started_notification(&turn_id, item),
                    )));
                }
                if let Some(turn) = self.turn.as_mut() {
                    turn.reasoning_summary_index = part.summary_index;
                }
                out.push(Output::notify(
                    ServerNotification::ReasoningSummaryPartAdded(
                        ReasoningSummaryPartAddedNotification {
                            thread_id,
                            turn_id,
                            item_id,
                            summary_index: part.summary_index,
                        },
                    ),
                ));
            }
            EventMsg::AgentReasoningDelta(delta) => {
                let (turn_id, item_id, started) = self.ensure_reasoning_item();
                let summary_index = self
                    .turn
                    .as_ref()
                    .map_or(0, |turn| turn.reasoning_summary_index);
                if let Some(item) = started {
                    out.push(Output::notify(ServerNotification::ItemStarted(
                        self.started_notification(&turn_id, item),
                    )));
                }
                out.push(Output::notify(
                    ServerNotification::ReasoningSummaryTextDelta(
                        ReasoningSummaryTextDeltaNotification {
                            thread_id,
                            turn_id,
                            item_id,
                            delta: delta.delta.clone(),
                            summary_index,
                        },
                    ),
                ));
            }
            EventMsg::AgentReasoning(reasoning) => {
                let (turn_id, item_id, started) = self.ensure_reasoning_item();
                if let Some(item) = started {
                    out.push(Output::notify(ServerNotification::ItemStarted(
                        self.started_notification(&turn_id, item),
                    )));
                }
                let item = ThreadItem::Reasoning {
                    id: item_id,
                    summary: vec![reasoning.text.clone()],
                    content: Vec::new(),
                };
                if let Some(turn) = self.turn.as_mut() {
                    turn.upsert(item.clone());
                    turn.reasoning_item = None;
                    turn.reasoning_summary_index = 0;
                }
                out.push(Output::notify(ServerNotification::ItemCompleted(
                    self.completed_notification(&turn_id, item),
                )));
            }
            _ => {}
        }
        out
    }

    fn ensure_reasoning_item(&mut self) -> (String, String, Option<ThreadItem>) {
        let fresh = self.item_id("rs");
        let Some(turn) = self.turn.as_mut() else {
            return (String::new(), fresh, None);
        };
        if let Some(id) = &turn.reasoning_item {
            return (turn.id.clone(), id.clone(), None);
        }
        let item = ThreadItem::Reasoning {
            id: fresh.clone(),
            summary: Vec::new(),
            content: Vec::new(),
        };
        turn.reasoning_item = Some(fresh.clone());
        turn.upsert(item.clone());
        (turn.id.clone(), fresh, Some(item))
    }
}
