use keel_protocol::exec_server::{ExecServerNotification, ExecServerRequest};
use keel_protocol::{Event, MethodTable, Submission};
use serde_json::json;

fn err_text<T: serde::de::DeserializeOwned + std::fmt::Debug>(value: serde_json::Value) -> String {
    match serde_json::from_value::<T>(value) {
        Ok(parsed) => panic!("expected an error, parsed {parsed:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn missing_field_is_named() {
    let err = err_text::<Event>(json!({"id": "1", "msg": {"type": "task_complete"}}));
    assert!(err.contains("missing field `turn_id`"), "{err}");
    let err =
        err_text::<Submission>(json!({"id": "1", "op": {"type": "exec_approval", "id": "c1"}}));
    assert!(err.contains("missing field `decision`"), "{err}");
}

#[test]
fn wrong_type_is_named() {
    let err = err_text::<Event>(json!({"id": "1", "msg": {"type": "agent_message", "message": 5}}));
    assert!(
        err.contains("invalid type: integer `5`, expected a string"),
        "{err}"
    );
    let err = err_text::<Submission>(
        json!({"id": "1", "op": {"type": "exec_approval", "id": "c1", "decision": "maybe"}}),
    );
    assert!(err.contains("unknown variant `maybe`"), "{err}");
}

#[test]
fn unknown_type_tag_is_named() {
    let err = err_text::<Event>(json!({"id": "1", "msg": {"type": "no_such_event"}}));
    assert!(err.contains("unknown variant `no_such_event`"), "{err}");
    let err = err_text::<Submission>(json!({"id": "1", "op": {"type": "explode"}}));
    assert!(err.contains("unknown variant `explode`"), "{err}");
}

#[test]
fn unknown_method_is_named() {
    let err = ExecServerRequest::from_method_and_params("command/launch", Some(json!({})))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `command/launch`"), "{err}");
    let err = ExecServerNotification::from_method_and_params("command/exec/bogus", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown variant `command/exec/bogus`"),
        "{err}"
    );
}

#[test]
fn bad_params_name_the_field() {
    let err =
        ExecServerRequest::from_method_and_params("command/exec", Some(json!({"argv": ["ls"]})))
            .unwrap_err()
            .to_string();
    assert!(err.contains("missing field `cwd`"), "{err}");
    let err = ExecServerRequest::from_method_and_params(
        "command/exec/write",
        Some(json!({"sessionId": "s", "chunk": "%%%"})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("invalid base64 chunk"), "{err}");
    let err = ExecServerRequest::from_method_and_params(
        "command/exec/resize",
        Some(json!({"sessionId": "s", "rows": -1, "cols": 80})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("invalid value: integer `-1`"), "{err}");
}

#[test]
fn garbage_never_panics() {
    let inputs = [
        "",
        "{",
        "null",
        "[]",
        "\"x\"",
        "{\"id\":{}}",
        "{\"msg\":null}",
        "{\"type\":1}",
    ];
    for input in inputs {
        assert!(serde_json::from_str::<Event>(input).is_err(), "{input}");
        assert!(
            serde_json::from_str::<Submission>(input).is_err(),
            "{input}"
        );
        assert!(
            keel_protocol::JsonRpcMessage::from_json(input).is_err(),
            "{input}"
        );
    }
}
