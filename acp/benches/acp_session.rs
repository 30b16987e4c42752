//! Benchmark of `keel acp` as an editor starts it (results in docs/benchmarks.md, section
//! "keel acp"). Not part of `cargo test`.
//!
//! ```sh
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p keel-acp --bench acp_session -- \
//!     --keel /work/target-bench/release/keel [--runs 10] [--warmup 1]
//! ```
//!
//! Each run starts `keel acp` with a fresh Keel home whose `config.toml` points at a mock
//! model (served in this process; no model request is made), sends `initialize`, then
//! `session/new` for an empty workspace, and measures:
//!
//! - **session/new**: from writing the request to reading its answer (a thread started,
//!   recorded, its pickers built from the model catalogue);
//! - **RSS after session/new**: `VmRSS` of the `keel acp` process right after the answer,
//!   and again after it has been idle for one second (what an editor keeps open);
//! - **cancel**: a prompt whose model runs `bash -lc 'sleep 600'` (no approval asked, no
//!   sandbox: the test configuration's defaults); once the command's tool call is announced,
//!   `session/cancel` is sent and the time to the prompt's `cancelled` answer is measured,
//!   and the time until no process is left under `keel acp` (polled every 2 ms, up to 5 s).
//!
//! Then it closes stdin and waits for the process to exit (not timed). Prints each run on
//! stderr and a markdown table of medians (with min–max) on stdout.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use keel_test_support::{MockModelServer, Script, Turn, shell_call, write_config};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long the process sits idle before the second RSS reading.
const IDLE: Duration = Duration::from_secs(1);

struct Args {
    keel: PathBuf,
    runs: usize,
    warmup: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut parsed = Args {
        keel: PathBuf::from("target/release/keel"),
        runs: 10,
        warmup: 1,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(arg) = raw.next() {
        match arg.as_str() {
            "--keel" => parsed.keel = raw.next().context("--keel needs a path")?.into(),
            "--runs" => parsed.runs = raw.next().context("--runs needs a number")?.parse()?,
            "--warmup" => parsed.warmup = raw.next().context("--warmup needs a number")?.parse()?,
            // `cargo bench` passes `--bench`.
            "--bench" => {}
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(parsed)
}

/// `VmRSS` of `pid`, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}

/// Every process below `pid` (children, theirs, ...).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let tasks = std::fs::read_dir(format!("/proc/{parent}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for task in tasks {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// What one run measured.
struct Run {
    session_new: Duration,
    rss_after: u64,
    rss_idle: u64,
    cancel: Duration,
    /// From the cancel until no process is left under `keel acp`; `None`: some still ran
    /// after [`GONE_WITHIN`].
    gone: Option<Duration>,
}

/// How long the processes a cancel stops get to be gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// One run: session/new latency, RSS right after it and after the idle second, then a
/// prompt cancelled while its command runs.
async fn run_once(keel: &PathBuf, mock_uri: &str) -> anyhow::Result<Run> {
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(
        home.path(),
        mock_uri,
        std::iter::empty::<(&str, toml::Value)>(),
    )?;
    let mut child = tokio::process::Command::new(keel)
        .arg("acp")
        .env("KEEL_HOME", home.path())
        .current_dir(workspace.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().context("no pid")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
    let mut call = async |id: u64, method: &str, params: Value| -> anyhow::Result<Value> {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await?;
        loop {
            let line = lines
                .next_line()
                .await?
                .context("keel acp closed its output")?;
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == id {
                if message.get("error").is_some() {
                    bail!("{method} failed: {message}");
                }
                return Ok(message["result"].clone());
            }
        }
    };
    call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await?;
    let started = Instant::now();
    let session = call(
        2,
        "session/new",
        json!({"cwd": workspace.path(), "mcpServers": []}),
    )
    .await?;
    let latency = started.elapsed();
    anyhow::ensure!(session["sessionId"].is_string(), "no session: {session}");
    let right_after = rss_kib(pid)?;
    tokio::time::sleep(IDLE).await;
    let idle = rss_kib(pid)?;

    // A prompt whose command runs until it is stopped, cancelled once the call is announced.
    let session_id = session["sessionId"]
        .as_str()
        .context("session id")?
        .to_string();
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
        "sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]}});
    stdin.write_all(format!("{prompt}\n").as_bytes()).await?;
    stdin.flush().await?;
    let mut cancelled_at: Option<Instant> = None;
    let cancel = loop {
        let line = lines
            .next_line()
            .await?
            .context("keel acp closed its output")?;
        let message: Value = serde_json::from_str(&line)?;
        if message["id"] == 3 {
            anyhow::ensure!(
                message["result"]["stopReason"] == "cancelled",
                "not cancelled: {message}"
            );
            let at = cancelled_at.context("answered before the cancel")?;
            break at.elapsed();
        }
        if cancelled_at.is_none() && message["params"]["update"]["sessionUpdate"] == "tool_call" {
            let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel",
                "params": {"sessionId": session_id}});
            stdin.write_all(format!("{cancel}\n").as_bytes()).await?;
            stdin.flush().await?;
            cancelled_at = Some(Instant::now());
        }
    };
    let at = cancelled_at.context("no cancel was sent")?;
    let gone = loop {
        if descendants(pid).is_empty() {
            break Some(at.elapsed());
        }
        if at.elapsed() > GONE_WITHIN {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    drop(stdin);
    child.wait().await?;
    Ok(Run {
        session_new: latency,
        rss_after: right_after,
        rss_idle: idle,
        cancel,
        gone,
    })
}

fn median<T: Copy + Ord>(values: &mut [T]) -> T {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    // Every prompt gets the same long command.
    let mock = MockModelServer::builder()
        .script(Script::new([Turn::new([shell_call(
            "c1",
            ["bash", "-lc", "sleep 600"],
        )])]))
        .repeat(true)
        .start()
        .await?;
    let mut latencies = Vec::new();
    let mut after = Vec::new();
    let mut idle = Vec::new();
    let mut cancels = Vec::new();
    let mut gone = Vec::new();
    let mut lingering = 0;
    for run in 0..args.warmup + args.runs {
        let measured = run_once(&args.keel, &mock.uri()).await?;
        eprintln!(
            "run {run}: session/new {:.1} ms, RSS {:.1} MiB after, {:.1} MiB idle, cancel {:.1} \
             ms, processes gone after {:?}",
            measured.session_new.as_secs_f64() * 1000.0,
            measured.rss_after as f64 / 1024.0,
            measured.rss_idle as f64 / 1024.0,
            measured.cancel.as_secs_f64() * 1000.0,
            measured.gone
        );
        if run >= args.warmup {
            latencies.push(measured.session_new);
            after.push(measured.rss_after);
            idle.push(measured.rss_idle);
            cancels.push(measured.cancel);
            match measured.gone {
                Some(after) => gone.push(after),
                None => lingering += 1,
            }
        }
    }
    let (min_l, max_l) = (
        latencies.iter().min().copied(),
        latencies.iter().max().copied(),
    );
    let (min_i, max_i) = (idle.iter().min().copied(), idle.iter().max().copied());
    let ms = |d: Option<Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let mib = |k: Option<u64>| k.map_or(0.0, |k| k as f64 / 1024.0);
    println!(
        "| figure (median of {} runs) | keel acp | range |",
        args.runs
    );
    println!("|---|---|---|");
    println!(
        "| `session/new` answered | {:.1} ms | {:.1}–{:.1} ms |",
        ms(Some(median(&mut latencies))),
        ms(min_l),
        ms(max_l)
    );
    println!(
        "| RSS right after `session/new` | {:.1} MiB | |",
        mib(Some(median(&mut after)))
    );
    println!(
        "| RSS after 1 s idle | {:.1} MiB | {:.1}–{:.1} MiB |",
        mib(Some(median(&mut idle))),
        mib(min_i),
        mib(max_i)
    );
    let (min_c, max_c) = (cancels.iter().min().copied(), cancels.iter().max().copied());
    println!(
        "| `session/cancel` → `cancelled` (command running) | {:.1} ms | {:.1}–{:.1} ms |",
        ms(Some(median(&mut cancels))),
        ms(min_c),
        ms(max_c)
    );
    let (min_g, max_g) = (gone.iter().min().copied(), gone.iter().max().copied());
    if !gone.is_empty() {
        println!(
            "| `session/cancel` → no process left under `keel acp` | {:.1} ms | {:.1}–{:.1} ms |",
            ms(Some(median(&mut gone))),
            ms(min_g),
            ms(max_g)
        );
    }
    println!(
        "| runs with a process still there {} s after the cancel | {lingering} | |",
        GONE_WITHIN.as_secs()
    );
    Ok(())
}
