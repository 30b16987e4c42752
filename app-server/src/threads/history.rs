//! Rebuilds a recorded thread's turns from the events in its rollout file.

use keel_protocol::app_server::Turn;
use keel_protocol::{Event, EventMsg, SubmissionId, TaskStartedEvent, TurnId};

use super::translate::Translator;

/// The turns of a recorded thread, replayed through the same translation as live events.
/// Files written without `task_started` events get one synthesised per user message.
pub(crate) fn turns_from_events(thread_id: &str, events: &[EventMsg]) -> Vec<Turn> {
    let mut translator = Translator::new(thread_id.to_string(), Vec::new());
    let mut synthetic = 0u32;
    for msg in events {
        if matches!(msg, EventMsg::UserMessage(_)) && translator.active_turn_id().is_none() {
            synthetic += 1;
            let start = EventMsg::TaskStarted(TaskStartedEvent {
                turn_id: TurnId::new(format!("turn-{synthetic}")),
                model_context_window: None,
            });
            translator.handle(&event(start));
        }
        if matches!(msg, EventMsg::TaskStarted(_)) && translator.active_turn_id().is_some() {
            // A turn without an end (the process stopped mid-turn): close it as interrupted.
            translator.handle(&event(EventMsg::TurnAborted(
                keel_protocol::TurnAbortedEvent {
                    turn_id: None,
                    reason: keel_protocol::TurnAbortReason::Interrupted,
                },
            )));
        }
        // Recorded events carry no submission id; attribute each to the turn in progress.
        let id = translator.active_turn_id().unwrap_or_default().to_string();
        translator.handle(&Event {
            id: SubmissionId::new(id),
            msg: msg.clone(),
        });
    }
    if translator.active_turn_id().is_some() {
        // The file ends mid-turn and nothing is running it (a live turn is read from the
        // loaded thread, never from its file): it was interrupted.
        translator.handle(&event(EventMsg::TurnAborted(
            keel_protocol::TurnAbortedEvent {
                turn_id: None,
                reason: keel_protocol::TurnAbortReason::Interrupted,
            },
        )));
    }
    translator.all_turns()
}

fn event(msg: EventMsg) -> Event {
    Event {
        id: SubmissionId::new(""),
        msg,
    }
}
