//! Where a recorded turn starts and ends, as every reader of a record decides it.

use keel_protocol::EventMsg;

/// `Some(true)` when `msg` starts a turn, `Some(false)` when it ends one (completed,
/// aborted, or failed with an error), `None` otherwise.
pub(crate) fn turn_edge(msg: &EventMsg) -> Option<bool> {
    match msg {
        EventMsg::TaskStarted(_) => Some(true),
        EventMsg::TaskComplete(_) | EventMsg::TurnAborted(_) | EventMsg::Error(_) => Some(false),
        // `EventMsg` is non-exhaustive (the protocol crate adds events): every other event
        // happens within a turn or between turns without starting or ending one.
        _ => None,
    }
}
