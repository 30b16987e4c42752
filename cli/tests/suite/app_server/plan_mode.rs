//! Plan mode, as the Codex 0.169 TUI asks for it (`collaborationMode` on `turn/start`): the
//! model plans without changing anything — no patch tool, commands read-only whatever the
//! sandbox — and the default mode gives both back.

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use serde_json::json;

use super::common::World;

fn mode(name: &str, instructions: Option<&str>) -> serde_json::Value {
    json!({"mode": name, "settings": {"model": "mock-model", "reasoning_effort": null,
        "developer_instructions": instructions}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_changes_nothing_and_default_mode_does() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("p1", ["sh", "-c", "echo planned > plan.txt"])]),
        Turn::new([assistant_message("the plan")]),
        Turn::new([shell_call("d1", ["sh", "-c", "echo done > done.txt"])]),
        Turn::new([assistant_message("carried out")]),
    ]);
    let world = World::new(script, &[("sandbox_mode", "workspace-write".into())]).await?;
    let mut server = world.server().await?;
    let modes = server
        .request("collaborationMode/list", json!(null))
        .await?;
    let names: Vec<&str> = modes["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["mode"].as_str())
        .collect();
    anyhow::ensure!(names == ["plan", "default"], "{modes}");

    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn = server
        .request(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": "plan it"}],
                "collaborationMode": mode("plan", Some("PLAN-MODE-WORDING"))}),
        )
        .await?;
    let turn_id = turn["turn"]["id"].as_str().unwrap_or_default().to_string();
    // The thread's reported settings follow the mode.
    let updated = server.read_notification("thread/settings/updated").await?;
    anyhow::ensure!(
        updated.to_string().contains(r#""mode":"plan""#),
        "{updated}"
    );
    server.read_turn_completed(&turn_id).await?;
    anyhow::ensure!(
        !world.ws_file("plan.txt").exists(),
        "plan mode wrote a file"
    );
    let requests = world.mock.requests();
    let tools = requests[0].tool_names();
    anyhow::ensure!(!tools.iter().any(|t| t == "apply_patch"), "{tools:?}");
    let sent = serde_json::to_string(requests[0].input())?;
    anyhow::ensure!(sent.contains("PLAN-MODE-WORDING"), "{sent}");

    let turn = server
        .request(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": "do it"}],
                "collaborationMode": mode("default", None)}),
        )
        .await?;
    let turn_id = turn["turn"]["id"].as_str().unwrap_or_default().to_string();
    server.read_turn_completed(&turn_id).await?;
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("done.txt"))? == "done\n");
    let requests = world.mock.requests();
    let tools = requests[2].tool_names();
    anyhow::ensure!(tools.iter().any(|t| t == "apply_patch"), "{tools:?}");
    let sent = serde_json::to_string(requests[2].input())?;
    anyhow::ensure!(!sent.contains("PLAN-MODE-WORDING"), "{sent}");

    let refused = server
        .request(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": "x"}],
                "collaborationMode": mode("pair", None)}),
        )
        .await;
    anyhow::ensure!(
        matches!(&refused, Err(keel_test_support::Error::JsonRpc { error, .. })
            if error["message"].as_str().unwrap_or_default().contains("unknown collaboration mode `pair`")),
        "{refused:?}"
    );
    Ok(())
}
