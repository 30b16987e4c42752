//! Events to and from JSON-RPC notifications. Output deltas take hand-written fast paths on
//! both sides: they carry almost every byte a server sends, base64 needs no JSON escaping, and
//! a SIMD codec (`base64-simd`) encodes the chunk straight into the line and decodes it
//! straight out of it.

use base64_simd::STANDARD;
use bytes::Bytes;
use keel_protocol::exec_server::{
    ExecOutputStream, ExecServerNotification, ExitedNotification, OutputDeltaNotification,
};
use keel_protocol::{Base64Bytes, ExecSessionId, JsonRpcNotification, MethodTable};

use crate::buffers::BufferPool;
use crate::event::ExecServerEvent;

/// Capacity of the buffers output chunks are decoded into: the largest chunk this server
/// sends. A larger one (another implementation's) grows its buffer, which is then freed
/// rather than pooled.
pub(crate) const DECODED_CHUNK_BYTES: usize = 256 * 1024;

/// Idle decode buffers a client keeps (2 MiB).
pub(crate) const IDLE_DECODE_BUFFERS: usize = 8;

/// Start of every `outputDelta` line this server writes, up to the session id's JSON string.
const OUTPUT_DELTA_PREFIX: &str = r#"{"method":"command/exec/outputDelta","params":{"sessionId":"#;

/// What follows the session id, per stream, up to the chunk's base64 text.
const STDOUT_INFIX: &str = r#","stream":"stdout","chunk":""#;
const STDERR_INFIX: &str = r#","stream":"stderr","chunk":""#;

/// End of every `outputDelta` line, after the chunk's base64 text.
const OUTPUT_DELTA_SUFFIX: &str = r#""}}"#;

/// Encodes an event as the JSON-RPC notification line the protocol specifies.
pub(crate) fn encode_event(event: &ExecServerEvent) -> serde_json::Result<String> {
    let mut line = String::new();
    append_event(event, &mut line)?;
    Ok(line)
}

/// Appends the notification line of `event` (without a newline) to `line`: output chunks are
/// base64-encoded straight into it, so a writer can reuse one buffer for every line.
///
/// On error, `line` is left as it was.
pub(crate) fn append_event<L: LineBuffer>(
    event: &ExecServerEvent,
    line: &mut L,
) -> serde_json::Result<()> {
    match event {
        ExecServerEvent::Output {
            session_id,
            stream,
            chunk,
        } => {
            let session = serde_json::to_string(session_id.as_str())?;
            let infix = match stream {
                ExecOutputStream::Stdout => STDOUT_INFIX,
                ExecOutputStream::Stderr => STDERR_INFIX,
            };
            line.reserve(
                OUTPUT_DELTA_PREFIX.len()
                    + session.len()
                    + infix.len()
                    + STANDARD.encoded_length(chunk.len())
                    + OUTPUT_DELTA_SUFFIX.len()
                    + LINE_SLACK,
            );
            line.push_text(OUTPUT_DELTA_PREFIX);
            line.push_text(&session);
            line.push_text(infix);
            STANDARD.encode_append(chunk, line);
            line.push_text(OUTPUT_DELTA_SUFFIX);
        }
        ExecServerEvent::Exited {
            session_id,
            exit_code,
        } => {
            let text =
                serde_json::to_string(&ExecServerNotification::Exited(ExitedNotification {
                    session_id: session_id.clone(),
                    exit_code: *exit_code,
                }))?;
            line.push_text(&text);
        }
    }
    Ok(())
}

/// Spare capacity of an encoded output line beyond its text, so a line transport can append
/// the newline without reallocating.
const LINE_SLACK: usize = 1;

/// A buffer an encoded line can be appended to: a `String` for websocket text frames, a
/// byte buffer for line writers.
pub(crate) trait LineBuffer: base64_simd::AppendBase64Encode {
    /// Reserves room for `additional` more bytes.
    fn reserve(&mut self, additional: usize);
    /// Appends text.
    fn push_text(&mut self, text: &str);
}

impl LineBuffer for String {
    fn reserve(&mut self, additional: usize) {
        String::reserve(self, additional);
    }

    fn push_text(&mut self, text: &str) {
        self.push_str(text);
    }
}

impl LineBuffer for Vec<u8> {
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    fn push_text(&mut self, text: &str) {
        self.extend_from_slice(text.as_bytes());
    }
}

/// Decodes a server notification into an event.
pub(crate) fn decode_notification(
    notification: JsonRpcNotification,
) -> serde_json::Result<ExecServerEvent> {
    let typed =
        ExecServerNotification::from_method_and_params(&notification.method, notification.params)?;
    Ok(event_from_notification(typed))
}

/// Decodes an `outputDelta` line written exactly as [`encode_event`] writes it (member order,
/// no whitespace, unescaped base64), decoding the chunk straight from the line into a buffer
/// lent by `buffers` (a small chunk gets an allocation of its own size instead, so it never
/// pins a large buffer). `None` for any other line, which must then take the general path:
/// this one only recognises, it never rejects.
pub(crate) fn decode_output_delta_line(
    line: &[u8],
    buffers: &BufferPool,
) -> Option<ExecServerEvent> {
    let rest = line.strip_prefix(OUTPUT_DELTA_PREFIX.as_bytes())?;
    let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<String>();
    let session_id = values.next()?.ok()?;
    let rest = &rest[values.byte_offset()..];
    let (stream, rest) = if let Some(rest) = rest.strip_prefix(STDOUT_INFIX.as_bytes()) {
        (ExecOutputStream::Stdout, rest)
    } else {
        (
            ExecOutputStream::Stderr,
            rest.strip_prefix(STDERR_INFIX.as_bytes())?,
        )
    };
    // The decoder accepts only the base64 alphabet, so a chunk that decodes holds no quote or
    // escape: the suffix really is where the JSON string ends.
    let chunk = rest.strip_suffix(OUTPUT_DELTA_SUFFIX.as_bytes())?;
    let chunk = if STANDARD.decoded_length(chunk).ok()? < buffers.buffer_bytes() / 2 {
        Bytes::from(STANDARD.decode_to_vec(chunk).ok()?)
    } else {
        let mut buffer = buffers.take();
        if STANDARD.decode_append(chunk, &mut buffer).is_err() {
            buffers.give_back(buffer);
            return None;
        }
        buffers.share(buffer)
    };
    Some(ExecServerEvent::Output {
        session_id: ExecSessionId::new(session_id),
        stream,
        chunk,
    })
}

/// Decodes a line that is known to be a notification, without an intermediate JSON tree.
pub(crate) fn decode_notification_line(line: &str) -> serde_json::Result<ExecServerEvent> {
    serde_json::from_str::<ExecServerNotification>(line).map(event_from_notification)
}

fn event_from_notification(notification: ExecServerNotification) -> ExecServerEvent {
    match notification {
        ExecServerNotification::OutputDelta(OutputDeltaNotification {
            session_id,
            stream,
            chunk,
        }) => ExecServerEvent::Output {
            session_id,
            stream,
            chunk: Base64Bytes::into_inner(chunk).into(),
        },
        ExecServerNotification::Exited(ExitedNotification {
            session_id,
            exit_code,
        }) => ExecServerEvent::Exited {
            session_id,
            exit_code,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn fast_path_matches_the_typed_encoding() {
        let event = ExecServerEvent::Output {
            session_id: ExecSessionId::new("session-\"7\""),
            stream: ExecOutputStream::Stderr,
            chunk: bytes::Bytes::from_static(b"\x00\xffhello\n"),
        };
        let fast: serde_json::Value = serde_json::from_str(&encode_event(&event).unwrap()).unwrap();
        let typed = serde_json::to_value(ExecServerNotification::OutputDelta(
            OutputDeltaNotification {
                session_id: ExecSessionId::new("session-\"7\""),
                stream: ExecOutputStream::Stderr,
                chunk: Base64Bytes(b"\x00\xffhello\n".to_vec()),
            },
        ))
        .unwrap();
        assert_eq!(fast, typed);
        assert_eq!(
            decode_notification_line(&encode_event(&event).unwrap()).unwrap(),
            event
        );
    }

    #[test]
    fn output_lines_decode_straight_from_the_line() {
        for (stream, chunk) in [
            (ExecOutputStream::Stdout, &b""[..]),
            (ExecOutputStream::Stderr, &b"\x00\xff\n"[..]),
            (ExecOutputStream::Stdout, &[7u8; 100_001][..]),
            (ExecOutputStream::Stdout, &[9u8; DECODED_CHUNK_BYTES][..]),
            (
                ExecOutputStream::Stderr,
                &[3u8; DECODED_CHUNK_BYTES + 5][..],
            ),
        ] {
            let event = ExecServerEvent::Output {
                session_id: ExecSessionId::new("session-\"7\"\\"),
                stream,
                chunk: bytes::Bytes::copy_from_slice(chunk),
            };
            let line = encode_event(&event).unwrap();
            let buffers = BufferPool::new(DECODED_CHUNK_BYTES, 1);
            assert_eq!(
                decode_output_delta_line(line.as_bytes(), &buffers),
                Some(event)
            );
        }
    }

    #[test]
    fn other_spellings_are_left_to_the_general_path() {
        let escaped = r#"{"method":"command/exec/outputDelta","params":{"sessionId":"s","stream":"stdout","chunk":"a\/8="}}"#;
        let reordered = r#"{"method":"command/exec/outputDelta","params":{"stream":"stdout","sessionId":"s","chunk":"aGk="}}"#;
        let spaced = r#"{"method":"command/exec/outputDelta","params":{"sessionId":"s","stream":"stdout","chunk":"aGk="} }"#;
        for line in [escaped, reordered, spaced] {
            let buffers = BufferPool::new(DECODED_CHUNK_BYTES, 1);
            assert_eq!(
                decode_output_delta_line(line.as_bytes(), &buffers),
                None,
                "{line}"
            );
            assert!(matches!(
                decode_notification_line(line).unwrap(),
                ExecServerEvent::Output { .. }
            ));
        }
    }

    #[test]
    fn exit_round_trips() {
        let event = ExecServerEvent::Exited {
            session_id: ExecSessionId::new("session-1"),
            exit_code: 137,
        };
        let line = encode_event(&event).unwrap();
        assert_eq!(
            line,
            r#"{"method":"command/exec/exited","params":{"sessionId":"session-1","exitCode":137}}"#
        );
        assert_eq!(decode_notification_line(&line).unwrap(), event);
    }
}
