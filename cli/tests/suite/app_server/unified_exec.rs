//! Unified exec sessions as app-server items: a `commandExecution` item with the session's
//! `processId`, its output as `outputDelta`, what the model types as `terminalInteraction`,
//! and no process left once the turn is interrupted or the client goes away.

use std::time::Duration;

use keel_test_support::{
    MarkedSleeper, Script, Turn, assistant_message, exec_command_call, shell_call, write_stdin_call,
};
use serde_json::{Value, json};

use super::common::{World, until_turn_completed};

const GONE_WITHIN: Duration = Duration::from_secs(15);

fn of_item<'a>(messages: &'a [Value], method: &str, item_id: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| {
            m["method"] == method
                && (m["params"]["itemId"] == item_id || m["params"]["item"]["id"] == item_id)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_session_is_one_command_item_across_calls() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "cat", "tty": true, "yield_time_ms": 250, "login": false}),
        )]),
        Turn::new([write_stdin_call("c2", 1000, "ping\n", 500)]),
        // Ctrl-D at the start of a line: `cat` sees end of input and exits.
        Turn::new([write_stdin_call("c3", 1000, "\u{4}", 5000)]),
        Turn::new([assistant_message("done")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "talk to cat").await?;
    let messages = until_turn_completed(&mut server, &turn_id).await?;

    let started = of_item(&messages, "item/started", "c1");
    assert_eq!(started.len(), 1, "{messages:#?}");
    assert_eq!(started[0]["params"]["item"]["type"], "commandExecution");
    assert_eq!(started[0]["params"]["item"]["processId"], "1000");

    let typed = of_item(&messages, "item/commandExecution/terminalInteraction", "c1");
    let typed: Vec<&Value> = typed.iter().map(|m| &m["params"]["stdin"]).collect();
    assert_eq!(typed, [&json!("ping\n"), &json!("\u{4}")]);
    for message in of_item(&messages, "item/commandExecution/terminalInteraction", "c1") {
        assert_eq!(message["params"]["processId"], "1000");
        assert_eq!(message["params"]["threadId"], thread_id.as_str());
        assert_eq!(message["params"]["turnId"], turn_id.as_str());
    }

    let output: String = of_item(&messages, "item/commandExecution/outputDelta", "c1")
        .iter()
        .map(|m| m["params"]["delta"].as_str().unwrap_or_default())
        .collect();
    assert!(output.contains("ping"), "{output:?}");

    let completed = of_item(&messages, "item/completed", "c1");
    assert_eq!(completed.len(), 1, "{messages:#?}");
    let item = &completed[0]["params"]["item"];
    assert_eq!(item["processId"], "1000");
    assert_eq!(item["exitCode"], 0);
    assert_eq!(item["status"], "completed");
    assert!(
        item["aggregatedOutput"]
            .as_str()
            .is_some_and(|text| text.contains("ping")),
        "{item}"
    );
    // The later calls report on the first item; they are not items of their own.
    assert!(of_item(&messages, "item/started", "c2").is_empty());
    world.mock.verify()?;
    Ok(())
}

/// A script whose model starts a long-lived session, then keeps the turn busy with a slow
/// one-shot command.
fn busy_script(sleeper: &MarkedSleeper) -> Script {
    Script::new([
        Turn::new([exec_command_call(
            "server",
            json!({"cmd": sleeper.nested_command(60), "yield_time_ms": 250}),
        )]),
        Turn::new([shell_call("busy", ["sleep", "30"])]),
    ])
}

async fn wait_for_busy(server: &mut keel_test_support::AppServerProcess) -> anyhow::Result<()> {
    server
        .read_until("the busy command", |m| {
            m["method"] == "item/started" && m["params"]["item"]["id"] == "busy"
        })
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_live_sessions() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(ws.path(), "unified-interrupt")?;
    let world = World::new(busy_script(&sleeper), &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "start a server").await?;
    wait_for_busy(&mut server).await?;
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await?;
    let messages = until_turn_completed(&mut server, &turn_id).await?;
    let last = messages.last().cloned().unwrap_or_default();
    assert_eq!(last["params"]["turn"]["status"], "interrupted");
    // The session's item is closed before the turn ends.
    let closed = of_item(&messages, "item/completed", "server");
    assert_eq!(closed.len(), 1, "{messages:#?}");
    assert_eq!(closed[0]["params"]["item"]["status"], "failed");
    sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_takes_live_sessions_with_it() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(ws.path(), "unified-eof")?;
    let world = World::new(busy_script(&sleeper), &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    server.start_turn(&thread_id, "start a server").await?;
    wait_for_busy(&mut server).await?;
    server.close_stdin();
    server.wait().await?;
    sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}
