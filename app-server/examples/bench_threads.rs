//! Throughput benchmark for an app-server: many threads, each running a short scripted task,
//! all at once on one server over stdio, against one in-process mock model.
//!
//! Each thread runs `--turns` turns one after the other; in every turn the mock first asks
//! for a shell command (`echo T-N`), and once the command's output comes back it answers with
//! an assistant message, so a turn is two model requests and one process spawn. All threads
//! run concurrently. The mock's responder is stateless (it reads the task marker from the
//! latest user message and looks for its own call id among the tool outputs), so the order
//! in which requests arrive does not matter.
//!
//! Measured: wall time from the moment every thread has started (and, with
//! `--stalled-subscribers`, has its stalled subscriber) to the last `turn/completed` received, turns per second, the server's peak RSS (`VmHWM` of the server process, plus
//! that of any descendant still alive at the end, read just before the server is shut down)
//! and the server's CPU time (its own and its reaped children's, from `/proc/<pid>/stat`).
//! One markdown table row is printed on stdout; details (turn latencies, model requests,
//! mock violations) go to stderr.
//!
//! ```sh
//! # `--example` selects only the example, so the server binary is built on its own.
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel-app-server \
//!     --example bench_threads
//! # Keel
//! /work/target-bench/release/examples/bench_threads --server /work/target-bench/release/keel \
//!     -- app-server
//! # the reference Codex app-server (it takes the same messages); `-c key=value` after
//! # `app-server` overrides its config, e.g. `-c features.shell_snapshot=false`
//! /work/target-bench/release/examples/bench_threads --server "$REF" --home-env CODEX_HOME \
//!     --label codex -- app-server
//! ```
//!
//! `--websocket` runs the same load over one websocket connection (`--listen ws://127.0.0.1:0`
//! is added to the server's arguments); `--stalled-subscribers` (which implies it) also opens,
//! for every thread, a second connection that resumes the thread and then never reads again,
//! so each thread has a subscriber whose socket fills up. Compare the two rows to see what
//! stalled subscribers cost the others.
//!
//! Results and their reading are in `docs/benchmarks.md` (section `app-server`).
//!
//! The server gets a temporary home (named by `--home-env`) whose `config.toml` points at the
//! mock (model `mock-model`, provider `mock`, approval `never`, sandbox
//! `danger-full-access`), `OPENAI_API_KEY=x`, and a temporary workspace as every thread's
//! `cwd`. Requests carry no `"jsonrpc"` member.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Parser;
use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message, shell_call};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

/// `--answer-words`, for the mock's responder (a plain function).
static ANSWER_WORDS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// The text every task message starts with; the mock finds the task by it.
const TASK_MARKER: &str = "bench-task";

#[derive(Debug, Parser)]
#[command(about = "Run N threads x M scripted turns concurrently on one app-server")]
struct Args {
    /// The server binary, e.g. `target/release/keel` or the reference `codex`.
    #[arg(long)]
    server: PathBuf,
    /// The environment variable naming the server's home directory.
    #[arg(long, default_value = "KEEL_HOME")]
    home_env: String,
    /// Concurrent threads.
    #[arg(long, default_value_t = 64)]
    threads: usize,
    /// Turns per thread, run one after the other.
    #[arg(long, default_value_t = 3)]
    turns: usize,
    /// Name printed in the first column of the table row.
    #[arg(long, default_value = "server")]
    label: String,
    /// Upper bound on the whole run.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
    /// Words added to every final answer (one streamed delta each): more makes the
    /// notification traffic, and so a stalled subscriber's backlog, larger.
    #[arg(long, default_value_t = 0)]
    answer_words: usize,
    /// Drive the server over one websocket connection instead of stdio.
    #[arg(long)]
    websocket: bool,
    /// Give every thread a second websocket subscriber that never reads (implies
    /// `--websocket`).
    #[arg(long)]
    stalled_subscribers: bool,
    /// Like `--stalled-subscribers`, but the second subscribers read (and discard) everything:
    /// the cost of serving a second subscriber, to compare with a stalled one.
    #[arg(long)]
    reading_subscribers: bool,
    /// Arguments for the server binary, e.g. `app-server`.
    #[arg(last = true)]
    server_args: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    args.websocket |= args.stalled_subscribers || args.reading_subscribers;
    let _first = ANSWER_WORDS.set(args.answer_words);
    let mock = MockModelServer::builder()
        .responder(respond)
        .start()
        .await?;

    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    keel_test_support::write_config(home.path(), &mock.uri(), Vec::<(&str, bool)>::new())?;
    let stderr_path = home.path().join("server-stderr.log");

    let server = if args.websocket {
        Server::spawn_websocket(&args, home.path(), &stderr_path).await?
    } else {
        Server::spawn(&args, home.path(), &stderr_path)?
    };
    let stalled = Stalled {
        addr: server
            .websocket_addr
            .clone()
            .filter(|_| args.stalled_subscribers || args.reading_subscribers),
        reading: args.reading_subscribers,
        sockets: Arc::default(),
    };
    let run = tokio::time::timeout(
        Duration::from_secs(args.timeout_secs),
        run_bench(&server.client, &args, workspace.path(), &stalled),
    )
    .await;
    let stalled_count = stalled.sockets.lock().map(|s| s.len()).unwrap_or_default();
    if args.stalled_subscribers {
        eprintln!("{stalled_count} stalled subscribers held their threads");
    }
    let outcome = match run {
        Ok(outcome) => outcome,
        Err(_) => Err(anyhow::anyhow!(
            "no result within {}s ({} of {} turns completed)",
            args.timeout_secs,
            server.client.completed_turns(),
            args.threads * args.turns,
        )),
    };
    let peak_rss_kib = server.peak_rss_kib();
    let cpu = server.cpu_time();
    server.shutdown().await;

    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(err) => {
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
            eprintln!("server stderr (last lines, newest first):");
            for line in tail {
                eprintln!("  {line}");
            }
            return Err(err);
        }
    };

    let requests = mock.requests();
    let violations = mock.violations();
    let echoed = requests
        .iter()
        .filter(|request| command_ran(request))
        .count();
    let (peak_kib, processes) = peak_rss_kib;
    let turns = args.threads * args.turns;
    let wall = outcome.wall.as_secs_f64();
    let mut latencies = outcome.turn_latencies;
    latencies.sort_unstable();
    eprintln!(
        "{label}: {turns} turns, {requests} model requests, {echoed} commands echoed their \
         marker, {violations} mock violations, {notifications} notifications, \
         peak RSS summed over {processes} process(es), \
         turn latency p50 {p50:.0} ms / p99 {p99:.0} ms / max {max:.0} ms, \
         CPU {server_cpu:.2} s in the server + {child_cpu:.2} s in its children",
        label = args.label,
        requests = requests.len(),
        violations = violations.len(),
        notifications = outcome.notifications,
        p50 = percentile_ms(&latencies, 0.50),
        p99 = percentile_ms(&latencies, 0.99),
        max = percentile_ms(&latencies, 1.0),
        server_cpu = cpu.server.as_secs_f64(),
        child_cpu = cpu.children.as_secs_f64(),
    );
    for violation in violations.iter().take(5) {
        eprintln!("  mock violation: {violation}");
    }
    println!(
        "| {label} | {threads} × {turns_per} | {wall:.2} s | {rate:.1} | {rss:.1} MiB \
         | {cpu:.2} s |",
        label = args.label,
        threads = args.threads,
        turns_per = args.turns,
        rate = turns as f64 / wall,
        rss = peak_kib as f64 / 1024.0,
        cpu = cpu.total().as_secs_f64(),
    );
    // The row is printed either way, but a run that did not do the scripted work fails.
    ensure!(
        requests.len() == 2 * turns && violations.is_empty() && echoed == turns,
        "the run did not do the scripted work: {} model requests (expected {}), {} mock \
         violations, {echoed} of {turns} command outputs carried their marker",
        requests.len(),
        2 * turns,
        violations.len(),
    );
    Ok(())
}

/// The mock's stateless reply: a shell call for the task in the latest user message until
/// that call's output comes back, then a final message.
fn respond(request: &CapturedRequest) -> Option<Turn> {
    let task = latest_task(request)?;
    let call_id = format!("call-{task}");
    let answered = request.tool_output_call_ids().contains(&call_id);
    Some(if answered {
        let words = ANSWER_WORDS.get().copied().unwrap_or_default();
        let padding: String = (0..words).map(|n| format!(" w{n}")).collect();
        Turn::new([assistant_message(format!("done {task}{padding}"))])
    } else {
        Turn::new([shell_call(call_id, ["echo", task.as_str()])])
    })
}

/// The `T-N` of the last user message that carries [`TASK_MARKER`].
fn latest_task(request: &CapturedRequest) -> Option<String> {
    request.input().iter().rev().find_map(|item| {
        if item.get("role").and_then(Value::as_str) != Some("user") {
            return None;
        }
        let content = item.get("content")?;
        let texts: Vec<&str> = match content {
            Value::String(text) => vec![text.as_str()],
            Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        };
        texts.into_iter().find_map(|text| {
            text.strip_prefix(TASK_MARKER)
                .map(|rest| rest.trim().to_owned())
        })
    })
}

/// Whether `request` sends back the output of its task's shell call, and that output holds
/// what the command echoed (so the server really ran it).
fn command_ran(request: &CapturedRequest) -> bool {
    latest_task(request).is_some_and(|task| {
        request
            .tool_output(&format!("call-{task}"))
            .is_some_and(|output| output.to_string().contains(&task))
    })
}

fn percentile_ms(sorted: &[Duration], quantile: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let index = ((last as f64) * quantile).round() as usize;
    sorted
        .get(index.min(last))
        .map_or(0.0, |latency| latency.as_secs_f64() * 1000.0)
}

/// What one run measured.
struct Outcome {
    wall: Duration,
    turn_latencies: Vec<Duration>,
    notifications: u64,
}

/// Handshake, then every thread at once; returns when the last turn has completed.
/// Connections that subscribe to a thread and never read again.
#[derive(Clone)]
struct Stalled {
    /// Where to connect them; `None` when the run has none.
    addr: Option<String>,
    /// Read and discard instead (a second subscriber that keeps up).
    reading: bool,
    /// Kept open (unread) until the run ends.
    sockets: Arc<Mutex<Vec<Socket>>>,
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl Stalled {
    /// Subscribes a new connection to `thread_id`, then leaves it unread.
    async fn subscribe(&self, thread_id: &str) -> anyhow::Result<()> {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let Some(addr) = &self.addr else {
            return Ok(());
        };
        let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/")).await?;
        for message in [
            json!({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "stalled", "version": "0"}}}),
            json!({"method": "initialized"}),
            json!({"id": 1, "method": "thread/resume", "params": {"threadId": thread_id}}),
        ] {
            socket
                .send(Message::Text(message.to_string().into()))
                .await?;
        }
        while let Some(frame) = socket.next().await {
            if let Message::Text(text) = frame? {
                let value: Value = serde_json::from_str(text.as_str())?;
                if value["id"] == 1 {
                    ensure!(
                        value.get("result").is_some(),
                        "thread/resume failed: {value}"
                    );
                    break;
                }
            }
        }
        if self.reading {
            tokio::spawn(async move { while let Some(Ok(_)) = socket.next().await {} });
            return Ok(());
        }
        self.sockets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(socket);
        Ok(())
    }
}

async fn run_bench(
    client: &Client,
    args: &Args,
    workspace: &Path,
    stalled: &Stalled,
) -> anyhow::Result<Outcome> {
    client
        .request(
            "initialize",
            json!({"clientInfo": {"name": "keel-bench", "title": null, "version": "0.0.0"}}),
        )
        .await
        .context("initialize")?;
    client.notify("initialized", json!({})).await?;

    // The clock starts once every thread exists (and has its stalled subscriber), so the
    // figure is the turns alone.
    let ready = Arc::new(tokio::sync::Barrier::new(args.threads + 1));
    let mut threads = JoinSet::new();
    for thread in 0..args.threads {
        let client = client.clone();
        let cwd = workspace.to_path_buf();
        let turns = args.turns;
        let stalled = stalled.clone();
        let ready = Arc::clone(&ready);
        threads.spawn(async move {
            run_thread(&client, thread, turns, &cwd, &stalled, &ready)
                .await
                .with_context(|| format!("thread {thread}"))
        });
    }
    ready.wait().await;
    let started = Instant::now();
    let mut turn_latencies = Vec::with_capacity(args.threads * args.turns);
    while let Some(joined) = threads.join_next().await {
        turn_latencies.extend(joined??);
    }
    Ok(Outcome {
        wall: started.elapsed(),
        turn_latencies,
        notifications: client.shared.notifications.load(Ordering::Relaxed),
    })
}

/// One thread: `thread/start`, then `turns` turns, each awaited to its `turn/completed`.
async fn run_thread(
    client: &Client,
    thread: usize,
    turns: usize,
    cwd: &Path,
    stalled: &Stalled,
    ready: &tokio::sync::Barrier,
) -> anyhow::Result<Vec<Duration>> {
    let response = client
        .request("thread/start", json!({"cwd": cwd}))
        .await
        .context("thread/start")?;
    let thread_id = response
        .pointer("/thread/id")
        .and_then(Value::as_str)
        .with_context(|| format!("thread/start answered without thread.id: {response}"))?
        .to_owned();
    let mut completions = client.subscribe(&thread_id);
    let subscribed = stalled
        .subscribe(&thread_id)
        .await
        .context("the stalled subscriber");
    // Every thread reaches the barrier, failed or not, so the others are not held forever.
    ready.wait().await;
    subscribed?;

    let mut latencies = Vec::with_capacity(turns);
    for turn in 0..turns {
        let turn_started = Instant::now();
        let text = format!("{TASK_MARKER} {thread}-{turn}");
        let response = client
            .request(
                "turn/start",
                json!({
                    "threadId": thread_id,
                    "input": [{"type": "text", "text": text}],
                }),
            )
            .await
            .with_context(|| format!("turn/start {turn}"))?;
        let turn_id = response
            .pointer("/turn/id")
            .and_then(Value::as_str)
            .with_context(|| format!("turn/start answered without turn.id: {response}"))?;
        let completed = loop {
            let turn = completions
                .recv()
                .await
                .context("server closed before turn/completed")?;
            if turn.get("id").and_then(Value::as_str) == Some(turn_id) {
                break turn;
            }
        };
        let status = completed.get("status").and_then(Value::as_str);
        ensure!(
            status == Some("completed"),
            "turn {turn} ended {status:?}: {completed}"
        );
        latencies.push(turn_started.elapsed());
    }
    Ok(latencies)
}

/// The spawned server: its client side and the child process.
struct Server {
    client: Client,
    /// The listening address, when the server speaks websocket.
    websocket_addr: Option<String>,
    child: Child,
    reader: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

impl Server {
    fn spawn(args: &Args, home: &Path, stderr_path: &Path) -> anyhow::Result<Self> {
        let stderr = std::fs::File::create(stderr_path)?;
        let mut child = Command::new(&args.server)
            .args(&args.server_args)
            .env(&args.home_env, home)
            .env("OPENAI_API_KEY", "x")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", args.server.display()))?;
        let stdin = child.stdin.take().context("child stdin")?;
        let stdout = child.stdout.take().context("child stdout")?;
        // Outgoing requests: at most one in flight per thread plus the handshake, so the
        // capacity is never reached; a full queue would only make a sender wait.
        let (outgoing_tx, outgoing_rx) = mpsc::channel(1024);
        let shared = Arc::new(Shared::default());
        let writer = tokio::spawn(write_lines(stdin, outgoing_rx));
        let reader = tokio::spawn(read_lines(stdout, Arc::clone(&shared)));
        Ok(Self {
            client: Client {
                outgoing: outgoing_tx,
                shared,
            },
            websocket_addr: None,
            child,
            reader,
            writer,
        })
    }

    /// Starts the server listening on a websocket and connects the driving client to it.
    async fn spawn_websocket(args: &Args, home: &Path, stderr_path: &Path) -> anyhow::Result<Self> {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let mut child = Command::new(&args.server)
            .args(&args.server_args)
            .args(["--listen", "ws://127.0.0.1:0"])
            .env(&args.home_env, home)
            .env("OPENAI_API_KEY", "x")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", args.server.display()))?;
        let stderr = child.stderr.take().context("child stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines
                .next_line()
                .await?
                .context("the server exited before listening")?;
            if let Some(addr) = line
                .rsplit("ws://")
                .next()
                .filter(|_| line.contains("listening on ws://"))
            {
                break addr.trim().to_string();
            }
        };
        // The rest of stderr goes to the log file, as in the stdio mode.
        let mut log = tokio::fs::File::create(stderr_path).await?;
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = log.write_all(format!("{line}\n").as_bytes()).await;
            }
        });
        let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/")).await?;
        let (mut sink, mut stream) = socket.split();
        let (outgoing_tx, mut outgoing_rx) = mpsc::channel::<String>(1024);
        let shared = Arc::new(Shared::default());
        let writer = tokio::spawn(async move {
            while let Some(line) = outgoing_rx.recv().await {
                if let Err(err) = sink.send(Message::Text(line.into())).await {
                    eprintln!("writing to the server: {err}");
                    return;
                }
            }
        });
        let reader_shared = Arc::clone(&shared);
        let reader = tokio::spawn(async move {
            while let Some(Ok(frame)) = stream.next().await {
                if let Message::Text(text) = frame
                    && let Err(err) = dispatch(text.as_str(), &reader_shared)
                {
                    eprintln!("unexpected message from the server: {err}: {text}");
                }
            }
            let mut routes = reader_shared.routes();
            routes.pending.clear();
            routes.threads.clear();
        });
        Ok(Self {
            client: Client {
                outgoing: outgoing_tx,
                shared,
            },
            websocket_addr: Some(addr),
            child,
            reader,
            writer,
        })
    }

    /// Peak RSS in KiB summed over the server and its live descendants, and how many
    /// processes that was.
    fn peak_rss_kib(&self) -> (u64, usize) {
        let Some(root) = self.child.id() else {
            return (0, 0);
        };
        let tree = process_tree(root);
        let total = tree.iter().filter_map(|pid| vm_hwm_kib(*pid)).sum();
        (total, tree.len())
    }

    /// CPU time (user + system) of the server itself and of the children it has reaped,
    /// from `/proc/<pid>/stat`; zero if it cannot be read.
    fn cpu_time(&self) -> CpuTime {
        // USER_HZ, the unit of these fields, is 100 on every Linux ABI Rust targets.
        const TICKS_PER_SECOND: u64 = 100;
        let stat = self
            .child
            .id()
            .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .unwrap_or_default();
        // After `comm)`: state is field 3, utime, stime, cutime, cstime are fields 14..=17.
        let ticks: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.split_whitespace()
                    .skip(11)
                    .take(4)
                    .filter_map(|field| field.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let seconds = |fields: &[u64]| {
            Duration::from_millis(fields.iter().sum::<u64>() * 1000 / TICKS_PER_SECOND)
        };
        CpuTime {
            server: seconds(ticks.get(..2).unwrap_or_default()),
            children: seconds(ticks.get(2..).unwrap_or_default()),
        }
    }

    async fn shutdown(mut self) {
        self.writer.abort();
        self.reader.abort();
        if let Err(err) = self.child.kill().await {
            eprintln!("killing the server: {err}");
        }
    }
}

/// `root` and every process descending from it, from `/proc/*/stat`.
fn process_tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`; comm may hold spaces, so split after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse().ok());
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut tree = vec![root];
    let mut index = 0;
    while let Some(&parent) = tree.get(index) {
        tree.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    tree
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time spent by the server and by the processes it started (commands, helpers).
struct CpuTime {
    server: Duration,
    children: Duration,
}

impl CpuTime {
    fn total(&self) -> Duration {
        self.server + self.children
    }
}

/// State the reader task shares with the callers.
#[derive(Default)]
struct Shared {
    next_id: AtomicU64,
    notifications: AtomicU64,
    completed_turns: AtomicU64,
    routes: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    pending: HashMap<u64, oneshot::Sender<anyhow::Result<Value>>>,
    /// `turn/completed` turns by thread id. Unbounded: a thread receives at most one per
    /// turn it starts, so the script bounds it.
    threads: HashMap<String, mpsc::UnboundedSender<Value>>,
}

impl Shared {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Sends requests and notifications; cheap to clone.
#[derive(Clone)]
struct Client {
    outgoing: mpsc::Sender<String>,
    shared: Arc<Shared>,
}

impl Client {
    async fn request(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.shared.routes().pending.insert(id, tx);
        let line = json!({"id": id, "method": method, "params": params}).to_string();
        self.outgoing
            .send(line)
            .await
            .context("server stdin closed")?;
        rx.await.context("server closed before answering")?
    }

    async fn notify(&self, method: &str, params: Value) -> anyhow::Result<()> {
        let line = json!({"method": method, "params": params}).to_string();
        self.outgoing
            .send(line)
            .await
            .context("server stdin closed")
    }

    /// Routes the thread's future `turn/completed` notifications to the returned receiver.
    fn subscribe(&self, thread_id: &str) -> mpsc::UnboundedReceiver<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared
            .routes()
            .threads
            .insert(thread_id.to_owned(), tx);
        rx
    }

    fn completed_turns(&self) -> u64 {
        self.shared.completed_turns.load(Ordering::Relaxed)
    }
}

/// Writer task: one JSON object per line to the server's stdin.
async fn write_lines(mut stdin: ChildStdin, mut outgoing: mpsc::Receiver<String>) {
    while let Some(mut line) = outgoing.recv().await {
        line.push('\n');
        if let Err(err) = stdin.write_all(line.as_bytes()).await {
            eprintln!("writing to the server: {err}");
            return;
        }
    }
}

/// Reader task: answers go to their waiting request, `turn/completed` to its thread.
async fn read_lines(stdout: ChildStdout, shared: Arc<Shared>) {
    let mut lines = BufReader::new(stdout).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                eprintln!("reading from the server: {err}");
                break;
            }
        };
        if let Err(err) = dispatch(&line, &shared) {
            eprintln!("unexpected line from the server: {err}: {line}");
        }
    }
    // Dropping the senders wakes every waiter with "server closed".
    let mut routes = shared.routes();
    routes.pending.clear();
    routes.threads.clear();
}

fn dispatch(line: &str, shared: &Shared) -> anyhow::Result<()> {
    let message: Value = serde_json::from_str(line)?;
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id");
    match (method, id) {
        (None, Some(id)) => {
            let id = id.as_u64().context("non-numeric response id")?;
            let waiter = shared.routes().pending.remove(&id);
            let result = match (message.get("result"), message.get("error")) {
                (Some(result), _) => Ok(result.clone()),
                (None, Some(error)) => Err(anyhow::anyhow!("error response: {error}")),
                (None, None) => Err(anyhow::anyhow!("response without result: {message}")),
            };
            let waiter = waiter.with_context(|| format!("response to unknown id {id}"))?;
            if waiter.send(result).is_err() {
                bail!("the request for id {id} was dropped");
            }
        }
        (Some(method), Some(_)) => {
            // With approval policy `never` the server should ask nothing.
            bail!("unexpected server request {method}");
        }
        (Some(method), None) => {
            shared.notifications.fetch_add(1, Ordering::Relaxed);
            if method == "turn/completed" {
                shared.completed_turns.fetch_add(1, Ordering::Relaxed);
                let params = message
                    .get("params")
                    .context("turn/completed without params")?;
                let thread_id = params
                    .get("threadId")
                    .and_then(Value::as_str)
                    .context("turn/completed without threadId")?;
                let turn = params.get("turn").context("turn/completed without turn")?;
                let routes = shared.routes();
                let route = routes
                    .threads
                    .get(thread_id)
                    .with_context(|| format!("turn/completed for unknown thread {thread_id}"))?;
                if route.send(turn.clone()).is_err() {
                    bail!("thread {thread_id} stopped listening");
                }
            }
        }
        (None, None) => bail!("neither a response nor a notification"),
    }
    Ok(())
}
