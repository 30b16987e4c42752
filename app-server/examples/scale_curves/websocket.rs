//! N websocket clients, each on its own connection, each running one turn with a command.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use keel_test_support::plot::{ScaleChart, Series};
use keel_test_support::{CapturedRequest, Turn, assistant_message, shell_call};
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_tungstenite::tungstenite::Message;

use crate::measure::{Scratch, mib, percentile_ms, status_kib};
use crate::{Engine, chart};

const MARKER: &str = "scale-client-";
const TURN_TIMEOUT: Duration = Duration::from_secs(120);

/// Measures every engine at every client count; charts of latency and RSS.
pub async fn run(
    engines: &[Engine],
    counts: &[usize],
) -> anyhow::Result<Vec<(&'static str, ScaleChart)>> {
    println!(
        "\n| engine | clients at once | turn p50 | turn p99 | all turns done in | server peak RSS |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let (mut p50s, mut p99s, mut rsses) = (Vec::new(), Vec::new(), Vec::new());
    for engine in engines {
        let (mut p50, mut p99, mut rss) = (Vec::new(), Vec::new(), Vec::new());
        for &count in counts {
            // A server that cannot serve a point (the reference stalling, say) leaves a gap in
            // its line, not the whole run: the row says why.
            let point = match measure(engine, count).await {
                Ok(point) => point,
                Err(err) => {
                    eprintln!(
                        "websocket: {} with {count} clients failed: {err:#}",
                        engine.label
                    );
                    println!("| {} | {count} | failed: {err} | | | |", engine.label);
                    continue;
                }
            };
            println!(
                "| {} | {count} | {:.0} ms | {:.0} ms | {:.2} s | {:.1} MiB |",
                engine.label,
                point.p50_ms,
                point.p99_ms,
                point.wall.as_secs_f64(),
                mib(point.peak_kib)
            );
            p50.push((count as f64, point.p50_ms));
            p99.push((count as f64, point.p99_ms));
            rss.push((count as f64, mib(point.peak_kib)));
        }
        let label = &engine.label;
        p50s.push(Series {
            label: format!("{label} p50"),
            points: p50,
        });
        p99s.push(Series {
            label: format!("{label} p99"),
            points: p99,
        });
        rsses.push(Series {
            label: label.clone(),
            points: rss,
        });
    }
    let mut latency = p50s;
    latency.extend(p99s);
    Ok(vec![
        (
            "websocket-latency",
            chart(
                "turn latency with N websocket clients, one turn each (bash -lc)",
                "concurrent websocket clients",
                "turn latency (ms)",
                latency,
            ),
        ),
        (
            "websocket-rss",
            chart(
                "app-server peak RSS with N websocket clients",
                "concurrent websocket clients",
                "peak RSS (MiB)",
                rsses,
            ),
        ),
    ])
}

struct Point {
    p50_ms: f64,
    p99_ms: f64,
    wall: Duration,
    peak_kib: u64,
}

/// The mock's stateless reply: a `bash -lc` call for the client named in the latest user
/// message until its output comes back, then an answer.
fn respond(request: &CapturedRequest) -> Option<Turn> {
    let client = request.input().iter().rev().find_map(|item| {
        let text = item.pointer("/content/0/text")?.as_str()?;
        text.strip_prefix(MARKER).map(str::to_owned)
    })?;
    let call_id = format!("call-{client}");
    Some(if request.tool_output_call_ids().contains(&call_id) {
        Turn::new([assistant_message(format!("done {client}"))])
    } else {
        Turn::new([shell_call(
            call_id,
            ["bash", "-lc", &format!("echo {MARKER}{client}")],
        )])
    })
}

async fn measure(engine: &Engine, count: usize) -> anyhow::Result<Point> {
    let scratch = Scratch::new(respond).await?;
    let (mock, workspace) = (&scratch.mock, &scratch.workspace);
    let mut server = scratch.app_server(engine, &["--listen", "ws://127.0.0.1:0"])?;
    // Keel logs `listening on ws://ADDR`, Codex prints `listening on: ws://ADDR`.
    let line = server
        .wait_for_stderr_line("the listening address", |line| {
            line.contains("listening on") && line.contains("ws://")
        })
        .await?;
    let addr = line
        .rsplit("ws://")
        .next()
        .unwrap_or_default()
        .trim()
        .trim_end_matches('/')
        .to_owned();
    let pid = server.pid().context("the server has no pid")?;
    let ready = Arc::new(Barrier::new(count + 1));
    let threads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..count {
        let (addr, ready, threads) = (addr.clone(), ready.clone(), threads.clone());
        let cwd = workspace.path().to_path_buf();
        clients.spawn(async move { run_client(&addr, client, &cwd, &ready, &threads).await });
    }
    // Every client has its thread before any turn starts, so the turns run at once. A client
    // that failed before the barrier never reaches it: its error is reported instead.
    if tokio::time::timeout(TURN_TIMEOUT, ready.wait())
        .await
        .is_err()
    {
        clients.abort_all();
        let mut first_error = None;
        while let Some(joined) = clients.join_next().await {
            if let Ok(Err(err)) = joined {
                first_error.get_or_insert(err);
            }
        }
        return Err(first_error.unwrap_or_else(|| {
            anyhow::anyhow!(
                "{} of {count} clients had their thread after {TURN_TIMEOUT:?}",
                threads.load(std::sync::atomic::Ordering::Relaxed)
            )
        }));
    }
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(count);
    while let Some(joined) = clients.join_next().await {
        latencies.push(joined??);
    }
    let wall = start.elapsed();
    let peak_kib = status_kib(pid, "VmHWM")?;
    drop(server);
    let requests = mock.requests();
    let ran = requests
        .iter()
        .filter(|r| {
            r.tool_output_call_ids()
                .iter()
                .any(|id| id.starts_with("call-"))
        })
        .count();
    if ran != count || !mock.violations().is_empty() {
        bail!(
            "{}: {ran} of {count} commands' outputs reached the model, {} mock violations",
            engine.label,
            mock.violations().len()
        );
    }
    latencies.sort_unstable();
    eprintln!("websocket: {} with {count} clients done", engine.label);
    Ok(Point {
        p50_ms: percentile_ms(&latencies, 0.50),
        p99_ms: percentile_ms(&latencies, 0.99),
        wall,
        peak_kib,
    })
}

/// One client: its own connection, a thread, then (after every client is ready) one turn;
/// returns the time from `turn/start` to `turn/completed`.
async fn run_client(
    addr: &str,
    client: usize,
    cwd: &std::path::Path,
    ready: &Barrier,
    threads: &std::sync::atomic::AtomicUsize,
) -> anyhow::Result<Duration> {
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}"))
        .await
        .with_context(|| format!("client {client} connecting to {addr}"))?;
    let mut next_id = 0;
    let mut request = |method: &'static str, params: Value| {
        next_id += 1;
        (
            next_id,
            json!({"id": next_id, "method": method, "params": params}),
        )
    };
    let (id, message) = request(
        "initialize",
        json!({"clientInfo": {"name": "scale-curves", "version": "0"}}),
    );
    send(&mut socket, message).await?;
    read_response(&mut socket, id).await?;
    send(&mut socket, json!({"method": "initialized"})).await?;
    let (id, message) = request("thread/start", json!({"cwd": cwd}));
    send(&mut socket, message).await?;
    let thread = read_response(&mut socket, id).await?;
    let thread_id = thread
        .pointer("/thread/id")
        .and_then(Value::as_str)
        .context("thread/start without a thread id")?
        .to_owned();
    threads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ready.wait().await;
    let start = Instant::now();
    let (id, message) = request(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": format!("{MARKER}{client}")}]}),
    );
    send(&mut socket, message).await?;
    read_response(&mut socket, id).await?;
    tokio::time::timeout(TURN_TIMEOUT, async {
        loop {
            let message = read(&mut socket).await?;
            if message.get("method").and_then(Value::as_str) == Some("turn/completed") {
                let status = message
                    .pointer("/params/turn/status")
                    .and_then(Value::as_str);
                anyhow::ensure!(
                    status == Some("completed"),
                    "client {client}: turn {status:?}"
                );
                return Ok(());
            }
        }
    })
    .await
    .with_context(|| format!("client {client}: no turn/completed"))??;
    Ok(start.elapsed())
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(socket: &mut Socket, message: Value) -> anyhow::Result<()> {
    socket.send(Message::text(message.to_string())).await?;
    Ok(())
}

async fn read(socket: &mut Socket) -> anyhow::Result<Value> {
    loop {
        match socket
            .next()
            .await
            .context("the server closed the connection")??
        {
            Message::Text(text) => return Ok(serde_json::from_str(&text)?),
            Message::Close(frame) => bail!("the server closed the connection: {frame:?}"),
            _ => {}
        }
    }
}

async fn read_response(socket: &mut Socket, id: i64) -> anyhow::Result<Value> {
    tokio::time::timeout(TURN_TIMEOUT, async {
        loop {
            let message = read(socket).await?;
            if message.get("id").and_then(Value::as_i64) == Some(id)
                && message.get("method").is_none()
            {
                if let Some(error) = message.get("error") {
                    bail!("request {id} failed: {error}");
                }
                return Ok(message.get("result").cloned().unwrap_or(Value::Null));
            }
        }
    })
    .await
    .context("no response")?
}
