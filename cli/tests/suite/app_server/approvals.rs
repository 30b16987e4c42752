use keel_test_support::{Script, Turn, apply_patch_call, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

fn script() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["touch", "cmd.txt"])]),
        Turn::new([apply_patch_call(
            "p1",
            "*** Begin Patch\n*** Add File: patch.txt\n+x\n*** End Patch",
        )]),
        Turn::new([assistant_message("done")]),
    ])
}

/// Answers both approvals with `decision` and returns the finished turn.
async fn run(decision: &str) -> anyhow::Result<(World, serde_json::Value)> {
    let world = World::new(script(), &[("approval_policy", "untrusted".into())]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "do it").await?;

    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/commandExecution/requestApproval");
    assert_eq!(request["params"]["itemId"], "c1");
    assert_eq!(request["params"]["threadId"], thread_id.as_str());
    assert_eq!(request["params"]["turnId"], turn_id.as_str());
    assert_eq!(request["params"]["command"], "touch cmd.txt");
    server
        .respond(request["id"].clone(), json!({"decision": decision}))
        .await?;

    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/fileChange/requestApproval");
    assert_eq!(request["params"]["itemId"], "p1");
    server
        .respond(request["id"].clone(), json!({"decision": decision}))
        .await?;

    let completed = server.read_turn_completed(&turn_id).await?;
    Ok((world, completed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepting_runs_the_command_and_applies_the_patch() -> anyhow::Result<()> {
    let (world, completed) = run("accept").await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert!(world.ws_file("cmd.txt").exists());
    assert!(world.ws_file("patch.txt").exists());
    Ok(())
}

/// As Codex's server does, the client that answered is told the request is resolved (before
/// the command's item completes), so it can close its prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_approval_is_resolved_for_the_client() -> anyhow::Result<()> {
    let world = World::new(script(), &[("approval_policy", "untrusted".into())]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    server.start_turn(&thread_id, "do it").await?;
    let request = server.read_server_request().await?;
    server
        .respond(request["id"].clone(), json!({"decision": "accept"}))
        .await?;
    let resolved = server.read_notification("serverRequest/resolved").await?;
    assert_eq!(resolved["params"]["requestId"], request["id"]);
    assert_eq!(resolved["params"]["threadId"], thread_id.as_str());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_skips_both_and_marks_the_items_declined() -> anyhow::Result<()> {
    let (world, completed) = run("decline").await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert!(!world.ws_file("cmd.txt").exists());
    assert!(!world.ws_file("patch.txt").exists());
    let items = completed["turn"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<(String, String)> = items
        .iter()
        .filter(|i| i["type"] == "commandExecution" || i["type"] == "fileChange")
        .map(|i| {
            (
                i["id"].as_str().unwrap_or_default().to_string(),
                i["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("c1".to_string(), "declined".to_string()),
            ("p1".to_string(), "declined".to_string())
        ]
    );
    let output = world.mock.requests()[1]
        .tool_output("c1")
        .cloned()
        .unwrap_or_default();
    assert!(
        output.as_str().unwrap_or_default().contains("rejected"),
        "{output}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_withdraws_a_pending_approval() -> anyhow::Result<()> {
    let world = World::new(script(), &[("approval_policy", "untrusted".into())]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "do it").await?;
    let request = server.read_server_request().await?;
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await?;
    let resolved = server.read_notification("serverRequest/resolved").await?;
    assert_eq!(resolved["params"]["requestId"], request["id"]);
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "interrupted");
    assert!(!world.ws_file("cmd.txt").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_is_not_a_decision() -> anyhow::Result<()> {
    let world = World::new(script(), &[("approval_policy", "untrusted".into())]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "do it").await?;
    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/commandExecution/requestApproval");
    // What a client that cannot parse the request answers (Codex 0.169's TUI did so).
    server
        .respond_error(request["id"].clone(), -32601, "unsupported request")
        .await?;
    let warning = server.read_notification("warning").await?;
    let message = warning["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unsupported request") && message.contains("still waiting"),
        "{message}"
    );
    // Still undecided: nothing ran, nothing was declined, the model was not told anything.
    let status = server
        .request("thread/read", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(
        status["thread"]["status"]["activeFlags"],
        json!(["waitingOnApproval"])
    );
    assert_eq!(world.mock.requests().len(), 1);
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "interrupted");
    let item = completed["turn"]["items"]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["id"] == "c1"))
        .cloned()
        .unwrap_or_default();
    assert_ne!(item["status"], "declined", "{item}");
    assert!(!world.ws_file("cmd.txt").exists());
    assert_eq!(world.mock.requests().len(), 1);
    Ok(())
}

/// A code-mode script's calls are asked about like the model's own: the client sees each
/// approval with the nested call's id, a declined command does not run (the script reads
/// why), an accepted patch is applied, and the `exec` cell is an item of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_calls_are_approved_like_the_models_own() -> anyhow::Result<()> {
    let source = r#"const r = await tools.exec_command({cmd: "touch cmd.txt"});
text(typeof r === "string" ? r : r.output);
await tools.apply_patch("*** Begin Patch\n*** Add File: patch.txt\n+x\n*** End Patch\n");
text("patched");
"#;
    let world = World::new(
        Script::new([
            Turn::new([keel_test_support::custom_tool_call("c1", "exec", source)]),
            Turn::new([assistant_message("done")]),
        ]),
        &[
            ("approval_policy", "untrusted".into()),
            ("model", "gpt-6.2-sol".into()),
        ],
    )
    .await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "do it").await?;

    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/commandExecution/requestApproval");
    assert_eq!(request["params"]["itemId"], "c1/1");
    assert_eq!(
        request["params"]["command"],
        "/bin/bash -lc 'touch cmd.txt'"
    );
    server
        .respond(request["id"].clone(), json!({"decision": "decline"}))
        .await?;
    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/fileChange/requestApproval");
    assert_eq!(request["params"]["itemId"], "c1/2");
    server
        .respond(request["id"].clone(), json!({"decision": "accept"}))
        .await?;

    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert!(!world.ws_file("cmd.txt").exists());
    assert!(world.ws_file("patch.txt").exists());
    let items = completed["turn"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    assert!(kinds.contains(&"commandExecution"), "{kinds:?}");
    assert!(kinds.contains(&"fileChange"), "{kinds:?}");
    let cell = items
        .iter()
        .find(|item| item["type"] == "dynamicToolCall" && item["tool"] == "exec")
        .ok_or_else(|| anyhow::anyhow!("no exec item in {items:#?}"))?;
    assert_eq!(cell["status"], "completed");

    let output = world.mock.requests()[1]
        .input()
        .iter()
        .find(|item| item["type"] == "custom_tool_call_output")
        .cloned()
        .unwrap_or_default();
    let texts: Vec<&str> = output["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect();
    assert_eq!(texts[1], "exec command rejected by user", "{texts:?}");
    assert_eq!(texts[2], "patched");
    Ok(())
}
