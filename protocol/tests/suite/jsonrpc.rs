use keel_protocol::{
    JsonRpcError, JsonRpcErrorObject, JsonRpcFraming, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, RequestId,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn samples() -> Vec<JsonRpcMessage> {
    vec![
        JsonRpcRequest {
            id: RequestId::Integer(1),
            method: "initialize".into(),
            params: Some(json!({"clientName": "t"})),
            trace: None,
        }
        .into(),
        JsonRpcRequest {
            id: RequestId::String("abc".into()),
            method: "ping".into(),
            params: None,
            trace: None,
        }
        .into(),
        JsonRpcNotification {
            method: "initialized".into(),
            params: None,
        }
        .into(),
        JsonRpcResponse {
            id: RequestId::Integer(7),
            result: json!({}),
        }
        .into(),
        JsonRpcResponse {
            id: RequestId::Integer(8),
            result: serde_json::Value::Null,
        }
        .into(),
        JsonRpcError {
            id: Some(RequestId::Integer(9)),
            error: JsonRpcErrorObject::new(-32601, "method not found: x"),
        }
        .into(),
        JsonRpcError {
            id: None,
            error: JsonRpcErrorObject {
                code: -32700,
                message: "parse error".into(),
                data: Some(json!({"line": 1})),
            },
        }
        .into(),
    ]
}

#[test]
fn every_message_round_trips_with_and_without_version() -> anyhow::Result<()> {
    for message in samples() {
        for framing in [JsonRpcFraming::WithVersion, JsonRpcFraming::WithoutVersion] {
            let line = message.to_json(framing)?;
            assert_eq!(
                line.contains("\"jsonrpc\":\"2.0\""),
                framing == JsonRpcFraming::WithVersion,
                "{line}"
            );
            assert_eq!(JsonRpcMessage::from_json(&line)?, message, "{line}");
        }
    }
    Ok(())
}

#[test]
fn golden_lines() -> anyhow::Result<()> {
    let request: JsonRpcMessage = JsonRpcRequest {
        id: RequestId::Integer(1),
        method: "initialize".into(),
        params: Some(json!({"clientName": "t"})),
        trace: None,
    }
    .into();
    assert_eq!(
        request.to_json(JsonRpcFraming::WithoutVersion)?,
        r#"{"id":1,"method":"initialize","params":{"clientName":"t"}}"#
    );
    let error: JsonRpcMessage = JsonRpcError {
        id: None,
        error: JsonRpcErrorObject::new(-32700, "bad"),
    }
    .into();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&error.to_json(JsonRpcFraming::WithVersion)?)?,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}})
    );
    Ok(())
}

#[test]
fn classifies_messages_by_members() -> anyhow::Result<()> {
    assert!(matches!(
        JsonRpcMessage::from_json(r#"{"jsonrpc":"2.0","id":"x","method":"m"}"#)?,
        JsonRpcMessage::Request(_)
    ));
    assert!(matches!(
        JsonRpcMessage::from_json(r#"{"method":"m","params":{"a":1}}"#)?,
        JsonRpcMessage::Notification(_)
    ));
    assert!(matches!(
        JsonRpcMessage::from_json(r#"{"id":1,"result":null}"#)?,
        JsonRpcMessage::Response(_)
    ));
    assert!(matches!(
        JsonRpcMessage::from_json(r#"{"id":1,"error":{"code":1,"message":"m"}}"#)?,
        JsonRpcMessage::Error(_)
    ));
    Ok(())
}

#[test]
fn rejects_what_is_not_json_rpc_with_a_reason() {
    let cases = [
        (r#"{"id":1}"#, "none of `method`, `result` or `error`"),
        (r#"{"result":1}"#, "missing field `id`"),
        (
            r#"{"jsonrpc":"1.0","method":"m"}"#,
            "unsupported jsonrpc version `1.0`",
        ),
        (
            r#"{"id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            "both `result` and `error`",
        ),
        (r#"{"id":1.5,"method":"m"}"#, "id"),
        (
            r#"{"id":1,"error":{"message":"m"}}"#,
            "missing field `code`",
        ),
        (r#"[1,2]"#, "expected"),
        ("not json", "expected"),
    ];
    for (line, needle) in cases {
        let err = JsonRpcMessage::from_json(line).unwrap_err().to_string();
        assert!(err.contains(needle), "{line}: {err}");
    }
}
