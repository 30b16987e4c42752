//! Exec and patch approvals through `elicitation/create`.

use keel_test_support::{Script, Turn, apply_patch_call, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

fn touch_script() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo made > made.txt"])]),
        Turn::new([assistant_message("finished")]),
    ])
}

async fn start_untrusted_call(server: &mut TestServer) -> anyhow::Result<i64> {
    Ok(server
        .mcp
        .send_tool_call(
            "codex",
            json!({"prompt": "make a file", "cwd": server.ws_arg(), "approval-policy": "untrusted"}),
        )
        .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_approval_accepted_with_the_standard_action_runs_the_command() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(touch_script(), &[]).await?;
    let id = start_untrusted_call(&mut server).await?;
    let elicitation = server.mcp.read_elicitation().await?;
    let params = &elicitation["params"];
    let thread_id =
        server.mcp.read_codex_event("session_configured").await?["_meta"]["threadId"].clone();
    assert_eq!(params["codex_elicitation"], json!("exec-approval"));
    assert_eq!(params["codex_mcp_tool_call_id"], json!(id.to_string()));
    assert_eq!(params["codex_event_id"], json!(id.to_string()));
    assert_eq!(params["codex_call_id"], json!("c1"));
    assert_eq!(
        params["codex_command"],
        json!(["bash", "-lc", "echo made > made.txt"])
    );
    assert_eq!(params["codex_cwd"], server.ws_arg());
    assert_eq!(params["threadId"], thread_id);
    assert_eq!(
        params["requestedSchema"],
        json!({"type": "object", "properties": {}})
    );
    let message = params["message"].as_str().unwrap_or_default();
    assert!(message.contains("echo made > made.txt"), "{message}");

    server
        .mcp
        .respond(
            elicitation["id"].clone(),
            json!({"action": "accept", "content": {}}),
        )
        .await?;
    let result = server.mcp.read_result(id).await?;
    assert_eq!(result["structuredContent"]["content"], json!("finished"));
    assert_eq!(
        std::fs::read_to_string(server.ws().join("made.txt"))?,
        "made\n"
    );
    server.mock.verify()?;
    Ok(())
}

async fn denied_run(answer: Option<Value>, capabilities: Value) -> anyhow::Result<TestServer> {
    let mut server = TestServer::start(touch_script(), &[]).await?;
    server
        .mcp
        .initialize_with_capabilities(capabilities)
        .await?;
    let id = start_untrusted_call(&mut server).await?;
    if let Some(answer) = answer {
        let elicitation = server.mcp.read_elicitation().await?;
        match answer.get("error") {
            Some(_) => {
                server
                    .mcp
                    .respond_error(elicitation["id"].clone(), -32000, "client failed")
                    .await?;
            }
            None => {
                server
                    .mcp
                    .respond(elicitation["id"].clone(), answer)
                    .await?
            }
        }
    }
    let result = server.mcp.read_result(id).await?;
    assert_eq!(
        result["structuredContent"]["content"],
        json!("finished"),
        "{result}"
    );
    assert!(!server.ws().join("made.txt").exists());
    let requests = server.mock.requests();
    let output = requests[1]
        .tool_output("c1")
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(output.contains("rejected"), "model was not told: {output}");
    Ok(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_approval_denied_in_either_shape_tells_the_model() -> anyhow::Result<()> {
    denied_run(
        Some(json!({"decision": "denied"})),
        json!({"elicitation": {}}),
    )
    .await?;
    denied_run(
        Some(json!({"action": "decline"})),
        json!({"elicitation": {}}),
    )
    .await?;
    // An error answer or an unreadable one denies, conservatively.
    denied_run(Some(json!({"error": true})), json!({"elicitation": {}})).await?;
    denied_run(Some(json!({"what": "ever"})), json!({"elicitation": {}})).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_without_elicitation_are_never_asked() -> anyhow::Result<()> {
    let server = denied_run(None, json!({})).await?;
    let unread: Vec<&Value> = server.mcp.unread().collect();
    assert!(
        unread
            .iter()
            .all(|m| m.get("method") != Some(&json!("elicitation/create"))),
        "an elicitation was sent: {unread:?}"
    );
    let input = serde_json::to_string(server.mock.requests()[1].input())?;
    assert!(
        input.contains("elicitation"),
        "the model was not told why: {input}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_approval_approve_writes_and_deny_does_not() -> anyhow::Result<()> {
    let patch = "*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** End Patch";
    for (answer, expect_file) in [
        (json!({"decision": "approved"}), true),
        (json!({"action": "decline"}), false),
    ] {
        let script = Script::new([
            Turn::new([apply_patch_call("p1", patch)]),
            Turn::new([assistant_message("patch done")]),
        ]);
        let mut server = TestServer::initialized(script, &[]).await?;
        let id = start_untrusted_call(&mut server).await?;
        let elicitation = server.mcp.read_elicitation().await?;
        let params = &elicitation["params"];
        assert_eq!(params["codex_elicitation"], json!("patch-approval"));
        assert_eq!(params["codex_call_id"], json!("p1"));
        let changes = params["codex_changes"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(changes.len(), 1, "{params}");
        assert!(
            changes.keys().all(|path| path.ends_with("patched.txt")),
            "{params}"
        );
        server
            .mcp
            .respond(elicitation["id"].clone(), answer)
            .await?;
        let result = server.mcp.read_result(id).await?;
        assert_eq!(result["structuredContent"]["content"], json!("patch done"));
        assert_eq!(server.ws().join("patched.txt").exists(), expect_file);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_elicitation_is_withdrawn_when_its_call_ends() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(touch_script(), &[]).await?;
    let id = start_untrusted_call(&mut server).await?;
    let elicitation = server.mcp.read_elicitation().await?;
    server.mcp.cancel(id).await?;
    let result = server.mcp.read_result(id).await?;
    assert!(result_text(&result).contains("interrupted"), "{result}");
    let withdrawn = server
        .mcp
        .read_notification("notifications/cancelled")
        .await?;
    assert_eq!(withdrawn["params"]["requestId"], elicitation["id"]);

    // A late answer goes nowhere: nothing runs, and the server carries on.
    server
        .mcp
        .respond(elicitation["id"].clone(), json!({"action": "accept"}))
        .await?;
    assert_eq!(server.mcp.request("ping", json!({})).await?, json!({}));
    assert!(!server.ws().join("made.txt").exists());
    Ok(())
}
