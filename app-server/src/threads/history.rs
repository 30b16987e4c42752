//! Rebuilds a recorded thread's turns from the events in its rollout file.

use keel_core::TranscriptEntry;
use keel_protocol::app_server::Turn;
use keel_protocol::{Event, EventMsg, SubmissionId, TaskStartedEvent, TurnId};

use super::translate::Translator;

/// Builds the turns of a recorded thread one transcript entry at a time, replaying the events
/// through the same translation as live ones. Files written without `task_started` events get
/// one synthesised per user message.
pub(crate) struct TurnsBuilder {
    translator: Translator,
    synthetic: u32,
}

impl TurnsBuilder {
    pub(crate) fn new(thread_id: &str) -> Self {
        Self {
            translator: Translator::new(thread_id.to_string(), Vec::new()),
            synthetic: 0,
        }
    }

    /// Takes the next entry of the transcript.
    pub(crate) fn push(&mut self, entry: TranscriptEntry) {
        match entry {
            TranscriptEntry::Event(msg) => self.push_event(msg),
            TranscriptEntry::Rollback(num_turns) => {
                self.close_open_turn();
                self.translator.drop_last_turns(num_turns as usize);
            }
        }
    }

    fn push_event(&mut self, msg: EventMsg) {
        let translator = &mut self.translator;
        if matches!(msg, EventMsg::UserMessage(_)) && translator.active_turn_id().is_none() {
            self.synthetic += 1;
            let start = EventMsg::TaskStarted(TaskStartedEvent {
                turn_id: TurnId::new(format!("turn-{}", self.synthetic)),
                model_context_window: None,
                started_at: None,
            });
            translator.handle(&event(start));
        }
        if matches!(msg, EventMsg::TaskStarted(_)) && translator.active_turn_id().is_some() {
            // A turn without an end (the process stopped mid-turn): close it as interrupted.
            self.close_open_turn();
        }
        // Recorded events carry no submission id; attribute each to the turn in progress.
        let translator = &mut self.translator;
        let id = translator.active_turn_id().unwrap_or_default().to_string();
        translator.handle(&Event {
            id: SubmissionId::new(id),
            msg,
        });
    }

    /// Ends a turn the file left open as interrupted.
    fn close_open_turn(&mut self) {
        if self.translator.active_turn_id().is_some() {
            self.translator.handle(&event(EventMsg::TurnAborted(
                keel_protocol::TurnAbortedEvent {
                    turn_id: None,
                    reason: keel_protocol::TurnAbortReason::Interrupted,
                    completed_at: None,
                    duration_ms: None,
                },
            )));
        }
    }

    /// The turns. A file that ends mid-turn and that nothing is running (a live turn is read
    /// from the loaded thread, never from its file) was interrupted.
    pub(crate) fn finish(mut self) -> Vec<Turn> {
        self.close_open_turn();
        self.translator.into_turns()
    }
}

/// The turns of a recorded thread from its events, already in memory.
pub(crate) fn turns_from_events(thread_id: &str, events: Vec<EventMsg>) -> Vec<Turn> {
    let mut builder = TurnsBuilder::new(thread_id);
    for msg in events {
        builder.push(TranscriptEntry::Event(msg));
    }
    builder.finish()
}

fn event(msg: EventMsg) -> Event {
    Event {
        id: SubmissionId::new(""),
        msg,
    }
}
