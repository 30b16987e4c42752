use std::time::{Duration, Instant};

use keel_protocol::{EventMsg, Op};
use keel_test_support::{Script, Turn, assistant_message, shell_call};

use super::common::*;

fn pid_alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_kills_a_long_command_and_the_conversation_continues() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("long", ["bash", "-c", "echo $$; exec sleep 30"])]),
        Turn::new([assistant_message("after interrupt")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "run long").await?;
    let events = events_until(&new.conversation, |m| {
        matches!(m, EventMsg::ExecCommandOutputDelta(_))
    })
    .await?;
    let Some(EventMsg::ExecCommandOutputDelta(delta)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("no output");
    };
    let pid: i32 = String::from_utf8_lossy(delta.chunk.as_bytes())
        .trim()
        .parse()?;
    assert!(pid_alive(pid));

    let asked = Instant::now();
    new.conversation.submit(Op::Interrupt).await?;
    let events = until_turn_end(&new.conversation).await?;
    let elapsed = asked.elapsed();
    assert!(
        matches!(
            events.last().map(|e| &e.msg),
            Some(EventMsg::TurnAborted(_))
        ),
        "{:?}",
        kinds(&events)
    );
    // Far less than the 30 s the command would take: it was killed, not waited for.
    assert!(
        elapsed < Duration::from_secs(10),
        "interrupt took {elapsed:?}"
    );
    let deadline = Instant::now() + WAIT;
    while pid_alive(pid) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "sleep {pid} survived the interrupt"
        );
        tokio::task::yield_now().await;
    }

    // History stays consistent: the next request carries an output for the aborted call.
    say(&new.conversation, "again").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(
        last_agent_message(&events).as_deref(),
        Some("after interrupt")
    );
    let requests = env.mock.requests();
    let output = requests[1].tool_output("long").cloned().unwrap_or_default();
    assert!(
        output.as_str().unwrap_or_default().contains("aborted"),
        "{output}"
    );
    env.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_conversation_kills_its_command() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([shell_call(
        "long",
        ["bash", "-c", "echo $$; exec sleep 30"],
    )])]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "run long").await?;
    let events = events_until(&new.conversation, |m| {
        matches!(m, EventMsg::ExecCommandOutputDelta(_))
    })
    .await?;
    let Some(EventMsg::ExecCommandOutputDelta(delta)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("no output");
    };
    let pid: i32 = String::from_utf8_lossy(delta.chunk.as_bytes())
        .trim()
        .parse()?;
    env.manager.remove_conversation(new.conversation_id).await;
    drop(new);
    let deadline = Instant::now() + WAIT;
    while pid_alive(pid) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "sleep {pid} outlived its conversation"
        );
        tokio::task::yield_now().await;
    }
    Ok(())
}
