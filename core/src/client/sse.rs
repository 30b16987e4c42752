//! Server-Sent Events framing over a byte stream, with an idle timeout.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};

use crate::error::{CoreError, Result};

/// One SSE event: its `event:` name (may be empty) and `data:` payload.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub event: String,
    pub data: String,
}

/// Splits a byte stream into SSE frames; a gap longer than `idle` ends it with an error.
pub(crate) fn frames<S, B, E>(bytes: S, idle: Duration) -> impl Stream<Item = Result<Frame>> + Send
where
    S: Stream<Item = std::result::Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send,
    E: std::fmt::Display + Send + 'static,
{
    let events = bytes.eventsource();
    futures::stream::unfold(Some(Box::pin(events)), move |state| async move {
        let mut events = state?;
        match tokio::time::timeout(idle, events.next()).await {
            Err(_) => Some((Err(CoreError::StreamIdle(idle)), None)),
            Ok(None) => None,
            Ok(Some(Err(err))) => Some((Err(CoreError::Stream(err.to_string())), None)),
            Ok(Some(Ok(event))) => Some((
                Ok(Frame {
                    event: event.event,
                    data: event.data,
                }),
                Some(events),
            )),
        }
    })
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
