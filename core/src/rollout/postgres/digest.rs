//! What a batch of items changes in a thread's row: its lines, the messages search reads,
//! whether a turn is running after it, its preview and name.

use chrono::{SecondsFormat, Utc};
use keel_protocol::EventMsg;

use super::super::{RolloutItem, RolloutLine};
use crate::error::{CoreError, Result};

/// One append, ready for the database.
pub(super) struct Digest {
    /// Each item as a rollout line (JSON with its timestamp).
    pub lines: Vec<String>,
    /// Each item's message text when it is a user or assistant message.
    pub messages: Vec<Option<String>>,
    /// The batch's timestamp (the thread's last change).
    pub timestamp: String,
    /// A turn started in the batch.
    pub turn_started: bool,
    /// Whether a turn is running after the batch; `None` when the batch does not say.
    pub turn_open: Option<bool>,
    /// The first user message in the batch.
    pub first_user_message: Option<String>,
    /// The last name in the batch.
    pub name: Option<String>,
}

impl Digest {
    /// Reads `items` as one append made now.
    pub(super) fn of(items: &[RolloutItem], source: &str) -> Result<Self> {
        let timestamp = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut digest = Self {
            lines: Vec::with_capacity(items.len()),
            messages: Vec::with_capacity(items.len()),
            timestamp: timestamp.clone(),
            turn_started: false,
            turn_open: None,
            first_user_message: None,
            name: None,
        };
        for item in items {
            let line = RolloutLine {
                timestamp: timestamp.clone(),
                item: item.clone(),
            };
            digest
                .lines
                .push(
                    serde_json::to_string(&line).map_err(|err| CoreError::ThreadStore {
                        store: source.to_string(),
                        message: format!("cannot serialise an item: {err}"),
                    })?,
                );
            let mut message = None;
            match item {
                RolloutItem::EventMsg(EventMsg::UserMessage(user)) => {
                    if digest.first_user_message.is_none() {
                        digest.first_user_message = Some(user.message.clone());
                    }
                    message = Some(user.message.clone());
                }
                RolloutItem::EventMsg(EventMsg::AgentMessage(agent)) => {
                    message = Some(agent.message.clone());
                }
                RolloutItem::EventMsg(event) => {
                    // A turn that fails ends with its error: the lease goes with it.
                    if let Some(started) = super::super::turn_edge(event) {
                        digest.turn_started |= started;
                        digest.turn_open = Some(started);
                    }
                }
                RolloutItem::ThreadName(name) => digest.name = Some(name.clone()),
                RolloutItem::SessionMeta(_)
                | RolloutItem::ResponseItem(_)
                | RolloutItem::Rollback(_)
                | RolloutItem::Compacted(_) => {}
            }
            digest.messages.push(message);
        }
        Ok(digest)
    }
}
