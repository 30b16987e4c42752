//! Events as a Codex client sees them (shapes from a recorded Codex 0.115 MCP session): Keel
//! must read Codex's lines and write the same field names and casing.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use keel_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const THREAD: &str = "01a200ed-a953-7551-9a97-cd04df8ceaf4";

fn parse_event(value: Value) -> anyhow::Result<Event> {
    Ok(serde_json::from_value(value)?)
}

#[test]
fn session_configured() -> anyhow::Result<()> {
    // Codex's line (extra members such as `approvals_reviewer` are ignored by Keel).
    let codex = json!({"id":"","msg":{"type":"session_configured","session_id":THREAD,
        "model":"mock-model","model_provider_id":"mock","approval_policy":"untrusted",
        "approvals_reviewer":"user","sandbox_policy":{"type":"danger-full-access"},
        "cwd":"/tmp/run1/ws","history_log_id":0,"history_entry_count":0,
        "rollout_path":"/tmp/run1/home/sessions/2026/11/22/rollout-x.jsonl"}});
    let event = parse_event(codex)?;
    let expected = Event {
        id: SubmissionId::new(""),
        msg: EventMsg::SessionConfigured(SessionConfiguredEvent {
            session_id: ConversationId::from_str(THREAD)?,
            model: "mock-model".into(),
            model_provider_id: "mock".into(),
            approval_policy: AskForApproval::UnlessTrusted,
            sandbox_policy: SandboxPolicy::DangerFullAccess,
            cwd: PathBuf::from("/tmp/run1/ws"),
            reasoning_effort: None,
            history_log_id: 0,
            history_entry_count: 0,
            initial_messages: None,
            rollout_path: Some(PathBuf::from(
                "/tmp/run1/home/sessions/2026/11/22/rollout-x.jsonl",
            )),
        }),
    };
    assert_eq!(event, expected);
    assert_eq!(
        serde_json::to_value(&expected)?,
        json!({"id":"","msg":{"type":"session_configured","session_id":THREAD,
            "model":"mock-model","model_provider_id":"mock","approval_policy":"untrusted",
            "sandbox_policy":{"type":"danger-full-access"},"cwd":"/tmp/run1/ws",
            "history_log_id":0,"history_entry_count":0,
            "rollout_path":"/tmp/run1/home/sessions/2026/11/22/rollout-x.jsonl"}})
    );
    Ok(())
}

fn command() -> Vec<String> {
    vec![
        "bash".into(),
        "-lc".into(),
        "echo hello-from-shell > out.txt; cat out.txt".into(),
    ]
}

#[test]
fn exec_approval_request() -> anyhow::Result<()> {
    let codex = json!({"id":"3","msg":{"type":"exec_approval_request","call_id":"c1","turn_id":"3",
        "command":["bash","-lc","echo hello-from-shell > out.txt; cat out.txt"],"cwd":"/tmp/run1/ws",
        "proposed_execpolicy_amendment":["bash"],"available_decisions":["approved","abort"],
        "parsed_cmd":[{"type":"unknown","cmd":"echo hello-from-shell > out.txt; cat out.txt"}]}});
    let expected = Event {
        id: SubmissionId::new("3"),
        msg: EventMsg::ExecApprovalRequest(ExecApprovalRequestEvent {
            call_id: CallId::new("c1"),
            turn_id: TurnId::new("3"),
            command: command(),
            cwd: PathBuf::from("/tmp/run1/ws"),
            reason: None,
            parsed_cmd: vec![ParsedCommand::Unknown {
                cmd: "echo hello-from-shell > out.txt; cat out.txt".into(),
            }],
            process_id: None,
        }),
    };
    assert_eq!(parse_event(codex)?, expected);
    assert_eq!(
        serde_json::to_value(&expected)?,
        json!({"id":"3","msg":{"type":"exec_approval_request","call_id":"c1","turn_id":"3",
            "command":["bash","-lc","echo hello-from-shell > out.txt; cat out.txt"],
            "cwd":"/tmp/run1/ws",
            "parsed_cmd":[{"type":"unknown","cmd":"echo hello-from-shell > out.txt; cat out.txt"}]}})
    );
    Ok(())
}

#[test]
fn exec_command_end_and_output_delta() -> anyhow::Result<()> {
    let delta = parse_event(json!({"id":"3","msg":{"type":"exec_command_output_delta",
        "call_id":"c1","stream":"stdout","chunk":"aGVsbG8tZnJvbS1zaGVsbAo="}}))?;
    let EventMsg::ExecCommandOutputDelta(delta) = delta.msg else {
        anyhow::bail!("not an output delta");
    };
    assert_eq!(delta.chunk.as_bytes(), b"hello-from-shell\n");

    let end = parse_event(
        json!({"id":"3","msg":{"type":"exec_command_end","call_id":"c1",
        "turn_id":"3","command":["bash","-lc","echo hello-from-shell > out.txt; cat out.txt"],
        "cwd":"/tmp/run1/ws","parsed_cmd":[{"type":"unknown","cmd":"echo"}],"source":"agent",
        "stdout":"hello-from-shell\n","stderr":"","aggregated_output":"hello-from-shell\n",
        "exit_code":0,"duration":{"secs":0,"nanos":297053530},
        "formatted_output":"hello-from-shell\n","status":"completed"}}),
    )?;
    let EventMsg::ExecCommandEnd(end) = end.msg else {
        anyhow::bail!("not an exec end");
    };
    assert_eq!(end.duration, Duration::new(0, 297_053_530));
    assert_eq!(end.status, ExecCommandStatus::Completed);
    assert_eq!(end.command, command());
    let ours = serde_json::to_value(&end)?;
    assert_eq!(ours["duration"], json!({"secs": 0, "nanos": 297053530}));
    assert_eq!(ours["aggregated_output"], "hello-from-shell\n");
    Ok(())
}

#[test]
fn task_complete() -> anyhow::Result<()> {
    let line = r#"{"id":"3","msg":{"type":"task_complete","turn_id":"3","last_agent_message":"All done: wrote out.txt"}}"#;
    let event: Event = serde_json::from_str(line)?;
    assert_eq!(
        event,
        Event {
            id: SubmissionId::new("3"),
            msg: EventMsg::TaskComplete(TaskCompleteEvent {
                turn_id: TurnId::new("3"),
                last_agent_message: Some("All done: wrote out.txt".into()),
                completed_at: None,
                duration_ms: None,
            }),
        }
    );
    assert_eq!(serde_json::to_string(&event)?, line);
    Ok(())
}

#[test]
fn token_count_and_agent_message() -> anyhow::Result<()> {
    let event = parse_event(json!({"id":"3","msg":{"type":"token_count","info":{
        "total_token_usage":{"input_tokens":20,"cached_input_tokens":0,"output_tokens":10,
            "reasoning_output_tokens":0,"total_tokens":30},
        "last_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5,
            "reasoning_output_tokens":0,"total_tokens":15},
        "model_context_window":258400},
        "rate_limits":{"limit_id":"codex"}}}))?;
    let EventMsg::TokenCount(count) = event.msg else {
        anyhow::bail!("not a token count");
    };
    let info = count.info.ok_or_else(|| anyhow::anyhow!("no info"))?;
    assert_eq!(info.total_token_usage.total_tokens, 30);
    assert_eq!(info.model_context_window, Some(258_400));

    let message = parse_event(json!({"id":"3","msg":{"type":"agent_message",
        "message":"All done: wrote out.txt","phase":null}}))?;
    assert_eq!(
        message.msg,
        EventMsg::AgentMessage(AgentMessageEvent {
            message: "All done: wrote out.txt".into()
        })
    );
    Ok(())
}
