//! The JSON script format.

use std::time::Duration;

use keel_test_support::{
    Error, Fault, OutputItem, Script, Turn, Usage, apply_patch_call, assistant_message,
    custom_tool_call, function_call, reasoning,
};
use pretty_assertions::assert_eq;

#[test]
fn json_script_matches_the_rust_builders() -> anyhow::Result<()> {
    let text = r#"{
      "model": "scripted",
      "turns": [
        {"items": [
          {"type": "reasoning", "text": "hmm"},
          {"type": "shell_call", "call_id": "c1", "command": ["ls"], "workdir": "/tmp", "timeout_ms": 500},
          {"type": "function_call", "call_id": "c2", "name": "update_plan", "arguments": {"plan": []}},
          {"type": "function_call", "call_id": "c3", "name": "raw", "arguments": "{\"a\":1}"},
          {"type": "apply_patch_call", "call_id": "c4", "patch": "*** Begin Patch\n*** End Patch\n"},
          {"type": "custom_tool_call", "call_id": "c5", "name": "free", "input": "text"},
          {"type": "assistant_message", "text": "done"}
        ], "event_delay_ms": 5, "usage": {"input_tokens": 3, "output_tokens": 4}},
        {"fault": {"type": "http_status", "status": 429, "retry_after": "2"}},
        {"fault": {"type": "disconnect", "after_events": 3}},
        {"fault": {"type": "stall", "after_events": 1, "duration_ms": 250}},
        {"fault": {"type": "malformed_data", "after_events": 0}},
        {"fault": {"type": "end_without_completed"}},
        {"fault": {"type": "response_failed", "code": "server_error", "message": "boom"}}
      ]
    }"#;
    let expected = Script {
        model: Some("scripted".into()),
        turns: vec![
            Turn::new([
                reasoning("hmm"),
                OutputItem::ShellCall {
                    call_id: "c1".into(),
                    command: vec!["ls".into()],
                    workdir: Some("/tmp".into()),
                    timeout_ms: Some(500),
                },
                function_call("c2", "update_plan", r#"{"plan":[]}"#),
                function_call("c3", "raw", r#"{"a":1}"#),
                apply_patch_call("c4", "*** Begin Patch\n*** End Patch\n"),
                custom_tool_call("c5", "free", "text"),
                assistant_message("done"),
            ])
            .with_event_delay(Duration::from_millis(5))
            .with_usage(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            }),
            Turn::failing(Fault::rate_limited(2)),
            Turn::failing(Fault::disconnect_after(3)),
            Turn::failing(Fault::stall_after(1, Duration::from_millis(250))),
            Turn::failing(Fault::malformed_after(0)),
            Turn::failing(Fault::EndWithoutCompleted),
            Turn::failing(Fault::response_failed("server_error", "boom")),
        ],
    };
    assert_eq!(Script::from_json(text)?, expected);
    Ok(())
}

#[test]
fn a_bare_array_of_turns_is_a_script() -> anyhow::Result<()> {
    let script = Script::from_json(r#"[{"items": [{"type": "message", "text": "hi"}]}]"#)?;
    assert_eq!(script, Script::new([Turn::new([assistant_message("hi")])]));
    Ok(())
}

#[test]
fn turns_round_trip_through_json() -> anyhow::Result<()> {
    let turn = Turn::new([reasoning("r"), function_call("c", "f", "{}")])
        .with_fault(Fault::stall_after(2, Duration::from_millis(9)))
        .with_event_delay(Duration::from_millis(1));
    let text = serde_json::to_string(&vec![turn.clone()])?;
    assert_eq!(Script::from_json(&text)?.turns, vec![turn]);
    Ok(())
}

#[test]
fn load_errors_name_the_file() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bad.json");
    std::fs::write(&path, r#"[{"items": [{"type": "nope"}]}]"#)?;
    let err = Script::load(&path).err();
    assert!(
        matches!(err, Some(Error::ParseScript { path: Some(_), .. })),
        "{err:?}"
    );
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("bad.json") && message.contains("nope"),
        "{message}"
    );

    let missing = Script::load(&dir.path().join("missing.json")).err();
    assert!(
        matches!(missing, Some(Error::ReadScript { .. })),
        "{missing:?}"
    );
    Ok(())
}
