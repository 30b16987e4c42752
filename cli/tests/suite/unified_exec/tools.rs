//! What the model reads back from `exec_command` / `write_stdin` (the `Process exited` /
//! `Process running` layout), terminals, polling, bounded output, and processes that never
//! outlive the conversation.

use std::time::Duration;

use keel_test_support::{MarkedSleeper, Turn, exec_command_call, shell_call, write_stdin_call};
use serde_json::json;

use super::{body_of, run, wall_time};

const GONE_WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_exits_reports_its_code_and_output() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let run = run(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo hello; echo oops >&2; exit 3"}),
        )])],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let output = run.output("c1");
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"Command: echo hello; echo oops >&2; exit 3")
    );
    assert!(lines.get(1).is_some_and(|l| l.starts_with("Chunk ID: ")));
    assert!(lines.get(2).is_some_and(|l| l.starts_with("Wall time: ")));
    assert_eq!(lines.get(3), Some(&"Process exited with code 3"));
    assert!(
        lines
            .get(4)
            .is_some_and(|l| l.starts_with("Original token count: "))
    );
    assert_eq!(lines.get(5), Some(&"Output:"));
    assert!(
        output.contains("hello\n") && output.contains("oops\n"),
        "{output}"
    );
    assert_eq!(
        run.mock.requests()[0].tool_names()[..2],
        ["exec_command", "write_stdin"]
    );
    run.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_children_do_not_hold_either_tool() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(ws.path(), "unified-background")?;
    let sleep = sleeper.path().display().to_string();
    let background = format!("{sleep} 100 & echo started");
    let detached = format!("setsid {sleep} 100 & echo detached");
    let run = run(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": background, "yield_time_ms": 30000}),
            )]),
            Turn::new([exec_command_call(
                "c2",
                json!({"cmd": detached, "yield_time_ms": 30000}),
            )]),
            Turn::new([shell_call("c3", ["bash", "-lc", detached.as_str()])]),
        ],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for (call, word) in [("c1", "started"), ("c2", "detached")] {
        let output = run.output(call);
        assert!(
            output.contains("Process exited with code 0") && output.contains(word),
            "{output}"
        );
        // The yield was 30 s; the call returned when the shell exited.
        assert!(wall_time(&output) < 10.0, "{output}");
    }
    let shell = run.output("c3");
    assert!(
        shell.contains("detached") && shell.contains("\"exit_code\":0"),
        "{shell}"
    );
    // Each command's supervisor took what it left down with it, `setsid` children included.
    sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_python3), ignore = "needs python3 on PATH")]
async fn a_python_repl_on_a_terminal_is_written_to_and_read_from() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let run = run(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": "python3 -q -i", "tty": true, "yield_time_ms": 1000}),
            )]),
            Turn::new([write_stdin_call("c2", 1000, "print(6 * 7)\n", 2000)]),
            Turn::new([write_stdin_call("c3", 1000, "exit()\n", 5000)]),
        ],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let started = run.output("c1");
    assert!(
        started.contains("Process running with session ID 1000"),
        "{started}"
    );
    let answered = run.output("c2");
    assert!(
        answered.contains("Process running with session ID 1000") && answered.contains("42"),
        "{answered}"
    );
    let exited = run.output("c3");
    assert!(exited.contains("Process exited with code 0"), "{exited}");
    // `keel exec` shows what the model typed.
    assert!(
        run.stderr.contains("[session 1000] < print(6 * 7)\\n"),
        "{}",
        run.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_command_is_polled_to_completion() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let run = run(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": "echo early; sleep 1; echo late", "yield_time_ms": 250}),
            )]),
            Turn::new([write_stdin_call("c2", 1000, "", 30000)]),
        ],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let first = run.output("c1");
    assert!(
        first.contains("Process running with session ID 1000") && first.contains("early"),
        "{first}"
    );
    assert!(!body_of(&first).contains("late"), "{first}");
    let polled = run.output("c2");
    assert!(
        polled.contains("Process exited with code 0") && polled.contains("late"),
        "{polled}"
    );
    assert!(
        !body_of(&polled).contains("early"),
        "each call returns only new output: {polled}"
    );
    assert!(wall_time(&polled) < 10.0, "{polled}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sessions_and_closed_input_get_clear_errors() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let run = run(
        ws.path(),
        vec![
            Turn::new([write_stdin_call("c1", 4242, "", 250)]),
            Turn::new([exec_command_call(
                "c2",
                json!({"cmd": "sleep 5", "yield_time_ms": 250}),
            )]),
            Turn::new([write_stdin_call("c3", 1000, "y\n", 250)]),
        ],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let unknown = run.output("c1");
    assert!(
        unknown.contains("unknown session ID 4242") && unknown.contains("no live sessions"),
        "{unknown}"
    );
    let closed = run.output("c3");
    assert!(
        closed.contains("session 1000 has no terminal") && closed.contains("tty: true"),
        "{closed}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_over_the_token_cap_keeps_head_and_tail() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let run = run(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "seq 1 20000", "max_output_tokens": 200}),
        )])],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let output = run.output("c1");
    let body = body_of(&output);
    assert!(body.starts_with("1\n2\n3\n"), "{body}");
    assert!(body.ends_with("19999\n20000\n"), "{body}");
    assert!(body.contains("tokens truncated"), "{body}");
    assert!(!body.contains("\n10000\n"), "{body}");
    assert!(body.len() < 200 * 4 + 100, "{}", body.len());
    // The full count is reported: `seq 1 20000` prints 108894 bytes.
    assert!(output.contains("Original token count: 27224\n"), "{output}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_sessions_end_with_the_conversation() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(ws.path(), "unified-owner")?;
    let run = run(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": sleeper.nested_command(60), "yield_time_ms": 500}),
        )])],
        &[],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.output("c1")
            .contains("Process running with session ID 1000"),
        "{}",
        run.output("c1")
    );
    sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}
