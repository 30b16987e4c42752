//! Framing shared by server and client: newline-delimited JSON over byte streams, and one
//! message per websocket frame. Transports move text; JSON-RPC lives above them. The one
//! exception is output, which carries almost every byte: a server's writer encodes output
//! events itself, straight into its write buffer, and a client's line reader decodes them
//! straight out of its read buffer (see `codec`).

pub(crate) mod lines;
pub(crate) mod websocket;

/// Largest message accepted on any transport, the same for every Keel server. A server skips
/// a longer line and answers it (`Frame::Rejected`); a client closes the connection.
pub(crate) const MAX_MESSAGE_BYTES: usize = keel_protocol::DEFAULT_MAX_LINE_BYTES;

/// Messages queued between a transport's reader and the task that handles them. Full: the
/// reader stops reading, so a fast peer is slowed by socket or pipe backpressure.
pub(crate) const INCOMING_CHANNEL_CAPACITY: usize = 32;

/// Messages queued for a transport's writer (output events still raw: the writer encodes
/// them). Full: whoever produces them waits, which in turn stalls the output pumps (see the
/// handler's event channel).
pub(crate) const OUTGOING_CHANNEL_CAPACITY: usize = 16;

/// One message for a transport's writer.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// An encoded message.
    Text(String),
    /// A process event, encoded by the writer.
    Event(crate::event::ExecServerEvent),
}

impl From<String> for Outgoing {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

/// One message read from a transport.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A message's text (not yet parsed).
    Text(String),
    /// A message's raw bytes, not necessarily checked to be UTF-8 (the receiver checks what
    /// it parses): line readers and websocket text frames hand messages over this way, without
    /// copying, so output notifications are decoded straight from the received bytes.
    Line(bytes::Bytes),
    /// A message the reader already parsed (the server's stdin reader does).
    Message(keel_protocol::JsonRpcMessage),
    /// An output notification the reader already decoded.
    Event(crate::event::ExecServerEvent),
    /// Something that cannot be a message (not UTF-8, too long); the connection must close.
    Invalid(String),
    /// A line a server answers with an error and skips (too long, not UTF-8); the
    /// connection goes on.
    Rejected(keel_protocol::FrameError),
}
