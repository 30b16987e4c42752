//! `clock.sleep` (offered to today's models beside `exec`, Codex 0.171's interruptible sleep)
//! on the app-server: a `sleep` item, and new input that joins the turn cuts it short.

use keel_test_support::{MockModelServer, Turn, assistant_message, function_call};
use serde_json::{Value, json};

/// `clock.sleep` on the app-server: shown as Codex 0.171's `sleep` item, and cut short when
/// the user steers the turn (`Sleep interrupted by new input.`), the steer reaching the model
/// with the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_is_an_item_and_new_input_ends_it() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let step = if request.tool_output("s1").is_none() {
                function_call("s1", "sleep", json!({"duration_ms": 600000}).to_string())
            } else {
                assistant_message("awake")
            };
            Some(Turn::new([step]))
        })
        .start()
        .await?;
    let world = super::app_server::common::World::with_mock(
        mock,
        &[("model", toml::Value::from("gpt-6.2-sol"))],
    )?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "take a nap").await?;
    let started = server
        .read_until("the sleep started", |m| {
            m["method"] == "item/started" && m["params"]["item"]["type"] == "sleep"
        })
        .await?;
    assert_eq!(
        started["params"]["item"],
        json!({"type": "sleep", "id": "s1", "durationMs": 600000})
    );
    server
        .request(
            "turn/steer",
            json!({"threadId": thread, "expectedTurnId": turn,
                   "input": [{"type": "text", "text": "wake up"}]}),
        )
        .await?;
    server
        .read_until("the sleep ended", |m| {
            m["method"] == "item/completed" && m["params"]["item"]["type"] == "sleep"
        })
        .await?;
    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    let requests = world.mock.requests();
    let last = requests
        .last()
        .ok_or_else(|| anyhow::anyhow!("no request"))?;
    let output = last
        .tool_output("s1")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        output.starts_with("Wall time: ") && output.ends_with("\nSleep interrupted by new input."),
        "{output}"
    );
    assert!(serde_json::to_string(last.input())?.contains("wake up"));
    Ok(())
}
