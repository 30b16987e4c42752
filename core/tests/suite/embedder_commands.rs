//! Commands an embedder's tool runs with `ToolContext::run_command`: confined by the turn's
//! sandbox (a write outside the workspace fails), announced with `exec_command_*` events under
//! an id of their own, and asked about as the approval policy says (a declined one does not
//! run and the model is told).

use std::sync::Arc;
use std::time::Duration;

use keel_core::{ConversationManager, Tool, ToolContext, ToolError};
use keel_protocol::{EventMsg, ReviewDecision};
use keel_test_support::{Script, Turn, assistant_message, function_call};
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::*;

/// Writes a line to a file by running a shell command.
struct WriteFile;

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// The file to write.
    path: String,
}

impl Tool for WriteFile {
    type Args = WriteArgs;
    type Output = String;
    const NAME: &'static str = "write_file";

    fn description(&self) -> String {
        "Writes a line to a file.".into()
    }

    async fn call(&self, ctx: ToolContext, args: WriteArgs) -> Result<String, ToolError> {
        let script = format!("echo written-by-tool > '{}'", args.path);
        let run = ctx
            .run_command(
                vec!["bash".into(), "-c".into(), script],
                Duration::from_secs(30),
            )
            .await?;
        Ok(format!("exit {}", run.exit_code))
    }
}

fn manager() -> anyhow::Result<ConversationManager> {
    Ok(ConversationManager::builder()
        .env(Arc::new(|_| None))
        .tool(WriteFile)
        .build()?)
}

fn output(env: &TestEnv, call: &str) -> String {
    env.mock
        .requests()
        .iter()
        .find_map(|r| {
            r.tool_output(call)
                .and_then(|o| o.as_str().map(str::to_string))
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_commands_run_in_the_turns_sandbox() -> anyhow::Result<()> {
    let outside = outside_dir()?;
    let outside_file = outside.path().join("escaped.txt");
    let script = Script::new([
        Turn::new([function_call(
            "w1",
            "write_file",
            r#"{"path":"inside.txt"}"#,
        )]),
        Turn::new([function_call(
            "w2",
            "write_file",
            serde_json::json!({"path": outside_file}).to_string(),
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut env = workspace_write(script, "never").await?;
    env.manager = manager()?;
    let new = env.start().await?;
    say(&new.conversation, "write two files").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("done"));

    assert_eq!(
        std::fs::read_to_string(env.ws().join("inside.txt"))?,
        "written-by-tool\n"
    );
    assert_eq!(output(&env, "w1"), "exit 0");
    assert!(
        !outside_file.exists(),
        "the command wrote outside the workspace"
    );
    assert_ne!(output(&env, "w2"), "exit 0");

    let begins: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ExecCommandBegin(begin) => Some(begin.call_id.as_str().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(begins.len(), 2, "{begins:?}");
    assert!(begins[0].starts_with("w1/command-"), "{begins:?}");
    assert!(begins[1].starts_with("w2/command-"), "{begins:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_command_is_asked_about_and_a_declined_one_does_not_run() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call(
            "w1",
            "write_file",
            r#"{"path":"declined.txt"}"#,
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut env = workspace_write(script, "untrusted").await?;
    env.manager = manager()?;
    let new = env.start().await?;
    say(&new.conversation, "write a file").await?;
    let (_, requests) = answer_approvals(&new.conversation, &[ReviewDecision::Denied]).await?;
    assert_eq!(requests.len(), 1);
    assert!(requests[0].call_id.as_str().starts_with("w1/command-"));
    assert_eq!(requests[0].command[0], "bash");
    assert!(!env.ws().join("declined.txt").exists());
    assert_eq!(output(&env, "w1"), "exec command rejected by user");
    Ok(())
}
