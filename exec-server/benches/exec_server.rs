//! Benchmarks of the exec-server (results in docs/benchmarks.md, section "exec-server").
//!
//! Run: `cargo bench -p keel-exec-server --bench exec_server` (release build). Optional
//! environment: `KEEL_BENCH_BYTES` (default 1 GiB), `KEEL_BENCH_ROUND_TRIPS` (default 2000),
//! and `KEEL_BENCH_STDIO_RUNS=N`, which only measures the raw pipe and the stdio stream,
//! alternately N times, and prints each ratio and the median (for A/B comparisons and
//! profiling).
//!
//! - throughput: `head -c $BYTES /dev/zero` streamed to a client that decodes every chunk,
//!   over stdio and websocket, next to the raw pipe `head -c $BYTES /dev/zero | cat > /dev/null`;
//! - memory: the server's peak RSS (VmHWM) during each streaming run;
//! - latency: median `command/exec/write` → echoed `outputDelta` round trip on a PTY;
//! - scale: 200 concurrent short-lived processes on one connection, all exits reported;
//! - the engine's process layer (in-process client): the PTY round trip, and a whole
//!   `exec_command`-style exchange (start `cat` on a PTY, write a line, read it back);
//! - the process supervisor's cost per command: one-shot `true` and `bash -c true`, exec to
//!   reported exit, with and without it (`KEEL_BENCH_SUPERVISOR_ONLY=1` runs only this,
//!   `KEEL_BENCH_SUPERVISOR_RUNS` sets the runs, default 300);
//! - the CPU time the stdio stream used (client, server and child), next to the CPU floor of
//!   the stdio path on this machine and the best ratio to the raw pipe it allows (see
//!   `support/floor.rs`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use keel_exec_server::{
    ExecServerClient, ExecServerClientOptions, ExecServerEvent, LocalExecServerOptions,
    spawn_local_exec_server,
};
use keel_protocol::Base64Bytes;
use keel_protocol::exec_server::{ExecParams, WriteParams};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::broadcast::error::RecvError;

#[path = "support/floor.rs"]
mod floor;

const BIN: &str = env!("CARGO_BIN_EXE_keel-exec-server");

fn params(argv: &[&str], tty: bool) -> ExecParams {
    ExecParams {
        argv: argv.iter().map(ToString::to_string).collect(),
        cwd: "/".into(),
        env: [("PATH".to_string(), "/usr/bin:/bin".to_string())].into(),
        tty,
        arg0: None,
        traceparent: None,
    }
}

fn env_number(name: &str, default: u64) -> anyhow::Result<u64> {
    match std::env::var(name) {
        Ok(value) => Ok(value.parse()?),
        Err(_) => Ok(default),
    }
}

fn peak_rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .context("no VmHWM")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("no value")?
        .parse()?)
}

fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64()
}

async fn raw_pipe(bytes: u64) -> anyhow::Result<f64> {
    let start = Instant::now();
    let status = Command::new("sh")
        .args([
            "-c",
            &format!("head -c {bytes} /dev/zero | cat > /dev/null"),
        ])
        .status()
        .await?;
    if !status.success() {
        bail!("raw pipe failed: {status}");
    }
    Ok(mb_per_s(bytes, start.elapsed()))
}

/// Streams `bytes` zeros through the client; returns MB/s.
async fn stream(client: &ExecServerClient, bytes: u64) -> anyhow::Result<f64> {
    let mut events = client.subscribe();
    let start = Instant::now();
    let session = client
        .exec(params(
            &["head", "-c", &bytes.to_string(), "/dev/zero"],
            false,
        ))
        .await?
        .session_id;
    let mut received = 0u64;
    let mut chunks = 0u64;
    loop {
        match events.recv().await {
            Ok(ExecServerEvent::Output {
                session_id, chunk, ..
            }) if session_id == session => {
                // The client already base64-decoded the chunk; touch it so it is not elided.
                received += chunk.len() as u64;
                chunks += 1;
            }
            Ok(ExecServerEvent::Exited { session_id, .. }) if session_id == session => break,
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => bail!("benchmark consumer lagged by {missed}"),
            Err(RecvError::Closed) => bail!("connection closed"),
        }
    }
    let elapsed = start.elapsed();
    if received != bytes {
        bail!("received {received} of {bytes} bytes");
    }
    if std::env::var_os("KEEL_BENCH_VERBOSE").is_some() {
        println!(
            "  {chunks} chunks, {:.1} KiB on average",
            received as f64 / chunks.max(1) as f64 / 1024.0
        );
    }
    Ok(mb_per_s(bytes, elapsed))
}

/// Streams over stdio like [`stream`]; also returns the CPU time the client (this process),
/// the server and its child used.
async fn stdio_stream(
    client: &ExecServerClient,
    server_pid: u32,
    bytes: u64,
) -> anyhow::Result<(f64, Duration, Duration)> {
    let client_before = floor::own_cpu()?;
    let server_before = floor::process_cpu(server_pid)?;
    let rate = stream(client, bytes).await?;
    Ok((
        rate,
        floor::own_cpu()? - client_before,
        floor::process_cpu(server_pid)? - server_before,
    ))
}

/// Prints the CPU floor of the stdio path for `bytes`.
async fn print_floor(bytes: u64) -> anyhow::Result<()> {
    let floor = floor::measure(bytes).await?;
    let cores = std::thread::available_parallelism()?.get();
    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    println!(
        "stdio CPU floor: {:.0} ms = raw pipe {:.0} + second pipe (4/3 the bytes) {:.0} + encode {:.0} + decode {:.0} + newline scan {:.0}",
        ms(floor.total()),
        ms(floor.raw_cpu),
        ms(floor.second_pipe),
        ms(floor.encode),
        ms(floor.decode),
        ms(floor.scan),
    );
    println!(
        "  raw pipe took {:.0} ms wall; on {cores} cores the floor allows at best {:.0}% of the raw pipe's throughput",
        ms(floor.raw_wall),
        floor.best_ratio(cores) * 100.0
    );
    Ok(())
}

/// Median and p99 of write → echo on a PTY running `cat` (the terminal echoes input).
async fn pty_round_trip(
    client: &ExecServerClient,
    rounds: u64,
) -> anyhow::Result<(Duration, Duration)> {
    let mut events = client.subscribe();
    let session = client.exec(params(&["cat"], true)).await?.session_id;
    let mut samples = Vec::new();
    for round in 0..rounds + 50 {
        let start = Instant::now();
        client
            .write(WriteParams {
                session_id: session.clone(),
                chunk: Base64Bytes(b"x".to_vec()),
            })
            .await?;
        loop {
            match events.recv().await? {
                ExecServerEvent::Output {
                    session_id, chunk, ..
                } if session_id == session && chunk.contains(&b'x') => break,
                _ => {}
            }
        }
        if round >= 50 {
            samples.push(start.elapsed());
        }
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    Ok((median, p99))
}

/// Median and p99 from `command/exec` to the reported exit of `argv` (pipes), run one after
/// another `runs` times after 20 warm-up runs: the fixed cost of starting and ending a command.
async fn one_shot_latency(
    client: &ExecServerClient,
    argv: &[&str],
    runs: u64,
) -> anyhow::Result<(Duration, Duration)> {
    let mut events = client.subscribe();
    let mut samples = Vec::new();
    for run in 0..runs + 20 {
        let start = Instant::now();
        let session = client.exec(params(argv, false)).await?.session_id;
        loop {
            if let ExecServerEvent::Exited { session_id, .. } = events.recv().await?
                && session_id == session
            {
                break;
            }
        }
        if run >= 20 {
            samples.push(start.elapsed());
        }
    }
    samples.sort();
    Ok((
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
    ))
}

/// What the process supervisor adds to each command: the same one-shot commands through an
/// in-process handler with and without it.
async fn supervisor_cost(runs: u64) -> anyhow::Result<()> {
    for argv in [&["true"][..], &["bash", "-c", "true"][..]] {
        for supervisor in [None, Some(std::path::PathBuf::from(BIN))] {
            let label = if supervisor.is_some() {
                "supervised"
            } else {
                "unsupervised"
            };
            let config = keel_exec_server::ExecServerConfig {
                supervisor,
                ..keel_exec_server::ExecServerConfig::default()
            };
            let client =
                ExecServerClient::in_process(config, ExecServerClientOptions::default()).await?;
            let (median, p99) = one_shot_latency(&client, argv, runs).await?;
            println!(
                "one-shot {:<16} {label:<13} ({runs} runs): median {median:?}, p99 {p99:?}",
                argv.join(" ")
            );
            client.shutdown().await;
        }
    }
    Ok(())
}

/// Median and p99 of a whole interactive exchange, as the engine's `exec_command` does it:
/// start `cat` on a PTY, write a line, read the line back; then end the process.
async fn pty_session_cycle(
    client: &ExecServerClient,
    rounds: u64,
) -> anyhow::Result<(Duration, Duration)> {
    let mut events = client.subscribe();
    let mut samples = Vec::new();
    for round in 0..rounds + 10 {
        let start = Instant::now();
        let session = client.exec(params(&["cat"], true)).await?.session_id;
        client
            .write(WriteParams {
                session_id: session.clone(),
                chunk: Base64Bytes(b"ping\n".to_vec()),
            })
            .await?;
        let mut seen = Vec::new();
        while !seen.windows(4).any(|window| window == b"ping") {
            match events.recv().await? {
                ExecServerEvent::Output {
                    session_id, chunk, ..
                } if session_id == session => seen.extend_from_slice(&chunk),
                _ => {}
            }
        }
        if round >= 10 {
            samples.push(start.elapsed());
        }
        client
            .terminate(keel_protocol::exec_server::TerminateParams {
                session_id: session.clone(),
                mode: Some(keel_protocol::exec_server::TerminateMode::Force),
            })
            .await?;
        loop {
            if let ExecServerEvent::Exited { session_id, .. } = events.recv().await?
                && session_id == session
            {
                break;
            }
        }
    }
    samples.sort();
    Ok((
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
    ))
}

/// Starts 200 processes at once and waits until every exit is reported.
async fn scale(client: &ExecServerClient, count: usize) -> anyhow::Result<Duration> {
    let mut events = client.subscribe();
    // Collect exits while the execs are in flight, so the subscriber never lags.
    let exits = tokio::spawn(async move {
        let mut exits = std::collections::HashMap::new();
        while exits.len() < count {
            if let ExecServerEvent::Exited {
                session_id,
                exit_code,
            } = events.recv().await?
            {
                exits.insert(session_id, exit_code);
            }
        }
        anyhow::Ok(exits)
    });
    let start = Instant::now();
    let started = futures::future::try_join_all(
        (0..count).map(|n| client.exec(params(&["sh", "-c", &format!("echo {n}")], false))),
    )
    .await?;
    let exits = tokio::time::timeout(Duration::from_secs(60), exits).await???;
    let elapsed = start.elapsed();
    for response in started {
        match exits.get(&response.session_id) {
            Some(0) => {}
            other => bail!("{} exited with {other:?}", response.session_id),
        }
    }
    Ok(elapsed)
}

async fn websocket_server() -> anyhow::Result<(tokio::process::Child, String)> {
    let mut child = Command::new(BIN)
        .args(["--listen", "ws://127.0.0.1:0"])
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    while let Some(line) = lines.next_line().await? {
        if let Some(url) = line.strip_prefix("listening on ") {
            let url = url.to_string();
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return Ok((child, url));
        }
    }
    bail!("websocket server exited early")
}

/// Alternates the raw pipe and the stdio stream `runs` times; prints each and the medians.
async fn stdio_only(bytes: u64, runs: u64) -> anyhow::Result<()> {
    print_floor(bytes).await?;
    let mut ratios = Vec::new();
    let mut stdio_rates = Vec::new();
    for run in 1..=runs {
        let raw = raw_pipe(bytes).await?;
        let server = spawn_local_exec_server(BIN, LocalExecServerOptions::default()).await?;
        let pid = server.pid().context("server pid")?;
        let (stdio, client_cpu, server_cpu) = stdio_stream(&server, pid, bytes).await?;
        let rss = peak_rss_kib(pid)?;
        drop(server);
        println!(
            "run {run}: raw {raw:6.0} MB/s, stdio {stdio:6.0} MB/s ({:.0}% of raw), server peak RSS {:.1} MiB, CPU {:.0} ms (client {:.0}, server and child {:.0})",
            stdio / raw * 100.0,
            rss as f64 / 1024.0,
            (client_cpu + server_cpu).as_secs_f64() * 1000.0,
            client_cpu.as_secs_f64() * 1000.0,
            server_cpu.as_secs_f64() * 1000.0,
        );
        ratios.push(stdio / raw);
        stdio_rates.push(stdio);
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "median: stdio {:.0} MB/s, {:.0}% of raw (ratios {:.0}%–{:.0}%)",
        median(&mut stdio_rates),
        median(&mut ratios) * 100.0,
        ratios[0] * 100.0,
        ratios[ratios.len() - 1] * 100.0
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bytes = env_number("KEEL_BENCH_BYTES", 1 << 30)?;
    let rounds = env_number("KEEL_BENCH_ROUND_TRIPS", 2000)?;
    println!("exec-server benchmarks ({bytes} bytes streamed, {rounds} round trips)");
    let stdio_runs = env_number("KEEL_BENCH_STDIO_RUNS", 0)?;
    if stdio_runs > 0 {
        return stdio_only(bytes, stdio_runs).await;
    }
    let supervisor_runs = env_number("KEEL_BENCH_SUPERVISOR_RUNS", 300)?;
    if env_number("KEEL_BENCH_SUPERVISOR_ONLY", 0)? > 0 {
        return supervisor_cost(supervisor_runs).await;
    }

    let raw = raw_pipe(bytes).await?;
    println!("raw pipe (head | cat > /dev/null):   {raw:8.0} MB/s");

    let server = spawn_local_exec_server(BIN, LocalExecServerOptions::default()).await?;
    let pid = server.pid().context("server pid")?;
    let (stdio, client_cpu, server_cpu) = stdio_stream(&server, pid, bytes).await?;
    let stdio_rss = peak_rss_kib(pid)?;
    println!(
        "stdio:                               {stdio:8.0} MB/s ({:.0}% of raw), server peak RSS {:.1} MiB",
        stdio / raw * 100.0,
        stdio_rss as f64 / 1024.0
    );
    println!(
        "  CPU used: {:.0} ms (client {:.0}, server and child {:.0})",
        (client_cpu + server_cpu).as_secs_f64() * 1000.0,
        client_cpu.as_secs_f64() * 1000.0,
        server_cpu.as_secs_f64() * 1000.0,
    );
    print_floor(bytes).await?;
    let (median, p99) = pty_round_trip(&server, rounds).await?;
    println!("pty write→echo round trip (stdio):   median {median:?}, p99 {p99:?}");
    let elapsed = scale(&server, 200).await?;
    println!("200 concurrent processes (stdio):    all exits reported in {elapsed:?}");
    drop(server);

    let (mut child, url) = websocket_server().await?;
    let ws_pid = child.id().context("ws server pid")?;
    let client =
        ExecServerClient::connect_websocket(&url, ExecServerClientOptions::default()).await?;
    let ws = stream(&client, bytes).await?;
    let ws_rss = peak_rss_kib(ws_pid)?;
    println!(
        "websocket:                           {ws:8.0} MB/s ({:.0}% of raw), server peak RSS {:.1} MiB",
        ws / raw * 100.0,
        ws_rss as f64 / 1024.0
    );
    let (median, p99) = pty_round_trip(&client, rounds).await?;
    println!("pty write→echo round trip (ws):      median {median:?}, p99 {p99:?}");
    let elapsed = scale(&client, 200).await?;
    println!("200 concurrent processes (ws):       all exits reported in {elapsed:?}");
    drop(client);
    child.kill().await?;

    // The engine's own process layer: an in-process handler, no transport.
    let client = ExecServerClient::in_process(
        keel_exec_server::ExecServerConfig::default(),
        ExecServerClientOptions::default(),
    )
    .await?;
    let (median, p99) = pty_round_trip(&client, rounds).await?;
    println!("pty write→echo round trip (in-proc): median {median:?}, p99 {p99:?}");
    let cycles = (rounds / 10).max(20);
    let (median, p99) = pty_session_cycle(&client, cycles).await?;
    println!(
        "start cat on a pty, write a line, read it back (in-proc, {cycles} runs): median {median:?}, p99 {p99:?}"
    );
    client.shutdown().await;
    supervisor_cost(supervisor_runs).await
}
