//! One server-sent-event stream of a Streamable HTTP session, kept so that a client whose
//! connection dropped can resume it with `Last-Event-ID` and miss nothing.
//!
//! Messages are numbered from 1 within their stream; an event id is `STREAM-SEQ`, so the id a
//! client resumes from names both the stream and the place in it. The priming event a fresh
//! connection starts with has sequence 0.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::Stream;
use keel_protocol::JsonRpcMessage;
use tokio::sync::watch;

/// Messages kept per stream for resumption. A stream that outgrows it (a client gone for a
/// whole long turn) drops its oldest messages, logged; 4096 covers a turn's events.
const RETAINED_MESSAGES: usize = 4096;

/// A stream's messages, in order, and whether its last one has been written.
pub(crate) struct EventLog {
    /// The stream's number within its session (0 is the standalone GET stream).
    number: u64,
    inner: Mutex<Inner>,
    /// Bumped on every append and on close, so followers never miss a wake-up.
    version: watch::Sender<u64>,
}

struct Inner {
    /// `(sequence, message)`, oldest first.
    messages: VecDeque<(u64, Arc<JsonRpcMessage>)>,
    next_sequence: u64,
    closed: bool,
}

/// One event to write: its id and the message (`None` for the priming event).
pub(crate) struct LoggedEvent {
    /// `STREAM-SEQ`.
    pub(crate) id: String,
    /// The event's place in its stream (`SEQ`).
    pub(crate) sequence: u64,
    /// The message; `None` for the priming event.
    pub(crate) message: Option<Arc<JsonRpcMessage>>,
}

impl EventLog {
    /// An empty, open stream.
    pub(crate) fn new(number: u64) -> Arc<Self> {
        Arc::new(Self {
            number,
            inner: Mutex::new(Inner {
                messages: VecDeque::new(),
                next_sequence: 1,
                closed: false,
            }),
            version: watch::Sender::new(0),
        })
    }

    /// The stream's number within its session.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Each critical section is one queue operation; a poisoned queue is still valid.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a message; `close` marks it the stream's last (the response it exists for).
    pub(crate) fn push(&self, message: JsonRpcMessage, close: bool) {
        {
            let mut inner = self.lock();
            if inner.closed {
                tracing::debug!(
                    stream = self.number,
                    "message for a finished stream; dropped"
                );
                return;
            }
            let sequence = inner.next_sequence;
            inner.next_sequence += 1;
            inner.messages.push_back((sequence, Arc::new(message)));
            if inner.messages.len() > RETAINED_MESSAGES {
                inner.messages.pop_front();
                tracing::warn!(
                    stream = self.number,
                    "more than {RETAINED_MESSAGES} messages unread; the oldest is no longer resumable"
                );
            }
            inner.closed |= close;
        }
        self.version.send_modify(|version| *version += 1);
    }

    /// Ends the stream without a final message (its session is going away).
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.version.send_modify(|version| *version += 1);
    }

    /// The sequence of the newest message (0 when there is none yet).
    pub(crate) fn last_sequence(&self) -> u64 {
        self.lock().next_sequence - 1
    }

    /// Whether the stream's last message has been written.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The id of the priming event a fresh connection to this stream starts with.
    pub(crate) fn priming_id(&self) -> String {
        format!("{}-0", self.number)
    }

    /// Every message after sequence `after`, then each new one as it is written, until the
    /// stream closes.
    pub(crate) fn follow(self: &Arc<Self>, after: u64) -> impl Stream<Item = LoggedEvent> + use<> {
        let log = Arc::clone(self);
        let changes = self.version.subscribe();
        futures::stream::unfold(
            (log, changes, after),
            |(log, mut changes, mut after)| async move {
                loop {
                    changes.borrow_and_update();
                    let (next, closed) = {
                        let inner = log.lock();
                        let next = inner
                            .messages
                            .iter()
                            .find(|(sequence, _)| *sequence > after)
                            .cloned();
                        (next, inner.closed)
                    };
                    if let Some((sequence, message)) = next {
                        after = sequence;
                        let event = LoggedEvent {
                            id: format!("{}-{sequence}", log.number),
                            sequence,
                            message: Some(message),
                        };
                        return Some((event, (log, changes, after)));
                    }
                    if closed || changes.changed().await.is_err() {
                        return None;
                    }
                }
            },
        )
    }
}

/// Splits an event id `STREAM-SEQ` into its numbers.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, sequence) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, sequence.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use keel_protocol::JsonRpcNotification;

    fn note(n: u64) -> JsonRpcMessage {
        JsonRpcNotification {
            method: format!("n{n}"),
            params: None,
        }
        .into()
    }

    fn method(event: &LoggedEvent) -> String {
        match event.message.as_deref() {
            Some(JsonRpcMessage::Notification(n)) => n.method.clone(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_follower_resumes_after_the_id_it_last_saw() {
        let log = EventLog::new(7);
        log.push(note(1), false);
        log.push(note(2), false);
        let mut from_start = Box::pin(log.follow(0));
        let first = from_start.next().await.unwrap();
        assert_eq!(first.id, "7-1");
        assert_eq!(parse_event_id(&first.id), Some((7, 1)));
        let mut resumed = Box::pin(log.follow(1));
        let writer = {
            let log = Arc::clone(&log);
            tokio::spawn(async move { log.push(note(3), true) })
        };
        let rest: Vec<_> = resumed.by_ref().collect().await;
        writer.await.unwrap();
        assert_eq!(
            rest.iter().map(method).collect::<Vec<_>>(),
            ["n2", "n3"],
            "nothing after the resumed id is lost, and the stream ends with its last message"
        );
        assert_eq!(rest.last().map(|event| event.id.as_str()), Some("7-3"));
        log.push(note(4), false);
        assert!(log.is_closed());
        assert_eq!(from_start.collect::<Vec<_>>().await.len(), 2);
    }
}
