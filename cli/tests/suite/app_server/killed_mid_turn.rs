//! A server killed mid-turn (`SIGKILL`: no shutdown code runs) loses nothing a client was
//! told of: every item whose `item/completed` reached the client is in the thread's record,
//! because items are recorded before clients hear of them. Resumed by the next server, the
//! thread has those items and the turn ends as interrupted, which is what a fleet relies on
//! when another server takes over.

use std::time::Duration;

use keel_protocol::app_server::{ThreadItem, TurnStatus};
use keel_protocol::app_server::{client_request as rq, server_notification as nt};
use keel_test_support::{Fault, Script, Turn, assistant_message, shell_call};
use serde_json::json;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_turn_keeps_every_item_a_client_saw() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "seen-before-the-crash"])]),
        // The model's next answer never ends: the turn is still running when the server dies.
        Turn::new([assistant_message("never finished")])
            .with_fault(Fault::stall_after(1, Duration::from_secs(600))),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    server
        .start_turn(&thread_id, "run it and keep going")
        .await?;
    let completed = server
        .next_notification::<nt::ItemCompleted>(
            |done| matches!(&done.item, ThreadItem::CommandExecution { id, .. } if id == "c1"),
        )
        .await?;
    let ThreadItem::CommandExecution {
        aggregated_output, ..
    } = &completed.item
    else {
        anyhow::bail!("not a command: {completed:?}");
    };
    assert!(
        aggregated_output
            .as_deref()
            .is_some_and(|output| output.contains("seen-before-the-crash"))
    );
    server.kill().await?;
    drop(server);

    // The next server resumes the thread: the item the client saw is there, the turn ended.
    let mut server = world.server().await?;
    let resumed = server
        .call::<rq::ThreadResume>(serde_json::from_value(json!({"threadId": thread_id}))?)
        .await?;
    let turn = resumed
        .thread
        .turns
        .first()
        .ok_or_else(|| anyhow::anyhow!("no turn recorded"))?;
    assert_eq!(turn.status, TurnStatus::Interrupted, "{turn:?}");
    let kept = turn.items.iter().find_map(|item| match item {
        ThreadItem::CommandExecution {
            id,
            aggregated_output,
            ..
        } if id == "c1" => aggregated_output.clone(),
        _ => None,
    });
    assert!(
        kept.as_deref()
            .is_some_and(|output| output.contains("seen-before-the-crash")),
        "{turn:?}"
    );
    Ok(())
}
