//! Resume of a long recorded thread: `thread/resume` time and the server's peak RSS by the
//! number of items the thread holds.

use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use keel_test_support::plot::{ScaleChart, Series};
use keel_test_support::{Turn, assistant_message};
use serde_json::{Value, json};

use crate::measure::{Scratch, mib, status_kib};
use crate::{Engine, chart};

/// Items per recorded turn: the user's message, a `shell` call, its output, the answer.
const ITEMS_PER_TURN: usize = 4;

/// Measures Keel at every item count; charts of time and RSS.
pub async fn run(
    engine: &Engine,
    counts: &[usize],
) -> anyhow::Result<Vec<(&'static str, ScaleChart)>> {
    println!(
        "\n| engine | items in the thread | rollout size | `thread/resume` | server peak RSS |"
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    let (mut times, mut rsses) = (Vec::new(), Vec::new());
    for &items in counts {
        let (millis, peak_kib, bytes) = measure(engine, items).await?;
        println!(
            "| {} | {items} | {:.1} MiB | {millis:.0} ms | {:.1} MiB |",
            engine.label,
            bytes as f64 / (1024.0 * 1024.0),
            mib(peak_kib)
        );
        times.push((items as f64, millis));
        rsses.push((items as f64, mib(peak_kib)));
    }
    let label = engine.label.clone();
    Ok(vec![
        (
            "resume-time",
            chart(
                "thread/resume of an N-item thread (fresh server)",
                "items in the thread",
                "time to answer (ms)",
                vec![Series {
                    label: label.clone(),
                    points: times,
                }],
            ),
        ),
        (
            "resume-rss",
            chart(
                "server peak RSS resuming an N-item thread",
                "items in the thread",
                "peak RSS (MiB)",
                vec![Series {
                    label,
                    points: rsses,
                }],
            ),
        ),
    ])
}

/// Writes the thread, resumes it on a fresh server: (milliseconds, peak KiB, rollout bytes).
async fn measure(engine: &Engine, items: usize) -> anyhow::Result<(f64, u64, u64)> {
    let scratch = Scratch::new(|_| Some(Turn::new([assistant_message("unused")]))).await?;
    let (home, workspace) = (&scratch.home, &scratch.workspace);
    let id = uuid::Uuid::now_v7().to_string();
    let day = home.path().join("sessions/2026/11/20");
    std::fs::create_dir_all(&day)?;
    let path = day.join(format!("rollout-2026-11-20T00-00-00-{id}.jsonl"));
    write_rollout(&path, &id, workspace.path(), items.div_ceil(ITEMS_PER_TURN))?;
    let bytes = std::fs::metadata(&path)?.len();

    let mut server = scratch.app_server(engine, &[])?;
    server.initialize().await?;
    let pid = server.pid().context("the server has no pid")?;
    let start = Instant::now();
    let result = server
        .request("thread/resume", json!({"threadId": id}))
        .await?;
    let millis = start.elapsed().as_secs_f64() * 1000.0;
    let peak_kib = status_kib(pid, "VmHWM")?;
    let turns = result
        .pointer("/thread/turns")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    anyhow::ensure!(
        turns == items.div_ceil(ITEMS_PER_TURN),
        "the resumed thread has {turns} turns, not {}",
        items.div_ceil(ITEMS_PER_TURN)
    );
    eprintln!("resume: {items} items resumed");
    Ok((millis, peak_kib, bytes))
}

/// A rollout in Keel's line format: the session meta, then `turns` turns of a user message,
/// a `shell` call with its end event and output, and the answer. Lines are compact JSON with
/// `timestamp`, `type`, `payload` in that order and each payload's `type` first, as Keel
/// writes them (its reader classifies a line by its first bytes).
fn write_rollout(path: &Path, id: &str, cwd: &Path, turns: usize) -> anyhow::Result<()> {
    let ts = "2026-11-20T00:00:00.000Z";
    let quote = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let cwd = quote(&cwd.to_string_lossy());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut line = |kind: &str, payload: String| -> std::io::Result<()> {
        writeln!(
            out,
            r#"{{"timestamp":"{ts}","type":"{kind}","payload":{payload}}}"#
        )
    };
    line(
        "session_meta",
        format!(
            r#"{{"id":"{id}","timestamp":"{ts}","cwd":{cwd},"model":"mock-model","originator":"keel","cli_version":"0.1.0"}}"#
        ),
    )?;
    for turn in 1..=turns {
        let text = quote(&format!("step {turn}: look at file_{turn}.rs"));
        let command = format!(r#"["bash","-lc","cat file_{turn}.rs"]"#);
        let arguments = quote(&format!(r#"{{"command":{command}}}"#));
        let output = quote(&format!(
            "fn step_{turn}() {{ /* {} */ }}\n",
            "x".repeat(120)
        ));
        let answer = quote(&format!("done with step {turn}"));
        let event = |body: String| format!(r#"{{"type":{body}}}"#);
        line(
            "event_msg",
            event(format!(r#""task_started","turn_id":"turn-{turn}""#)),
        )?;
        line(
            "response_item",
            event(format!(
                r#""message","role":"user","content":[{{"type":"input_text","text":{text}}}]"#
            )),
        )?;
        line(
            "event_msg",
            event(format!(r#""user_message","message":{text},"images":[]"#)),
        )?;
        line(
            "response_item",
            event(format!(
                r#""function_call","name":"shell","arguments":{arguments},"call_id":"call-{turn}""#
            )),
        )?;
        line(
            "event_msg",
            event(format!(
                r#""exec_command_end","call_id":"call-{turn}","turn_id":"turn-{turn}","command":{command},"cwd":{cwd},"parsed_cmd":[{{"type":"unknown","cmd":"cat file_{turn}.rs"}}],"source":"agent","stdout":{output},"stderr":"","aggregated_output":{output},"exit_code":0,"duration":{{"secs":0,"nanos":3000000}},"formatted_output":{output},"status":"completed""#
            )),
        )?;
        line(
            "response_item",
            event(format!(
                r#""function_call_output","call_id":"call-{turn}","output":{output}"#
            )),
        )?;
        line(
            "event_msg",
            event(format!(r#""agent_message","message":{answer}"#)),
        )?;
        line(
            "response_item",
            event(format!(
                r#""message","role":"assistant","content":[{{"type":"output_text","text":{answer}}}]"#
            )),
        )?;
        line(
            "event_msg",
            event(format!(
                r#""task_complete","turn_id":"turn-{turn}","last_agent_message":{answer}"#
            )),
        )?;
    }
    out.flush()?;
    Ok(())
}
