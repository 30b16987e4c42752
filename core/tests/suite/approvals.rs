use keel_protocol::{EventMsg, Op, ReviewDecision};
use keel_test_support::{
    Script, Turn, apply_patch_call, assistant_message, function_call, shell_call,
};
use pretty_assertions::assert_eq;

use super::common::*;

fn write_script() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo made > made.txt"])]),
        Turn::new([assistant_message("finished")]),
    ])
}

/// Runs the write script under `policy`, answering any approval with `decision`.
async fn run_with(
    policy: &str,
    decision: Option<ReviewDecision>,
) -> anyhow::Result<(TestEnv, Vec<keel_protocol::Event>)> {
    let env = TestEnv::new(write_script(), &[("approval_policy", policy.into())]).await?;
    let new = env.start().await?;
    say(&new.conversation, "write a file").await?;
    let (events, requests) = answer_approvals(&new.conversation, decision.as_slice()).await?;
    for request in &requests {
        assert_eq!(request.call_id.as_str(), "c1");
        assert_eq!(request.cwd, env.ws());
    }
    Ok((env, events))
}

fn asked(events: &[keel_protocol::Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e.msg, EventMsg::ExecApprovalRequest(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_runs_without_asking() -> anyhow::Result<()> {
    let (env, events) = run_with("never", None).await?;
    assert!(!asked(&events));
    assert!(env.ws().join("made.txt").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_request_runs_unless_escalation_is_requested() -> anyhow::Result<()> {
    let (env, events) = run_with("on-request", None).await?;
    assert!(!asked(&events));
    assert!(env.ws().join("made.txt").exists());

    let args = serde_json::json!({
        "command": ["bash", "-lc", "echo esc > esc.txt"],
        "with_escalated_permissions": true,
        "justification": "needs to write outside"
    });
    let script = Script::new([
        Turn::new([function_call("e1", "shell", args.to_string())]),
        Turn::new([assistant_message("ok")]),
    ]);
    let env = TestEnv::new(script, &[("approval_policy", "on-request".into())]).await?;
    let new = env.start().await?;
    say(&new.conversation, "escalate").await?;
    let events = events_until(&new.conversation, |m| {
        matches!(m, EventMsg::ExecApprovalRequest(_))
    })
    .await?;
    let Some(EventMsg::ExecApprovalRequest(request)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("no approval request");
    };
    assert_eq!(request.reason.as_deref(), Some("needs to write outside"));
    new.conversation
        .submit(Op::ExecApproval {
            id: request.call_id,
            decision: ReviewDecision::Approved,
        })
        .await?;
    until_turn_end(&new.conversation).await?;
    assert!(env.ws().join("esc.txt").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_asks_and_approval_runs() -> anyhow::Result<()> {
    let (env, events) = run_with("untrusted", Some(ReviewDecision::Approved)).await?;
    assert!(asked(&events));
    assert!(env.ws().join("made.txt").exists());
    assert_eq!(last_agent_message(&events).as_deref(), Some("finished"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_denied_tells_the_model() -> anyhow::Result<()> {
    let (env, events) = run_with("untrusted", Some(ReviewDecision::Denied)).await?;
    assert!(asked(&events));
    assert!(!env.ws().join("made.txt").exists());
    let output = env.mock.requests()[1]
        .tool_output("c1")
        .cloned()
        .unwrap_or_default();
    assert!(
        output
            .as_str()
            .unwrap_or_default()
            .contains("rejected by user"),
        "{output}"
    );
    assert_eq!(last_agent_message(&events).as_deref(), Some("finished"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_abort_ends_the_turn() -> anyhow::Result<()> {
    let (env, events) = run_with("untrusted", Some(ReviewDecision::Abort)).await?;
    assert!(matches!(
        events.last().map(|e| &e.msg),
        Some(EventMsg::TurnAborted(_))
    ));
    assert!(!env.ws().join("made.txt").exists());
    assert_eq!(env.mock.requests().len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_runs_known_safe_commands_and_remembers_session_approvals() -> anyhow::Result<()>
{
    let script = Script::new([
        Turn::new([shell_call("r1", ["ls"])]),
        Turn::new([shell_call("w1", ["touch", "x.txt"])]),
        Turn::new([shell_call("w2", ["touch", "x.txt"])]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = TestEnv::new(script, &[("approval_policy", "untrusted".into())]).await?;
    let new = env.start().await?;
    say(&new.conversation, "go").await?;
    let events = events_until(&new.conversation, |m| {
        matches!(m, EventMsg::ExecApprovalRequest(_))
    })
    .await?;
    let Some(EventMsg::ExecApprovalRequest(request)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("no approval request");
    };
    assert_eq!(request.call_id.as_str(), "w1", "ls must run without asking");
    new.conversation
        .submit(Op::ExecApproval {
            id: request.call_id,
            decision: ReviewDecision::ApprovedForSession,
        })
        .await?;
    let rest = until_turn_end(&new.conversation).await?;
    assert!(
        !asked(&rest),
        "the same command must not be asked twice: {:?}",
        kinds(&rest)
    );
    assert_eq!(last_agent_message(&rest).as_deref(), Some("done"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_approval_under_untrusted() -> anyhow::Result<()> {
    let patch = "*** Begin Patch\n*** Add File: approved.txt\n+yes\n*** End Patch";
    let script = Script::new([
        Turn::new([apply_patch_call("p1", patch)]),
        Turn::new([apply_patch_call("p2", patch.replace("approved", "denied"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = TestEnv::new(script, &[("approval_policy", "untrusted".into())]).await?;
    let new = env.start().await?;
    say(&new.conversation, "patch").await?;
    for decision in [ReviewDecision::Approved, ReviewDecision::Denied] {
        let events = events_until(&new.conversation, |m| {
            matches!(m, EventMsg::ApplyPatchApprovalRequest(_))
        })
        .await?;
        let Some(EventMsg::ApplyPatchApprovalRequest(request)) =
            events.last().map(|e| e.msg.clone())
        else {
            anyhow::bail!("no patch approval request");
        };
        assert_eq!(request.changes.len(), 1);
        new.conversation
            .submit(Op::PatchApproval {
                id: request.call_id,
                decision,
            })
            .await?;
    }
    until_turn_end(&new.conversation).await?;
    assert!(env.ws().join("approved.txt").exists());
    assert!(!env.ws().join("denied.txt").exists());
    let output = env.mock.requests()[2]
        .tool_output("p2")
        .cloned()
        .unwrap_or_default();
    assert!(
        output
            .as_str()
            .unwrap_or_default()
            .contains("rejected by user"),
        "{output}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_runs_without_asking() -> anyhow::Result<()> {
    let (env, events) = run_with("on-failure", None).await?;
    assert!(!asked(&events));
    assert!(env.ws().join("made.txt").exists());
    Ok(())
}
