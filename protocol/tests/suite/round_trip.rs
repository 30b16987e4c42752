use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::exec_server::ExecOutputStream;
use keel_protocol::*;
use pretty_assertions::assert_eq;

fn round_trip<T>(value: &T) -> anyhow::Result<()>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(value)?;
    let back: T = serde_json::from_str(&json)?;
    assert_eq!(&back, value, "{json}");
    Ok(())
}

fn ops() -> Vec<Op> {
    vec![
        Op::UserInput {
            items: vec![
                InputItem::text("hello"),
                InputItem::Image {
                    image_url: "data:image/png;base64,AA==".into(),
                },
                InputItem::LocalImage {
                    path: PathBuf::from("/tmp/a.png"),
                },
            ],
        },
        Op::UserTurn {
            items: vec![InputItem::text("go")],
            cwd: PathBuf::from("/work"),
            approval_policy: AskForApproval::OnFailure,
            sandbox_policy: SandboxPolicy::WorkspaceWrite {
                writable_roots: vec![PathBuf::from("/data")],
                network_access: true,
                exclude_tmpdir_env_var: false,
                exclude_slash_tmp: true,
            },
            model: "m".into(),
            effort: Some(ReasoningEffort::HIGH),
        },
        Op::OverrideTurnContext {
            cwd: None,
            approval_policy: Some(AskForApproval::Never),
            sandbox_policy: Some(SandboxPolicy::ReadOnly),
            model: None,
            effort: None,
        },
        Op::Interrupt,
        Op::ExecApproval {
            id: CallId::new("c1"),
            decision: ReviewDecision::ApprovedForSession,
        },
        Op::PatchApproval {
            id: CallId::new("c2"),
            decision: ReviewDecision::Abort,
        },
        Op::Shutdown,
    ]
}

fn changes() -> BTreeMap<PathBuf, FileChange> {
    BTreeMap::from([
        (
            PathBuf::from("/w/new.txt"),
            FileChange::Add {
                content: "hi\n".into(),
            },
        ),
        (
            PathBuf::from("/w/old.txt"),
            FileChange::Delete {
                content: "bye\n".into(),
            },
        ),
        (
            PathBuf::from("/w/a.rs"),
            FileChange::Update {
                unified_diff: "@@ -1 +1 @@\n-a\n+b\n".into(),
                move_path: Some(PathBuf::from("/w/b.rs")),
            },
        ),
    ])
}

fn event_msgs() -> Vec<EventMsg> {
    let turn_id = TurnId::new("t1");
    let call_id = CallId::new("c1");
    vec![
        EventMsg::SessionConfigured(SessionConfiguredEvent {
            session_id: ConversationId::new(),
            model: "m".into(),
            model_provider_id: "mock".into(),
            approval_policy: AskForApproval::UnlessTrusted,
            sandbox_policy: SandboxPolicy::DangerFullAccess,
            cwd: PathBuf::from("/w"),
            reasoning_effort: Some(ReasoningEffort::LOW),
            history_log_id: 0,
            history_entry_count: 0,
            initial_messages: Some(vec![EventMsg::AgentMessage(AgentMessageEvent {
                message: "earlier".into(),
            })]),
            rollout_path: Some(PathBuf::from("/h/sessions/x.jsonl")),
        }),
        EventMsg::TaskStarted(TaskStartedEvent {
            turn_id: turn_id.clone(),
            model_context_window: Some(1000),
            started_at: Some(1_795_370_201),
        }),
        EventMsg::TaskComplete(TaskCompleteEvent {
            turn_id: turn_id.clone(),
            last_agent_message: None,
            completed_at: Some(1_795_370_216),
            duration_ms: Some(5365),
        }),
        EventMsg::UserMessage(UserMessageEvent {
            message: "do it".into(),
            images: vec![],
        }),
        EventMsg::AgentMessage(AgentMessageEvent {
            message: "done".into(),
        }),
        EventMsg::AgentMessageDelta(AgentMessageDeltaEvent { delta: "do".into() }),
        EventMsg::AgentReasoning(AgentReasoningEvent {
            text: "think".into(),
        }),
        EventMsg::AgentReasoningDelta(AgentReasoningDeltaEvent { delta: "th".into() }),
        EventMsg::ExecCommandBegin(ExecCommandBeginEvent {
            call_id: call_id.clone(),
            turn_id: turn_id.clone(),
            command: vec!["ls".into()],
            cwd: PathBuf::from("/w"),
            parsed_cmd: vec![
                ParsedCommand::ListFiles {
                    cmd: "ls".into(),
                    path: None,
                },
                ParsedCommand::Read {
                    cmd: "cat a".into(),
                    name: "a".into(),
                    path: Some(PathBuf::from("a")),
                },
                ParsedCommand::Search {
                    cmd: "rg x".into(),
                    query: Some("x".into()),
                    path: None,
                },
            ],
            source: ExecCommandSource::UnifiedExecStartup,
            process_id: Some("1000".into()),
        }),
        EventMsg::TerminalInteraction(TerminalInteractionEvent {
            call_id: call_id.clone(),
            process_id: "1000".into(),
            stdin: "print(1)\n".into(),
        }),
        EventMsg::ExecCommandOutputDelta(ExecCommandOutputDeltaEvent {
            call_id: call_id.clone(),
            stream: ExecOutputStream::Stderr,
            chunk: Base64Bytes::from(vec![0, 159, 146, 150]),
        }),
        EventMsg::ExecCommandEnd(ExecCommandEndEvent {
            call_id: call_id.clone(),
            turn_id: turn_id.clone(),
            command: vec!["false".into()],
            cwd: PathBuf::from("/w"),
            parsed_cmd: vec![],
            source: ExecCommandSource::UserShell,
            process_id: None,
            stdout: String::new(),
            stderr: "x".into(),
            aggregated_output: "x".into(),
            exit_code: 1,
            duration: Duration::from_millis(1500),
            formatted_output: "x".into(),
            status: ExecCommandStatus::Failed,
        }),
        EventMsg::ExecApprovalRequest(ExecApprovalRequestEvent {
            call_id: call_id.clone(),
            turn_id: turn_id.clone(),
            command: vec!["rm".into(), "-rf".into(), "x".into()],
            cwd: PathBuf::from("/w"),
            reason: Some("writes outside the sandbox".into()),
            parsed_cmd: vec![],
            process_id: Some("1000".into()),
        }),
        EventMsg::ApplyPatchApprovalRequest(ApplyPatchApprovalRequestEvent {
            call_id: call_id.clone(),
            turn_id: turn_id.clone(),
            changes: changes(),
            reason: None,
            grant_root: Some(PathBuf::from("/w")),
        }),
        EventMsg::PatchApplyBegin(PatchApplyBeginEvent {
            call_id: call_id.clone(),
            turn_id: turn_id.clone(),
            auto_approved: true,
            changes: changes(),
        }),
        EventMsg::PatchApplyEnd(PatchApplyEndEvent {
            call_id: call_id.clone(),
            turn_id: turn_id.clone(),
            stdout: "A new.txt".into(),
            stderr: String::new(),
            success: true,
            changes: changes(),
        }),
        EventMsg::PlanUpdate(UpdatePlanArgs {
            explanation: Some("why".into()),
            plan: vec![
                PlanItem {
                    step: "a".into(),
                    status: StepStatus::Completed,
                },
                PlanItem {
                    step: "b".into(),
                    status: StepStatus::InProgress,
                },
                PlanItem {
                    step: "c".into(),
                    status: StepStatus::Pending,
                },
            ],
        }),
        EventMsg::TurnDiff(TurnDiffEvent {
            unified_diff: "--- a\n+++ b\n".into(),
        }),
        EventMsg::TokenCount(TokenCountEvent {
            info: Some(TokenUsageInfo {
                total_token_usage: TokenUsage {
                    input_tokens: 20,
                    cached_input_tokens: 1,
                    output_tokens: 10,
                    reasoning_output_tokens: 2,
                    total_tokens: 30,
                },
                last_token_usage: TokenUsage::default(),
                model_context_window: None,
                turn_token_usage: Some(TokenUsage {
                    total_tokens: 7,
                    ..TokenUsage::default()
                }),
            }),
        }),
        EventMsg::Error(ErrorEvent::new("boom")),
        EventMsg::Warning(WarningEvent {
            message: "careful".into(),
        }),
        EventMsg::BackgroundEvent(BackgroundEventEvent {
            message: "retrying".into(),
        }),
        EventMsg::StreamError(StreamErrorEvent {
            message: "reconnecting 1/3".into(),
        }),
        EventMsg::TurnAborted(TurnAbortedEvent {
            turn_id: Some(turn_id),
            reason: TurnAbortReason::Interrupted,
            completed_at: None,
            duration_ms: None,
        }),
        EventMsg::ShutdownComplete,
    ]
}

#[test]
fn every_op_round_trips() -> anyhow::Result<()> {
    for (n, op) in ops().into_iter().enumerate() {
        round_trip(&Submission {
            id: SubmissionId::new(n.to_string()),
            op,
        })?;
    }
    Ok(())
}

#[test]
fn every_event_round_trips() -> anyhow::Result<()> {
    for msg in event_msgs() {
        round_trip(&Event {
            id: SubmissionId::new("1"),
            msg,
        })?;
    }
    Ok(())
}

#[test]
fn policies_and_decisions_use_codex_spellings() -> anyhow::Result<()> {
    let spell = |v: serde_json::Value| v.to_string();
    assert_eq!(
        spell(serde_json::to_value(AskForApproval::UnlessTrusted)?),
        "\"untrusted\""
    );
    assert_eq!(
        spell(serde_json::to_value(AskForApproval::OnFailure)?),
        "\"on-failure\""
    );
    assert_eq!(
        spell(serde_json::to_value(AskForApproval::OnRequest)?),
        "\"on-request\""
    );
    assert_eq!(
        spell(serde_json::to_value(AskForApproval::Never)?),
        "\"never\""
    );
    assert_eq!(
        spell(serde_json::to_value(SandboxMode::WorkspaceWrite)?),
        "\"workspace-write\""
    );
    assert_eq!(
        spell(serde_json::to_value(SandboxPolicy::DangerFullAccess)?),
        r#"{"type":"danger-full-access"}"#
    );
    assert_eq!(
        serde_json::to_value(SandboxPolicy::new_workspace_write())?,
        serde_json::json!({"type": "workspace-write", "writable_roots": [], "network_access": false,
            "exclude_tmpdir_env_var": false, "exclude_slash_tmp": false})
    );
    let decisions = [
        (ReviewDecision::Approved, "\"approved\""),
        (
            ReviewDecision::ApprovedForSession,
            "\"approved_for_session\"",
        ),
        (ReviewDecision::Denied, "\"denied\""),
        (ReviewDecision::Abort, "\"abort\""),
    ];
    for (decision, text) in decisions {
        assert_eq!(spell(serde_json::to_value(decision)?), text);
        round_trip(&decision)?;
    }
    Ok(())
}

#[test]
fn file_changes_round_trip_with_their_tags() -> anyhow::Result<()> {
    let json = serde_json::to_value(changes())?;
    assert_eq!(json["/w/new.txt"]["type"], "add");
    assert_eq!(json["/w/old.txt"]["type"], "delete");
    assert_eq!(json["/w/a.rs"]["type"], "update");
    assert_eq!(json["/w/a.rs"]["move_path"], "/w/b.rs");
    round_trip(&changes())
}
