//! Benchmark of `keel mcp-server` next to the reference Codex `mcp-server` (results in
//! docs/benchmarks.md, section "mcp-server"). Not part of `cargo test`.
//!
//! ```sh
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p keel-mcp-server --bench mcp_server -- \
//!     --keel /work/target-bench/release/keel [--codex "$REF"] [--runs 10] [--warmup 1]
//! ```
//!
//! Without `--keel` it measures this crate's own `keel-mcp-server` binary. `--keel PATH` and
//! `--codex PATH` are run as `PATH mcp-server`; Keel with `KEEL_HOME`, the reference with
//! `CODEX_HOME` and `OPENAI_API_KEY=x`, both over the same `config.toml` (model `mock-model`,
//! provider `mock` on the Responses API with zero retries, approval `never`, sandbox
//! `danger-full-access`).
//!
//! Each run spawns a fresh server next to a fresh mock model (the `keel-test-support` mock,
//! served in this process; the `keel-mock-model` binary wraps the same code) scripted with
//! two turns: a `shell` call `echo bench-step`, then the message `done`. It measures:
//!
//! - **startup**: from just before the spawn to the `initialize` response (the client
//!   declares `elicitation`; the handshake offers protocol `2025-06-18`);
//! - **call**: from sending `tools/call` `codex` (prompt and `cwd`) to its result, which must
//!   be `done`, with the mock having served both turns, the second carrying the command's
//!   output `bench-step`, and no protocol violations.
//!
//! Then it closes stdin and waits for the server to exit (not timed). Rounds alternate the
//! servers, so load from elsewhere hits both alike. A home directory persists per server
//! across runs, so first-run setup lands in the discarded warm-up runs. Prints the raw
//! figures to stderr and a markdown table of medians (with min–max) to stdout.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use keel_test_support::{
    McpProcess, MockModelServer, ProcessBuilder, Script, Turn, assistant_message, shell_call,
    write_config,
};
use serde_json::json;

/// This crate's server binary, measured when `--keel` is not given.
const OWN_BIN: &str = env!("CARGO_BIN_EXE_keel-mcp-server");

/// The MCP revision the client offers.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// Bounds every wait of one run.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A server under test: how to start it.
struct Server {
    name: &'static str,
    program: PathBuf,
    args: Vec<&'static str>,
    home_var: &'static str,
    extra_env: Vec<(&'static str, &'static str)>,
    home: tempfile::TempDir,
}

/// One run's figures.
struct Sample {
    startup: Duration,
    call: Duration,
}

struct Options {
    keel: Option<PathBuf>,
    codex: Option<PathBuf>,
    runs: usize,
    warmup: usize,
}

fn parse_options() -> anyhow::Result<Options> {
    let mut options = Options {
        keel: None,
        codex: None,
        runs: 10,
        warmup: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--keel" => options.keel = Some(value()?.into()),
            "--codex" => options.codex = Some(value()?.into()),
            "--runs" => options.runs = value()?.parse().context("--runs")?,
            "--warmup" => options.warmup = value()?.parse().context("--warmup")?,
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => bail!("unknown argument `{other}`; see the header of benches/mcp_server.rs"),
        }
    }
    ensure!(options.runs > 0, "--runs must be at least 1");
    Ok(options)
}

fn script() -> Script {
    Script::new([
        Turn::new([shell_call("bench-1", ["echo", "bench-step"])]),
        Turn::new([assistant_message("done")]),
    ])
}

async fn run_once(server: &Server, workspace: &Path) -> anyhow::Result<Sample> {
    let mock = MockModelServer::start(script()).await?;
    write_config(
        server.home.path(),
        &mock.uri(),
        std::iter::empty::<(&str, &str)>(),
    )?;
    let mut builder = ProcessBuilder::new(&server.program)
        .args(server.args.iter().copied())
        .home_var(server.home_var)
        .home_path(server.home.path())
        .cwd(workspace)
        .env_remove("RUST_LOG")
        .timeout(RUN_TIMEOUT);
    for (key, value) in &server.extra_env {
        builder = builder.env(key, value);
    }

    let spawned_at = Instant::now();
    let mut mcp = McpProcess::spawn(builder)?;
    let init = mcp
        .request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "keel-bench", "version": "0"},
            }),
        )
        .await?;
    let startup = spawned_at.elapsed();
    ensure!(
        init["serverInfo"]["name"].is_string(),
        "{}: bad initialize result {init}",
        server.name
    );
    mcp.send_notification("notifications/initialized", json!({}))
        .await?;

    let called_at = Instant::now();
    let result = mcp
        .call_tool(
            "codex",
            json!({"prompt": "run the step", "cwd": workspace.display().to_string()}),
        )
        .await?;
    let call = called_at.elapsed();

    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    ensure!(
        text == "done" && result["isError"] != json!(true),
        "{}: unexpected codex result {result}\n{}",
        server.name,
        mcp.diagnostics()
    );
    let requests = mock.requests();
    ensure!(
        requests.len() == 2,
        "{}: the mock served {} requests, not 2",
        server.name,
        requests.len()
    );
    let second = serde_json::to_string(requests[1].input())?;
    ensure!(
        second.contains("bench-step"),
        "{}: the second request lacks the command output: {second}",
        server.name
    );
    mock.verify()?;

    mcp.close_stdin();
    if let Err(err) = mcp.wait().await {
        eprintln!(
            "{}: did not exit after stdin closed ({err}); killing",
            server.name
        );
        mcp.kill().await?;
    }
    Ok(Sample { startup, call })
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median, min and max in milliseconds.
fn summary(values: &mut [Duration]) -> (f64, f64, f64) {
    values.sort_unstable();
    let n = values.len();
    let median = if n % 2 == 1 {
        millis(values[n / 2])
    } else {
        (millis(values[n / 2 - 1]) + millis(values[n / 2])) / 2.0
    };
    (median, millis(values[0]), millis(values[n - 1]))
}

fn cell((median, min, max): (f64, f64, f64)) -> String {
    format!("{median:.1} ms ({min:.1}–{max:.1})")
}

fn home(prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    Ok(tempfile::Builder::new().prefix(prefix).tempdir()?)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let options = parse_options()?;
    let mut servers = vec![match &options.keel {
        Some(keel) => Server {
            name: "keel mcp-server",
            program: keel.clone(),
            args: vec!["mcp-server"],
            home_var: "KEEL_HOME",
            extra_env: Vec::new(),
            home: home("keel-bench-")?,
        },
        None => Server {
            name: "keel-mcp-server",
            program: OWN_BIN.into(),
            args: Vec::new(),
            home_var: "KEEL_HOME",
            extra_env: Vec::new(),
            home: home("keel-bench-")?,
        },
    }];
    if let Some(codex) = &options.codex {
        servers.push(Server {
            name: "codex mcp-server (reference)",
            program: codex.clone(),
            args: vec!["mcp-server"],
            home_var: "CODEX_HOME",
            extra_env: vec![("OPENAI_API_KEY", "x")],
            home: home("codex-bench-")?,
        });
    }
    let workspace = tempfile::Builder::new().prefix("mcp-bench-ws-").tempdir()?;

    let mut samples: Vec<Vec<Sample>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 0..options.warmup + options.runs {
        for (server, samples) in servers.iter().zip(&mut samples) {
            let sample = run_once(server, workspace.path())
                .await
                .with_context(|| format!("{} (round {round})", server.name))?;
            if round >= options.warmup {
                samples.push(sample);
            }
        }
    }

    let mut rows = Vec::new();
    for (server, samples) in servers.iter().zip(&samples) {
        let mut startup: Vec<Duration> = samples.iter().map(|s| s.startup).collect();
        let mut call: Vec<Duration> = samples.iter().map(|s| s.call).collect();
        let raw = |values: &[Duration]| {
            values
                .iter()
                .map(|d| format!("{:.1}", millis(*d)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        eprintln!(
            "{}: startup ms [{}], call ms [{}]",
            server.name,
            raw(&startup),
            raw(&call)
        );
        rows.push(format!(
            "| {} | {} | {} |",
            server.name,
            cell(summary(&mut startup)),
            cell(summary(&mut call))
        ));
    }
    println!(
        "| server | startup → `initialize` response, median (min–max) | 2-turn `codex` call, median (min–max) |"
    );
    println!("| --- | --- | --- |");
    for row in rows {
        println!("{row}");
    }
    println!(
        "\n{} runs per server after {} warm-up run(s); load average at the end: {}",
        options.runs,
        options.warmup,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}
