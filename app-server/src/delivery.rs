//! The delivery contract of one consumer (a connection's writer, or an in-process client):
//! a bounded queue that never blocks whoever pushes into it.
//!
//! - Messages that end or gate work (responses, server requests, `turn/*`, `item/started`,
//!   `item/completed`, `error`, ...) are never dropped.
//! - Streaming deltas ([`is_droppable`]) are dropped when the queue is full, oldest first
//!   to make room for a message that must arrive; the consumer is then told how many it
//!   missed ([`Delivered::Missed`]) before its next message. Every delta's content is also in
//!   the `item/completed` that follows, so nothing is lost but the live view.
//! - When the queue is full of messages that must arrive, the consumer is too slow to serve:
//!   the queue closes, [`DeliveryQueue::push`] reports it, and the owner disconnects this
//!   consumer alone. The engine and other consumers never wait for it.
//! - A lossless queue ([`DeliveryQueue::lossless`], for an in-process client that asked for
//!   every message, such as `keel exec` writing to a pipe) drops nothing and never
//!   overflows; instead the engine's event pump waits for room before it delivers, so a slow
//!   consumer slows the turns it follows.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use keel_protocol::{JsonRpcFraming, JsonRpcMessage, JsonRpcResponse, RequestId};
use serde_json::value::RawValue;
use tokio::sync::Notify;

/// Messages a consumer may fall behind by before deltas are dropped. A turn produces a few
/// essential messages per tool call, so thousands leave a paused consumer seconds of room.
pub(crate) const DELIVERY_CAPACITY: usize = 4096;

/// Notification methods whose loss a consumer survives: each only previews content that a
/// later message (`item/completed`, the next usage or diff update) carries whole.
pub(crate) const DROPPABLE_METHODS: &[&str] = &[
    "item/agentMessage/delta",
    "item/commandExecution/outputDelta",
    "item/fileChange/outputDelta",
    "item/plan/delta",
    "item/reasoning/summaryPartAdded",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/textDelta",
    "thread/tokenUsage/updated",
    "turn/diff/updated",
];

/// Whether `message` may be dropped for a consumer that cannot keep up.
pub(crate) fn is_droppable(message: &JsonRpcMessage) -> bool {
    matches!(message, JsonRpcMessage::Notification(n) if DROPPABLE_METHODS.contains(&n.method.as_str()))
}

/// A queued message: one copy shared by every consumer it goes to (a thread's subscribers),
/// turned into its wire text at most once.
#[derive(Debug, Clone)]
pub(crate) struct SharedMessage(Arc<SharedInner>);

#[derive(Debug)]
struct SharedInner {
    payload: Payload,
    /// The line a remote client gets (without the `jsonrpc` member); `None` if unencodable.
    line: OnceLock<Option<Arc<str>>>,
}

#[derive(Debug)]
enum Payload {
    /// A message as values.
    Message(JsonRpcMessage),
    /// A response whose result is already JSON text: a large result (a long thread's turns)
    /// goes to the wire without ever being a `serde_json::Value` tree.
    RawResponse {
        id: RequestId,
        result: Box<RawValue>,
    },
}

impl SharedMessage {
    /// Wraps a message for queueing.
    pub(crate) fn new(message: JsonRpcMessage) -> Self {
        Self::with_payload(Payload::Message(message))
    }

    /// A response whose result is JSON text already.
    pub(crate) fn raw_response(id: RequestId, result: Box<RawValue>) -> Self {
        Self::with_payload(Payload::RawResponse { id, result })
    }

    fn with_payload(payload: Payload) -> Self {
        Self(Arc::new(SharedInner {
            payload,
            line: OnceLock::new(),
        }))
    }

    /// Whether the message may be dropped for a consumer that cannot keep up.
    fn is_droppable(&self) -> bool {
        match &self.0.payload {
            Payload::Message(message) => is_droppable(message),
            Payload::RawResponse { .. } => false,
        }
    }

    /// The wire text, encoded by the first consumer that asks; `None` (logged) if the message
    /// cannot be encoded.
    pub(crate) fn line(&self) -> Option<Arc<str>> {
        self.0
            .line
            .get_or_init(|| {
                let encoded = match &self.0.payload {
                    Payload::Message(message) => message.to_json(JsonRpcFraming::WithoutVersion),
                    Payload::RawResponse { id, result } => serde_json::to_string(id)
                        .map(|id| format!("{{\"id\":{id},\"result\":{}}}", result.get())),
                };
                match encoded {
                    Ok(line) => Some(Arc::from(line)),
                    Err(err) => {
                        tracing::error!("cannot serialise an outgoing message: {err}");
                        None
                    }
                }
            })
            .clone()
    }

    /// The message itself, copied only if another consumer still holds it.
    pub(crate) fn into_message(self) -> JsonRpcMessage {
        let payload = match Arc::try_unwrap(self.0) {
            Ok(inner) => inner.payload,
            Err(shared) => match &shared.payload {
                Payload::Message(message) => Payload::Message(message.clone()),
                Payload::RawResponse { id, result } => Payload::RawResponse {
                    id: id.clone(),
                    result: result.clone(),
                },
            },
        };
        match payload {
            Payload::Message(message) => message,
            Payload::RawResponse { id, result } => {
                let result = serde_json::from_str(result.get()).unwrap_or_else(|err| {
                    tracing::error!("a serialised result does not read back: {err}");
                    serde_json::Value::Null
                });
                JsonRpcMessage::Response(JsonRpcResponse { id, result })
            }
        }
    }
}

impl From<JsonRpcMessage> for SharedMessage {
    fn from(message: JsonRpcMessage) -> Self {
        Self::new(message)
    }
}

impl PartialEq for SharedMessage {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0.payload, &other.0.payload) {
            (Payload::Message(a), Payload::Message(b)) => a == b,
            (
                Payload::RawResponse { id: a, result: x },
                Payload::RawResponse { id: b, result: y },
            ) => a == b && x.get() == y.get(),
            _ => false,
        }
    }
}

/// What the consumer gets next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Delivered {
    /// The next message, in order.
    Message(SharedMessage),
    /// This many droppable messages were dropped since the last delivery.
    Missed(u64),
}

/// Why a push was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue was closed (the consumer is gone).
    Closed,
    /// The queue was full of messages that must arrive; it is closed now.
    Overflow,
}

#[derive(Default)]
struct State {
    queue: VecDeque<SharedMessage>,
    missed: u64,
    closed: bool,
    /// Closed for overflow: what is queued is abandoned, not drained.
    abandoned: bool,
}

/// A bounded, never-blocking queue for one consumer; see the module docs.
pub(crate) struct DeliveryQueue {
    capacity: usize,
    /// Never drops nor overflows: whoever feeds it waits for room first
    /// ([`DeliveryQueue::wait_for_room`]), so nothing is lost and memory stays bounded.
    lossless: bool,
    state: Mutex<State>,
    ready: Notify,
    /// Signalled whenever the consumer takes a message.
    room: Notify,
}

impl DeliveryQueue {
    /// An empty queue holding at most `capacity` messages.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            lossless: false,
            state: Mutex::new(State::default()),
            ready: Notify::new(),
            room: Notify::new(),
        }
    }

    /// A queue for a consumer that must get every message: pushes are never refused for
    /// being over `capacity`; producers pace themselves with [`DeliveryQueue::wait_for_room`].
    pub(crate) fn lossless(capacity: usize) -> Self {
        Self {
            lossless: true,
            ..Self::new(capacity)
        }
    }

    /// Resolves once the queue holds fewer than its capacity (or is closed). Cancel-safe.
    pub(crate) async fn wait_for_room(&self) {
        loop {
            let room = self.room.notified();
            {
                let state = self.lock();
                if state.closed || state.queue.len() < self.capacity {
                    return;
                }
            }
            room.await;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `message` without waiting. A full queue drops a droppable message (this one,
    /// or the oldest queued one to make room for a message that must arrive).
    pub(crate) fn push(&self, message: impl Into<SharedMessage>) -> Result<(), Refused> {
        let message = message.into();
        let mut state = self.lock();
        if state.closed {
            return Err(Refused::Closed);
        }
        if state.queue.len() >= self.capacity && !self.lossless {
            if message.is_droppable() {
                state.missed += 1;
                return Ok(());
            }
            match state.queue.iter().position(SharedMessage::is_droppable) {
                Some(oldest) => {
                    state.queue.remove(oldest);
                    state.missed += 1;
                }
                None => {
                    state.closed = true;
                    state.abandoned = true;
                    state.queue.clear();
                    drop(state);
                    self.ready.notify_one();
                    return Err(Refused::Overflow);
                }
            }
        }
        state.queue.push_back(message);
        drop(state);
        self.ready.notify_one();
        Ok(())
    }

    /// Whether [`DeliveryQueue::next`] would return at once: writers flush only when it would
    /// not, so a burst goes out in few writes.
    pub(crate) fn has_ready(&self) -> bool {
        let state = self.lock();
        !state.queue.is_empty() || state.missed > 0
    }

    /// Adds `count` messages dropped upstream (by a queue feeding this one) to what this
    /// consumer is told it missed.
    pub(crate) fn record_missed(&self, count: u64) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.missed += count;
        drop(state);
        self.ready.notify_one();
    }

    /// Closes the queue: what is queued is still delivered, then [`DeliveryQueue::next`]
    /// ends.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
        self.room.notify_waiters();
    }

    /// The next delivery; `None` once closed and drained (or abandoned for overflow).
    /// Cancel-safe: a cancelled call takes nothing. One consumer at a time.
    pub(crate) async fn next(&self) -> Option<Delivered> {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.lock();
                if state.abandoned {
                    return None;
                }
                if state.missed > 0 {
                    return Some(Delivered::Missed(std::mem::take(&mut state.missed)));
                }
                if let Some(message) = state.queue.pop_front() {
                    drop(state);
                    self.room.notify_waiters();
                    return Some(Delivered::Message(message));
                }
                if state.closed {
                    return None;
                }
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use keel_protocol::{JsonRpcNotification, JsonRpcResponse, RequestId};
    use pretty_assertions::assert_eq;

    use super::*;

    fn note(method: &str) -> JsonRpcMessage {
        JsonRpcMessage::Notification(JsonRpcNotification {
            method: method.into(),
            params: None,
        })
    }

    fn response(id: i64) -> JsonRpcMessage {
        JsonRpcMessage::Response(JsonRpcResponse {
            id: RequestId::Integer(id),
            result: serde_json::Value::Null,
        })
    }

    async fn drain(queue: &DeliveryQueue) -> Vec<Delivered> {
        queue.close();
        let mut out = Vec::new();
        while let Some(next) = queue.next().await {
            out.push(next);
        }
        out
    }

    #[tokio::test]
    async fn deltas_give_way_and_the_consumer_is_told_how_many() {
        let queue = DeliveryQueue::new(2);
        assert_eq!(queue.push(note("item/agentMessage/delta")), Ok(()));
        assert_eq!(queue.push(note("item/started")), Ok(()));
        // Full: a delta is dropped, an essential message evicts the queued delta.
        assert_eq!(queue.push(note("item/agentMessage/delta")), Ok(()));
        assert_eq!(queue.push(note("turn/completed")), Ok(()));
        assert_eq!(
            drain(&queue).await,
            [
                Delivered::Missed(2),
                Delivered::Message(note("item/started").into()),
                Delivered::Message(note("turn/completed").into()),
            ]
        );
    }

    #[tokio::test]
    async fn a_lossless_queue_keeps_every_delta_and_makes_its_producer_wait() {
        let queue = Arc::new(DeliveryQueue::lossless(2));
        for _ in 0..3 {
            assert_eq!(queue.push(note("item/agentMessage/delta")), Ok(()));
        }
        let producer = tokio::spawn({
            let queue = queue.clone();
            async move { queue.wait_for_room().await }
        });
        tokio::task::yield_now().await;
        assert!(!producer.is_finished());
        queue.next().await;
        assert!(queue.has_ready());
        queue.next().await;
        tokio::time::timeout(std::time::Duration::from_secs(10), producer)
            .await
            .expect("the producer is let go once there is room")
            .expect("the producer ends");
        assert_eq!(
            queue.next().await,
            Some(Delivered::Message(note("item/agentMessage/delta").into()))
        );
    }

    #[tokio::test]
    async fn a_queue_full_of_essential_messages_overflows_and_closes() {
        let queue = DeliveryQueue::new(2);
        assert_eq!(queue.push(response(1)), Ok(()));
        assert_eq!(queue.push(note("item/completed")), Ok(()));
        assert_eq!(queue.push(response(2)), Err(Refused::Overflow));
        assert_eq!(queue.push(response(3)), Err(Refused::Closed));
        assert_eq!(queue.next().await, None);
    }

    #[tokio::test]
    async fn a_waiting_consumer_is_woken_and_close_drains_first() {
        let queue = std::sync::Arc::new(DeliveryQueue::new(8));
        let consumer = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.next().await })
        };
        assert_eq!(queue.push(response(1)), Ok(()));
        assert_eq!(
            consumer.await.ok().flatten(),
            Some(Delivered::Message(response(1).into()))
        );
        assert_eq!(queue.push(response(2)), Ok(()));
        assert_eq!(
            drain(&queue).await,
            [Delivered::Message(response(2).into())]
        );
    }

    #[tokio::test]
    async fn drops_counted_upstream_are_reported_before_the_next_message() {
        let queue = DeliveryQueue::new(4);
        queue.record_missed(3);
        queue.push(note("turn/completed")).expect("room");
        let out = drain(&queue).await;
        assert!(matches!(out[0], Delivered::Missed(3)), "{out:?}");
        assert!(matches!(out[1], Delivered::Message(_)), "{out:?}");
    }
}
