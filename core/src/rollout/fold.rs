//! Folding a conversation's recorded items, in order, into what resuming it needs: the
//! history the model sees (from the last compaction on), the transcript, its name and its
//! token usage. Rollout files and other stores fold the same way.

use std::path::PathBuf;

use keel_protocol::EventMsg;

use super::items::{LoadedRollout, RolloutItem, SessionMeta, TranscriptEntry};
use super::rollback::drop_last_turns;
use crate::error::{CoreError, Result};
use crate::models::ResponseItem;

/// What has been read of a conversation so far.
#[derive(Default)]
pub(crate) struct RolloutFold {
    meta: Option<SessionMeta>,
    history: Vec<ResponseItem>,
    events: Vec<EventMsg>,
    name: Option<String>,
    token_info: Option<keel_protocol::TokenUsageInfo>,
    goal: Option<keel_protocol::ThreadGoal>,
}

impl RolloutFold {
    /// Takes the next item: events `keep` accepts are collected, and every transcript entry
    /// is handed to `step`.
    pub(crate) fn push(
        &mut self,
        item: RolloutItem,
        keep: fn(&EventMsg) -> bool,
        step: &mut dyn FnMut(TranscriptEntry),
    ) {
        match item {
            RolloutItem::SessionMeta(found) => {
                if self.meta.is_none() {
                    self.meta = Some(found);
                }
            }
            RolloutItem::ResponseItem(item) => self.history.push(item),
            RolloutItem::EventMsg(event) => {
                if let EventMsg::TokenCount(count) = &event
                    && count.info.is_some()
                {
                    self.token_info.clone_from(&count.info);
                }
                match &event {
                    EventMsg::ThreadGoalUpdated(updated) => self.goal = Some(updated.goal.clone()),
                    EventMsg::ThreadGoalCleared => self.goal = None,
                    _ => {}
                }
                self.push_event(super::transcript_events::for_transcript(event), keep, step);
            }
            RolloutItem::ThreadName(found) => self.name = Some(found),
            RolloutItem::Rollback(num_turns) => {
                drop_last_turns(&mut self.history, &mut self.events, num_turns);
                step(TranscriptEntry::Rollback(num_turns));
            }
            RolloutItem::Compacted(compacted) => {
                self.history = compacted.replacement_history.unwrap_or_else(|| {
                    vec![crate::models::compacted_summary_item(&compacted.message)]
                });
            }
        }
    }

    /// Takes an event already cut for the transcript.
    pub(crate) fn push_event(
        &mut self,
        event: EventMsg,
        keep: fn(&EventMsg) -> bool,
        step: &mut dyn FnMut(TranscriptEntry),
    ) {
        if keep(&event) {
            self.events.push(event.clone());
        }
        step(TranscriptEntry::Event(event));
    }

    /// The conversation read from `source` (a file, or where a store keeps it); an error when
    /// no session meta was read.
    pub(crate) fn finish(self, source: PathBuf) -> Result<LoadedRollout> {
        let Some(meta) = self.meta else {
            return Err(CoreError::Rollout {
                path: source,
                message: "no session_meta line; not a Keel rollout".to_string(),
            });
        };
        Ok(LoadedRollout {
            meta,
            history: self.history,
            events: self.events,
            name: self.name,
            token_info: self.token_info,
            goal: self.goal,
            path: source,
        })
    }
}
