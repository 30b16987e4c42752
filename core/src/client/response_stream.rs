//! Events of one response as they stream, decoded from the wire API's frames or produced by an
//! embedder's provider.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};

use super::wire_decoder::WireDecoder;
use super::{ResponseEvent, sse};
use crate::error::{CoreError, Result};

/// Events of one response as they stream. Dropping it stops the request.
///
/// The caller's own polling reads the socket: no task or channel sits between them, so a
/// caller that stops asking stops the reading.
pub struct ResponseStream {
    pub(super) source: Source,
    /// Events of the last frame not handed out yet.
    pub(super) ready: VecDeque<ResponseEvent>,
    /// Set once the response completed or failed: nothing more is read.
    pub(super) finished: bool,
    /// The rate limits the response's headers stated.
    pub(super) rate_limits: Option<keel_protocol::RateLimitSnapshot>,
    /// How long an embedder's event stream may stay silent before it counts as broken (the
    /// HTTP streams keep their own watch on the socket).
    pub(super) idle_timeout: Option<Duration>,
}

/// Where a response's events come from.
pub(super) enum Source {
    /// Server-sent events of one of the HTTP wire APIs, mapped frame by frame.
    Sse {
        frames: Pin<Box<dyn Stream<Item = Result<sse::Frame>> + Send>>,
        decoder: Box<dyn WireDecoder>,
    },
    /// Events a provider of the embedder's produces itself.
    Events(Pin<Box<dyn Stream<Item = Result<ResponseEvent>> + Send>>),
}

/// How long a stream may stay open after its decoder says the answer is complete (a Chat
/// server's `finish_reason`) before it is taken as complete.
const CHAT_AFTER_FINISH_WAIT: Duration = Duration::from_secs(2);

impl ResponseStream {
    /// A response made of `events`, for a [`ModelProvider`] that produces events itself.
    /// It must end with [`ResponseEvent::Completed`]; a stream that ends before that counts as
    /// broken (and is retried).
    pub fn from_events(events: impl Stream<Item = Result<ResponseEvent>> + Send + 'static) -> Self {
        Self {
            source: Source::Events(Box::pin(events)),
            ready: VecDeque::new(),
            finished: false,
            rate_limits: None,
            idle_timeout: None,
        }
    }

    /// The same stream, reporting `limits` as the provider's rate limits.
    pub fn with_rate_limits(mut self, limits: keel_protocol::RateLimitSnapshot) -> Self {
        self.rate_limits = Some(limits);
        self
    }

    /// The provider's rate limits as the response's headers stated them, if they did.
    pub fn rate_limits(&self) -> Option<&keel_protocol::RateLimitSnapshot> {
        self.rate_limits.as_ref()
    }

    /// The next event, or `None` when the stream is over. Cancel-safe: state changes only
    /// once a frame has been read whole.
    pub async fn next(&mut self) -> Option<Result<ResponseEvent>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            let mapped = match &mut self.source {
                Source::Events(events) => match next_within(events, self.idle_timeout).await {
                    Err(idle) => {
                        self.finished = true;
                        return Some(Err(CoreError::StreamIdle(idle)));
                    }
                    Ok(Some(event)) => event.map(|event| vec![event]),
                    Ok(None) => {
                        self.finished = true;
                        return Some(Err(CoreError::Stream(
                            "stream closed before response.completed".to_string(),
                        )));
                    }
                },
                Source::Sse { frames, decoder } => {
                    // A Chat server that gave its `finish_reason` has finished its answer; some
                    // keep the stream open after it (no usage, no `[DONE]`): wait a moment for
                    // the usage chunk, then end the answer rather than wait for the idle timeout.
                    let next = if decoder.answered() {
                        match tokio::time::timeout(CHAT_AFTER_FINISH_WAIT, frames.next()).await {
                            Ok(next) => next,
                            Err(_) => {
                                self.finished = true;
                                self.ready.extend(decoder.finish());
                                continue;
                            }
                        }
                    } else {
                        frames.next().await
                    };
                    let Some(frame) = next else {
                        self.finished = true;
                        // A Chat server that said why it stopped (`finish_reason`) and closed
                        // the stream without `[DONE]` has finished its answer; anything else
                        // is broken.
                        if decoder.answered() {
                            self.ready.extend(decoder.finish());
                            continue;
                        }
                        return Some(Err(CoreError::Stream(
                            "stream closed before response.completed".to_string(),
                        )));
                    };
                    frame.and_then(|frame| decoder.map_frame(&frame))
                }
            };
            match mapped {
                Ok(events) => {
                    self.finished = events
                        .iter()
                        .any(|event| matches!(event, ResponseEvent::Completed { .. }));
                    self.ready.extend(events);
                }
                Err(err) => {
                    self.finished = true;
                    return Some(Err(err));
                }
            }
        }
    }
}

/// The next event, or `Err` with the bound when none came within it.
async fn next_within(
    events: &mut Pin<Box<dyn Stream<Item = Result<ResponseEvent>> + Send>>,
    idle: Option<Duration>,
) -> std::result::Result<Option<Result<ResponseEvent>>, Duration> {
    match idle {
        Some(idle) => tokio::time::timeout(idle, events.next())
            .await
            .map_err(|_| idle),
        None => Ok(events.next().await),
    }
}
