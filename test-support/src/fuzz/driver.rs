//! Throwing fuzzed frames at a running server and checking that it keeps answering.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::frames::{FrameFuzzer, deeply_nested_line};
use crate::error::{Error, Result};

/// How long one batch may take to be answered.
const BATCH_TIMEOUT: Duration = Duration::from_secs(120);

/// What to throw at a server, and how to tell it still works.
#[derive(Debug, Clone)]
pub struct FuzzPlan {
    /// Frames in all.
    pub frames: usize,
    /// Frames between two liveness checks.
    pub batch: usize,
    /// The fuzzer's seed.
    pub seed: u64,
    /// Valid messages the fuzzer mutates.
    pub seeds: Vec<Value>,
    /// A request (method and params) that must be answered after every batch.
    pub check: (String, Value),
    /// Sent, valid, after the first batch (which so arrives before any handshake).
    pub handshake: Vec<Value>,
    /// Size of one over-long line thrown in the second batch (stdio only).
    pub huge_line_bytes: Option<usize>,
    /// Depth of one deeply nested frame thrown in the second batch.
    pub deep_nesting: usize,
    /// The server closes a connection on a frame that is not a JSON-RPC message or is an
    /// unknown notification (`exec-server.v0`): only frames it must tolerate go over the
    /// fuzzed connection, and neither the over-long line nor the deep nesting is sent.
    pub closes_on_violation: bool,
}

/// Whether a server that closes on protocol violations must keep the connection after
/// `frame`: a request, a response, or the `initialized` notification.
pub fn is_tolerated(frame: &[u8]) -> bool {
    match keel_protocol::decode_frame(frame) {
        Ok(Some(keel_protocol::JsonRpcMessage::Notification(notification))) => {
            notification.method == "initialized"
        }
        Ok(_) => true,
        Err(_) => false,
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct FuzzReport {
    /// Fuzzed frames sent.
    pub frames: usize,
    /// Messages the server wrote.
    pub messages: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The server's peak resident memory, when it is a child process.
    pub peak_rss_kib: Option<u64>,
}

impl FuzzReport {
    /// Frames per second sustained, checks included.
    pub fn frames_per_second(&self) -> f64 {
        self.frames as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

fn failure(what: impl Into<String>) -> Error {
    Error::Fuzz(what.into())
}

/// Reads the server's messages: each must be JSON; answers to checks are passed on.
fn watch_messages(
    text: String,
    checks: &mpsc::UnboundedSender<String>,
    messages: &mut usize,
) -> Result<()> {
    let value: Value = serde_json::from_str(&text).map_err(|err| {
        failure(format!(
            "the server wrote a line that is not JSON ({err}): {text:.200}"
        ))
    })?;
    *messages += 1;
    if value.get("method").is_none()
        && let Some(id) = value["id"].as_str()
        && id.starts_with("check-")
    {
        let _ = checks.send(id.to_string());
    }
    Ok(())
}

/// The frames of batch `index`.
fn batch_frames(
    plan: &FuzzPlan,
    fuzzer: &mut FrameFuzzer,
    index: usize,
    sent: usize,
) -> Vec<Vec<u8>> {
    let count = plan.batch.min(plan.frames - sent);
    if plan.closes_on_violation {
        return std::iter::repeat_with(|| fuzzer.next_frame())
            .filter(|frame| is_tolerated(frame))
            .take(count)
            .collect();
    }
    let mut frames: Vec<Vec<u8>> = (0..count).map(|_| fuzzer.next_frame()).collect();
    if index == 1 {
        frames.push(deeply_nested_line(plan.deep_nesting));
    }
    frames
}

fn check_frame(plan: &FuzzPlan, index: usize) -> Vec<u8> {
    let (method, params) = &plan.check;
    serde_json::to_vec(&json!({"id": format!("check-{index}"), "method": method, "params": params}))
        .unwrap_or_default()
}

async fn await_check(answers: &mut mpsc::UnboundedReceiver<String>, index: usize) -> Result<()> {
    let wanted = format!("check-{index}");
    tokio::time::timeout(BATCH_TIMEOUT, async {
        while let Some(id) = answers.recv().await {
            if id == wanted {
                return Ok(());
            }
        }
        Err(failure(format!(
            "the server stopped before answering {wanted}"
        )))
    })
    .await
    .map_err(|_| {
        failure(format!(
            "{wanted} was not answered within {BATCH_TIMEOUT:?}"
        ))
    })?
}

/// Runs `plan` against a server started by `command`, over its stdin and stdout; the server
/// must still answer after every batch and exit cleanly at end of input.
pub async fn fuzz_stdio(
    mut command: tokio::process::Command,
    plan: &FuzzPlan,
) -> Result<FuzzReport> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if std::env::var_os("KEEL_FUZZ_STDERR").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| Error::Spawn {
            command: format!("{command:?}"),
            source,
        })?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(failure("the server's pipes are missing"));
    };
    let (answers_tx, mut answers) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        let mut messages = 0;
        while let Some(line) = lines
            .next_line()
            .await
            .map_err(|err| failure(format!("reading the server's output: {err}")))?
        {
            watch_messages(line, &answers_tx, &mut messages)?;
        }
        Ok::<usize, Error>(messages)
    });

    let started = Instant::now();
    let mut fuzzer = FrameFuzzer::new(plan.seed, plan.seeds.clone());
    let mut stdin = BufWriter::with_capacity(64 * 1024, stdin);
    let write_error = |err: std::io::Error| failure(format!("writing to the server: {err}"));
    let (mut sent, mut index) = (0, 0);
    while sent < plan.frames {
        let frames = batch_frames(plan, &mut fuzzer, index, sent);
        sent += frames.len().min(plan.batch);
        for frame in frames {
            stdin.write_all(&frame).await.map_err(write_error)?;
            stdin.write_all(b"\n").await.map_err(write_error)?;
        }
        if index == 1
            && !plan.closes_on_violation
            && let Some(bytes) = plan.huge_line_bytes
        {
            let chunk = vec![b'x'; 1024 * 1024];
            stdin
                .write_all(b"{\"id\":1,\"method\":\"")
                .await
                .map_err(write_error)?;
            for _ in 0..bytes.div_ceil(chunk.len()) {
                stdin.write_all(&chunk).await.map_err(write_error)?;
            }
            stdin.write_all(b"\"}\n").await.map_err(write_error)?;
        }
        if index == 0 {
            for message in &plan.handshake {
                stdin
                    .write_all(&serde_json::to_vec(message).unwrap_or_default())
                    .await
                    .map_err(write_error)?;
                stdin.write_all(b"\n").await.map_err(write_error)?;
            }
        }
        stdin
            .write_all(&check_frame(plan, index))
            .await
            .map_err(write_error)?;
        stdin.write_all(b"\n").await.map_err(write_error)?;
        stdin.flush().await.map_err(write_error)?;
        await_check(&mut answers, index).await?;
        index += 1;
    }
    let elapsed = started.elapsed();
    let peak_rss_kib = pid.and_then(peak_rss_kib);
    drop(stdin);
    let status = tokio::time::timeout(BATCH_TIMEOUT, child.wait())
        .await
        .map_err(|_| failure("the server did not exit at end of input"))?
        .map_err(|err| failure(format!("waiting for the server: {err}")))?;
    if !status.success() {
        return Err(failure(format!(
            "the server exited with {status} at end of input"
        )));
    }
    let messages = reader
        .await
        .map_err(|err| failure(format!("the reader task failed: {err}")))??;
    Ok(FuzzReport {
        frames: sent,
        messages,
        elapsed,
        peak_rss_kib,
    })
}

/// Runs `plan` against the websocket server at `url` (frames that are not UTF-8 go as binary
/// messages); the connection must stay open and answer after every batch.
pub async fn fuzz_websocket(url: &str, plan: &FuzzPlan) -> Result<FuzzReport> {
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|err| failure(format!("connecting to {url}: {err}")))?;
    let (mut sink, mut stream) = socket.split();
    let (answers_tx, mut answers) = mpsc::unbounded_channel();
    let counted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader_counted = counted.clone();
    let reader = tokio::spawn(async move {
        let mut messages = 0;
        while let Some(message) = stream.next().await {
            match message.map_err(|err| failure(format!("reading the socket: {err}")))? {
                Message::Text(text) => {
                    watch_messages(text.to_string(), &answers_tx, &mut messages)?;
                    reader_counted.store(messages, std::sync::atomic::Ordering::Relaxed);
                }
                Message::Close(frame) => {
                    return Err(failure(format!(
                        "the server closed the connection: {frame:?}"
                    )));
                }
                _ => {}
            }
        }
        Ok::<usize, Error>(messages)
    });
    let send_error = |err| failure(format!("sending to the server: {err}"));
    let started = Instant::now();
    let mut fuzzer = FrameFuzzer::new(plan.seed, plan.seeds.clone());
    let (mut sent, mut index) = (0, 0);
    while sent < plan.frames {
        let frames = batch_frames(plan, &mut fuzzer, index, sent);
        sent += frames.len().min(plan.batch);
        for frame in frames {
            let message = match String::from_utf8(frame) {
                Ok(text) => Message::Text(text.into()),
                Err(bytes) => Message::Binary(bytes.into_bytes().into()),
            };
            sink.feed(message).await.map_err(send_error)?;
        }
        if index == 0 {
            for message in &plan.handshake {
                sink.feed(Message::Text(message.to_string().into()))
                    .await
                    .map_err(send_error)?;
            }
        }
        let check = String::from_utf8_lossy(&check_frame(plan, index)).into_owned();
        sink.feed(Message::Text(check.into()))
            .await
            .map_err(send_error)?;
        sink.flush().await.map_err(send_error)?;
        await_check(&mut answers, index).await?;
        index += 1;
    }
    let elapsed = started.elapsed();
    reader.abort();
    sink.close().await.map_err(send_error)?;
    Ok(FuzzReport {
        frames: sent,
        messages: counted.load(std::sync::atomic::Ordering::Relaxed),
        elapsed,
        peak_rss_kib: None,
    })
}

/// `VmHWM` of a live process, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}
