//! The conversation's messages: the user's input and the agent's answer (streamed, then
//! completed) as `userMessage` and `agentMessage` items.

use keel_protocol::EventMsg;
use keel_protocol::app_server::{ItemDeltaNotification, ServerNotification, ThreadItem, UserInput};

use super::{Output, Translator};

impl Translator {
    /// Maps one of its events; other events give nothing.
    pub(super) fn messages(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match msg {
            EventMsg::UserMessage(message) => {
                let id = self.item_id("user");
                let mut content = vec![UserInput::Text {
                    text: message.message.clone(),
                    text_elements: Vec::new(),
                }];
                content.extend(
                    message
                        .images
                        .iter()
                        .map(|url| UserInput::Image { url: url.clone() }),
                );
                let item = ThreadItem::UserMessage { id, content };
                out.extend(self.start_and_complete(item));
            }
            EventMsg::AgentMessageDelta(delta) => {
                let (turn_id, item_id, started) = self.ensure_agent_item();
                if let Some(item) = started {
                    out.push(Output::notify(ServerNotification::ItemStarted(
                        self.started_notification(&turn_id, item),
                    )));
                }
                out.push(Output::notify(ServerNotification::AgentMessageDelta(
                    ItemDeltaNotification {
                        thread_id,
                        turn_id,
                        item_id,
                        delta: delta.delta.clone(),
                    },
                )));
            }
            EventMsg::AgentMessage(message) => {
                let (turn_id, item_id, started) = self.ensure_agent_item();
                if let Some(item) = started {
                    out.push(Output::notify(ServerNotification::ItemStarted(
                        self.started_notification(&turn_id, item),
                    )));
                }
                let item = ThreadItem::AgentMessage {
                    id: item_id,
                    text: message.message.clone(),
                    phase: None,
                    delivery: None,
                    questions: None,
                };
                if let Some(turn) = self.turn.as_mut() {
                    turn.upsert(item.clone());
                    turn.agent_item = None;
                }
                out.push(Output::notify(ServerNotification::ItemCompleted(
                    self.completed_notification(&turn_id, item),
                )));
            }
            _ => {}
        }
        out
    }
}
