//! Events to and from JSON-RPC notifications. Output deltas take a hand-written fast path:
//! they carry almost every byte a server sends, and base64 needs no JSON escaping.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use keel_protocol::exec_server::{
    ExecOutputStream, ExecServerNotification, ExitedNotification, OutputDeltaNotification,
};
use keel_protocol::{Base64Bytes, JsonRpcNotification, MethodTable};

use crate::event::ExecServerEvent;

/// Encodes an event as the JSON-RPC notification line the protocol specifies.
pub(crate) fn encode_event(event: &ExecServerEvent) -> serde_json::Result<String> {
    match event {
        ExecServerEvent::Output {
            session_id,
            stream,
            chunk,
        } => {
            let session = serde_json::to_string(session_id.as_str())?;
            let stream = match stream {
                ExecOutputStream::Stdout => "stdout",
                ExecOutputStream::Stderr => "stderr",
            };
            let mut line = String::with_capacity(chunk.len().div_ceil(3) * 4 + session.len() + 96);
            line.push_str(r#"{"method":"command/exec/outputDelta","params":{"sessionId":"#);
            line.push_str(&session);
            line.push_str(r#","stream":""#);
            line.push_str(stream);
            line.push_str(r#"","chunk":""#);
            STANDARD.encode_string(chunk, &mut line);
            line.push_str(r#""}}"#);
            Ok(line)
        }
        ExecServerEvent::Exited {
            session_id,
            exit_code,
        } => serde_json::to_string(&ExecServerNotification::Exited(ExitedNotification {
            session_id: session_id.clone(),
            exit_code: *exit_code,
        })),
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
    use keel_protocol::ExecSessionId;
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
