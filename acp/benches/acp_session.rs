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
//!   and again after it has been idle for one second (what an editor keeps open).
//!
//! Then it closes stdin and waits for the process to exit (not timed). Prints each run on
//! stderr and a markdown table of medians (with min–max) on stdout.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use keel_test_support::{MockModelServer, Script, write_config};
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

/// One run: session/new latency, RSS right after it and after the idle second.
async fn run_once(keel: &PathBuf, mock_uri: &str) -> anyhow::Result<(Duration, u64, u64)> {
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
    drop(stdin);
    child.wait().await?;
    Ok((latency, right_after, idle))
}

fn median<T: Copy + Ord>(values: &mut [T]) -> T {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let mock = MockModelServer::start(Script::new([])).await?;
    let mut latencies = Vec::new();
    let mut after = Vec::new();
    let mut idle = Vec::new();
    for run in 0..args.warmup + args.runs {
        let (latency, right_after, idle_kib) = run_once(&args.keel, &mock.uri()).await?;
        eprintln!(
            "run {run}: session/new {:.1} ms, RSS {:.1} MiB after, {:.1} MiB idle",
            latency.as_secs_f64() * 1000.0,
            right_after as f64 / 1024.0,
            idle_kib as f64 / 1024.0
        );
        if run >= args.warmup {
            latencies.push(latency);
            after.push(right_after);
            idle.push(idle_kib);
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
    Ok(())
}
