//! The sandbox inside the engine: what each approval policy does when a sandboxed command
//! fails, when the model asks for escalation, and when no sandbox can be had.

use std::path::Path;

use keel_protocol::{Event, EventMsg, ExecApprovalRequestEvent, ReviewDecision};
use keel_test_support::{Script, Turn, assistant_message, function_call, shell_call};
use pretty_assertions::assert_eq;

use super::common::*;

/// A script whose one command writes `path` (relative paths land in the workspace).
fn write_to(path: &Path) -> Script {
    let script = format!("echo made > '{}'", path.display());
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", script.as_str()])]),
        Turn::new([assistant_message("finished")]),
    ])
}

/// Drives one turn, answering each approval request with the next of `decisions`; returns
/// every event and the approval requests seen.
async fn drive(
    env: &TestEnv,
    config: keel_core::Config,
    decisions: &[ReviewDecision],
) -> anyhow::Result<(Vec<Event>, Vec<ExecApprovalRequestEvent>)> {
    let new = env.manager.new_conversation(config).await?;
    say(&new.conversation, "go").await?;
    answer_approvals(&new.conversation, decisions).await
}

fn exit_codes(events: &[Event]) -> Vec<i32> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ExecCommandEnd(end) => Some(end.exit_code),
            _ => None,
        })
        .collect()
}

fn model_saw(env: &TestEnv) -> String {
    env.mock.requests()[1]
        .tool_output("c1")
        .and_then(|output| output.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_asks_and_reruns_without_the_sandbox() -> anyhow::Result<()> {
    let outside = outside_dir()?;
    let target = outside.path().join("made.txt");
    let env = workspace_write(write_to(&target), "on-failure").await?;
    let (events, requests) = drive(&env, env.config()?, &[ReviewDecision::Approved]).await?;

    assert_eq!(requests.len(), 1);
    let reason = requests[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("failed in the sandbox"), "{reason}");
    assert_eq!(exit_codes(&events)[1..], [0]);
    assert_ne!(exit_codes(&events)[0], 0);
    assert_eq!(std::fs::read_to_string(&target)?, "made\n");
    assert!(
        model_saw(&env).contains("\"exit_code\":0"),
        "{}",
        model_saw(&env)
    );
    assert_eq!(last_agent_message(&events).as_deref(), Some("finished"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_denied_reports_the_sandboxed_failure() -> anyhow::Result<()> {
    let outside = outside_dir()?;
    let target = outside.path().join("made.txt");
    let env = workspace_write(write_to(&target), "on-failure").await?;
    let (events, requests) = drive(&env, env.config()?, &[ReviewDecision::Denied]).await?;
    assert_eq!(requests.len(), 1);
    assert_eq!(exit_codes(&events).len(), 1);
    assert!(!target.exists());
    assert!(
        model_saw(&env).contains("Permission denied"),
        "{}",
        model_saw(&env)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_runs_workspace_writes_without_asking() -> anyhow::Result<()> {
    let env = workspace_write(write_to(Path::new("made.txt")), "on-failure").await?;
    let target = env.ws().join("made.txt");
    let (events, requests) = drive(&env, env.config()?, &[]).await?;
    assert_eq!(requests.len(), 0);
    assert_eq!(exit_codes(&events), [0]);
    assert!(target.exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_sends_sandbox_failures_to_the_model() -> anyhow::Result<()> {
    let outside = outside_dir()?;
    let target = outside.path().join("made.txt");
    let env = workspace_write(write_to(&target), "never").await?;
    let (events, requests) = drive(&env, env.config()?, &[]).await?;
    assert_eq!(requests.len(), 0);
    assert_ne!(exit_codes(&events), [0]);
    assert!(!target.exists());
    assert!(
        model_saw(&env).contains("Permission denied"),
        "{}",
        model_saw(&env)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_request_escalation_runs_without_the_sandbox() -> anyhow::Result<()> {
    let outside = outside_dir()?;
    let target = outside.path().join("made.txt");
    let args = serde_json::json!({
        "command": ["bash", "-lc", format!("echo made > '{}'", target.display())],
        "with_escalated_permissions": true,
        "justification": "writes outside the workspace"
    });
    let script = Script::new([
        Turn::new([function_call("c1", "shell", args.to_string())]),
        Turn::new([assistant_message("finished")]),
    ]);
    let env = workspace_write(script, "on-request").await?;
    let (events, requests) = drive(&env, env.config()?, &[ReviewDecision::Approved]).await?;
    assert_eq!(requests.len(), 1);
    assert_eq!(exit_codes(&events), [0]);
    assert_eq!(std::fs::read_to_string(&target)?, "made\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_sandbox_fails_the_call_under_never() -> anyhow::Result<()> {
    let env = workspace_write(write_to(Path::new("made.txt")), "never").await?;
    let target = env.ws().join("made.txt");
    let mut config = env.config()?;
    config.sandbox_executable = Some(env.home.path().join("no-such-helper"));
    let (events, requests) = drive(&env, config, &[]).await?;
    assert_eq!(requests.len(), 0);
    assert_eq!(exit_codes(&events), Vec::<i32>::new());
    let seen = model_saw(&env);
    assert!(
        seen.contains("command not run: the sandbox is unavailable"),
        "{seen}"
    );
    // The client is told as well, not only the model.
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.msg {
            keel_protocol::EventMsg::Warning(warning) => Some(warning.message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("command not run: the sandbox is unavailable")
            && warnings[0].contains("the sandbox helper"),
        "{warnings:?}"
    );
    assert!(!target.exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_sandbox_asks_before_running_unsandboxed() -> anyhow::Result<()> {
    let env = workspace_write(write_to(Path::new("made.txt")), "on-request").await?;
    let target = env.ws().join("made.txt");
    let mut config = env.config()?;
    config.sandbox_executable = Some(env.home.path().join("no-such-helper"));
    let (events, requests) = drive(&env, config, &[ReviewDecision::Approved]).await?;
    assert_eq!(requests.len(), 1);
    let reason = requests[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("the sandbox is unavailable"), "{reason}");
    assert_eq!(exit_codes(&events), [0]);
    assert!(target.exists());
    Ok(())
}
