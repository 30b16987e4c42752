//! Rolling a conversation back: dropping its latest turns from history and transcript.

use keel_protocol::EventMsg;

use crate::models::ResponseItem;

/// Drops everything from the `num_turns`-th latest user input on, in history and transcript.
pub(crate) fn drop_last_turns(
    history: &mut Vec<ResponseItem>,
    events: &mut Vec<EventMsg>,
    num_turns: u32,
) {
    let cut = |positions: Vec<usize>| -> Option<usize> {
        let n = num_turns as usize;
        (n > 0 && n <= positions.len()).then(|| positions[positions.len() - n])
    };
    let user_items: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, ResponseItem::Message { role, .. } if role == "user"))
        .map(|(i, _)| i)
        .collect();
    match cut(user_items) {
        Some(at) => history.truncate(at),
        None if num_turns > 0 => history.clear(),
        None => {}
    }
    let user_events: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, EventMsg::UserMessage(_)))
        .map(|(i, _)| i)
        .collect();
    match cut(user_events) {
        Some(at) => events.truncate(at),
        None if num_turns > 0 => events.clear(),
        None => {}
    }
}
