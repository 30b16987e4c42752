//! Turning a scripted turn into timed SSE frames, with the turn's fault applied.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;

use crate::mock::fault::Fault;

/// How a rendered stream ends.
pub(crate) enum Ending<'a> {
    /// Normally: `response.completed`, or the chat finish chunks and `[DONE]`.
    Completed,
    /// Cleanly, but without the terminal event.
    Truncated,
    /// With an error event.
    Failed { code: &'a str, message: &'a str },
}

/// A wire format the mock can render a turn into.
pub(crate) trait Render {
    /// The frames before the ending, in order.
    fn body(&mut self) -> Vec<Bytes>;
    /// The frames that end the stream.
    fn ending(&mut self, ending: Ending<'_>) -> Vec<Bytes>;
    /// A frame whose `data:` is not valid JSON.
    fn malformed(&self) -> Bytes;
}

/// An SSE frame with an `event:` line (Responses API).
pub(crate) fn event_frame(event: &str, data: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

/// An SSE frame with only a `data:` line (Chat Completions API).
pub(crate) fn data_frame(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// One step of a planned stream.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    Send(Bytes),
    Sleep(Duration),
    Abort,
}

/// Renders a turn's frames and interleaves delays and the fault.
pub(crate) fn plan(
    renderer: &mut dyn Render,
    fault: Option<&Fault>,
    event_delay: Option<Duration>,
) -> VecDeque<Step> {
    let ending = match fault {
        Some(Fault::EndWithoutCompleted) => Ending::Truncated,
        Some(Fault::ResponseFailed { code, message }) => Ending::Failed { code, message },
        _ => Ending::Completed,
    };
    let mut frames = renderer.body();
    frames.extend(renderer.ending(ending));

    let mut steps = VecDeque::new();
    for index in 0..=frames.len() {
        match fault {
            Some(Fault::Disconnect { after_events }) if *after_events == index => {
                steps.push_back(Step::Abort);
                return steps;
            }
            Some(Fault::Stall {
                after_events,
                duration,
            }) if *after_events == index => steps.push_back(Step::Sleep(*duration)),
            Some(Fault::MalformedData { after_events }) if *after_events == index => {
                steps.push_back(Step::Send(renderer.malformed()));
            }
            _ => {}
        }
        let Some(frame) = frames.get(index) else {
            break;
        };
        if index > 0
            && let Some(delay) = event_delay
        {
            steps.push_back(Step::Sleep(delay));
        }
        steps.push_back(Step::Send(frame.clone()));
    }
    steps
}

/// The error a scripted disconnect raises inside the body stream, which makes hyper drop the
/// connection without the terminating chunk.
#[derive(Debug, thiserror::Error)]
#[error("keel-mock-model: scripted disconnect")]
pub(crate) struct ScriptedDisconnect;

/// How long a stream stays pending before a scripted disconnect, so the frames before it leave.
const FLUSH_BEFORE_ABORT: Duration = Duration::from_millis(20);

/// Plays planned steps as a body stream. Nothing is spawned: the sleeps run when the
/// connection polls the body, and dropping the response drops them.
pub(crate) fn play(steps: VecDeque<Step>) -> impl Stream<Item = Result<Bytes, ScriptedDisconnect>> {
    futures::stream::unfold(steps, |mut steps| async move {
        loop {
            match steps.pop_front()? {
                Step::Send(frame) => return Some((Ok(frame), steps)),
                Step::Sleep(duration) => tokio::time::sleep(duration).await,
                Step::Abort => {
                    // hyper buffers ready frames and drops the buffer with the connection on
                    // a body error; going pending first makes it flush what was "sent".
                    tokio::time::sleep(FLUSH_BEFORE_ABORT).await;
                    steps.clear();
                    return Some((Err(ScriptedDisconnect), steps));
                }
            }
        }
    })
}
