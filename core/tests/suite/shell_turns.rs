use keel_protocol::EventMsg;
use keel_test_support::{Script, Turn, assistant_message, reasoning, shell_call};
use pretty_assertions::assert_eq;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_shell_calls_run_and_feed_back() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([
            reasoning("Look first."),
            shell_call("c1", ["bash", "-lc", "echo one > a.txt; cat a.txt"]),
        ]),
        Turn::new([shell_call("c2", ["bash", "-lc", "echo two >&2; exit 3"])]),
        Turn::new([assistant_message("All done")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    assert_eq!(new.session_configured.model, "mock-model");
    say(&new.conversation, "do it").await?;
    let events = until_turn_end(&new.conversation).await?;
    let kinds = kinds(&events);
    assert_eq!(kinds.first().map(String::as_str), Some("task_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("task_complete"));
    assert!(kinds.contains(&"agent_reasoning".to_string()), "{kinds:?}");
    assert_eq!(last_agent_message(&events).as_deref(), Some("All done"));

    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ExecCommandEnd(end) => Some(end.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].exit_code, 0);
    assert_eq!(ends[0].stdout, "one\n");
    assert_eq!(ends[1].exit_code, 3);
    assert_eq!(ends[1].stderr, "two\n");
    assert_eq!(std::fs::read_to_string(env.ws().join("a.txt"))?, "one\n");
    let deltas = events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::ExecCommandOutputDelta(_)))
        .count();
    assert!(deltas >= 2, "{kinds:?}");

    // What the engine sent back: the outputs of both calls, with exit codes.
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 3);
    let out1 = requests[1].tool_output("c1").cloned().unwrap_or_default();
    let out1: serde_json::Value = serde_json::from_str(out1.as_str().unwrap_or("{}"))?;
    assert_eq!(out1["output"], "one\n");
    assert_eq!(out1["metadata"]["exit_code"], 0);
    let out2 = requests[2].tool_output("c2").cloned().unwrap_or_default();
    assert!(
        out2.as_str()
            .unwrap_or_default()
            .contains("\"exit_code\":3"),
        "{out2}"
    );
    // Unified exec is offered by default; a `shell` call is still run. The sub-agent and
    // agent-job tools follow (job workers alone get `report_agent_job_result`; a build
    // without the `agent-jobs` feature offers no job tool), then the goal tools.
    let mut expected = vec![
        "exec_command",
        "write_stdin",
        "apply_patch",
        "update_plan",
        "request_user_input",
        "view_image",
        "spawn_agent",
        "send_input",
        "wait_agent",
        "close_agent",
        "resume_agent",
    ];
    if cfg!(feature = "agent-jobs") {
        expected.push("spawn_agents_on_csv");
    }
    expected.extend(["get_goal", "create_goal", "update_goal"]);
    assert_eq!(requests[0].tool_names(), expected);
    env.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_message_continues_the_conversation() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("second answer")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "one").await?;
    let first = until_turn_end(&new.conversation).await?;
    assert_eq!(last_agent_message(&first).as_deref(), Some("first answer"));
    say(&new.conversation, "two").await?;
    let second = until_turn_end(&new.conversation).await?;
    assert_eq!(
        last_agent_message(&second).as_deref(),
        Some("second answer")
    );
    let requests = env.mock.requests();
    let input = serde_json::to_string(requests[1].input())?;
    assert!(
        input.contains("first answer") && input.contains("\"two\""),
        "{input}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_deltas_and_token_counts_are_reported() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message(
        "Hello there, streaming world",
    )])]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "hi").await?;
    let events = until_turn_end(&new.conversation).await?;
    let text: String = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::AgentMessageDelta(d) => Some(d.delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello there, streaming world");
    let usage = events.iter().find_map(|e| match &e.msg {
        EventMsg::TokenCount(count) => count.info.clone(),
        _ => None,
    });
    assert!(usage.is_some_and(|u| u.total_token_usage.total_tokens > 0));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_during_a_turn_joins_that_turn() -> anyhow::Result<()> {
    // The command waits for a file the test creates once the extra input is queued.
    let wait = "for i in $(seq 400); do [ -f go ] && exit 0; sleep 0.05; done; exit 1";
    let script = Script::new([
        Turn::new([shell_call("slow", ["bash", "-c", wait])]),
        Turn::new([assistant_message("saw both")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "first").await?;
    events_until(&new.conversation, |m| {
        matches!(m, EventMsg::ExecCommandBegin(_))
    })
    .await?;
    say(&new.conversation, "also this").await?;
    // Submissions are handled in order: the refusal of this rollback proves the input before
    // it was queued for the running turn.
    new.conversation
        .submit(keel_protocol::Op::ThreadRollback { num_turns: 1 })
        .await?;
    events_until(
        &new.conversation,
        |m| matches!(m, EventMsg::Error(e) if e.message.contains("roll back")),
    )
    .await?;
    std::fs::write(env.ws().join("go"), "")?;
    let events = until_turn_end(&new.conversation).await?;
    assert!(
        matches!(
            events.last().map(|e| &e.msg),
            Some(EventMsg::TaskComplete(_))
        ),
        "{:?}",
        kinds(&events)
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::TaskStarted(_))),
        "one turn"
    );
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    let second = serde_json::to_string(requests[1].input())?;
    assert!(second.contains("also this"), "{second}");
    Ok(())
}

/// How models start a server: a background child keeps the pipes open, but the call returns
/// once the command itself has exited and its output went quiet, not at the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_child_does_not_hold_the_call() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call(
            "c1",
            ["bash", "-lc", "sleep 100 & echo started"],
        )]),
        Turn::new([assistant_message("server up")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "start it").await?;
    let events = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        until_turn_end(&new.conversation),
    )
    .await??;
    let end = events
        .iter()
        .find_map(|e| match &e.msg {
            EventMsg::ExecCommandEnd(end) => Some(end.clone()),
            _ => None,
        })
        .ok_or_else(|| anyhow::anyhow!("no exec_command_end"))?;
    assert_eq!(end.exit_code, 0, "{end:?}");
    assert_eq!(end.stdout, "started\n");
    assert_eq!(last_agent_message(&events).as_deref(), Some("server up"));
    Ok(())
}
