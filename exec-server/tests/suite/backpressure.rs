//! A client that stops reading pauses the process instead of making the server buffer: the
//! child blocks in `write(2)`, the server's memory stays small, and once the client reads
//! again every byte arrives, exactly once and in order.

use std::time::Duration;

use anyhow::{Context, bail};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::{DEADLINE, RawPeer, Server, Transport, pipes};

/// What the child writes: far more than every queue, buffer and pipe on the way can hold.
const OUTPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Upper bound on what the child may have written while nobody reads: the pipes (1 MiB
/// each), the bounded queues (32 chunks of 256 KiB) and the write batch, with room to spare.
const PAUSED_BYTES_MAX: u64 = 32 * 1024 * 1024;

/// Pids of the server's descendants named `name`, found through every thread's `children`
/// list (whichever worker thread spawned them).
fn descendants_named(pid: u32, name: &str) -> anyhow::Result<Vec<u32>> {
    let mut found = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks {
            let list = std::fs::read_to_string(task?.path().join("children")).unwrap_or_default();
            for child in list.split_whitespace() {
                let child: u32 = child.parse()?;
                parents.push(child);
                // The server also has its process-group watchdog, and each process its
                // supervisor, as children.
                let comm =
                    std::fs::read_to_string(format!("/proc/{child}/comm")).unwrap_or_default();
                if comm.trim_end() == name {
                    found.push(child);
                }
            }
        }
    }
    Ok(found)
}

/// Bytes a process has written so far (`wchar` in `/proc/PID/io`).
fn written_bytes(pid: u32) -> anyhow::Result<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
    let line = io
        .lines()
        .find_map(|line| line.strip_prefix("wchar:"))
        .context("no wchar")?;
    Ok(line.trim().parse()?)
}

/// A `/proc/PID/status` value in KiB.
fn status_kib(pid: u32, key: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .with_context(|| format!("no {key}"))?;
    Ok(value
        .split_whitespace()
        .next()
        .context("empty value")?
        .parse()?)
}

/// Waits until `pid` has written nothing for a while (it is blocked), bounded by the
/// deadline; returns what it wrote.
async fn wait_until_stalled(pid: u32) -> anyhow::Result<u64> {
    const QUIET: Duration = Duration::from_millis(500);
    tokio::time::timeout(DEADLINE, async {
        let mut last = written_bytes(pid)?;
        loop {
            tokio::time::sleep(QUIET).await;
            let now = written_bytes(pid)?;
            if now == last {
                return anyhow::Ok(now);
            }
            last = now;
        }
    })
    .await
    .context("the child never stopped writing")?
}

/// Decoded length of the `chunk` of one `outputDelta` line, without a JSON parse.
fn chunk_len(line: &str) -> anyhow::Result<u64> {
    let start = line.find(r#""chunk":""#).context("no chunk")? + r#""chunk":""#.len();
    let end = start + line[start..].find('"').context("unterminated chunk")?;
    let text = &line[start..end];
    let padding = text.bytes().rev().take_while(|byte| *byte == b'=').count();
    Ok((text.len() / 4 * 3 - padding) as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_pauses_the_process() -> anyhow::Result<()> {
    let mut server = Server::start(Transport::Stdio, &[]).await?;
    let server_pid = server.child.id().context("server pid")?;
    let mut peer = server.raw().await?;
    peer.initialize().await?;
    let params = serde_json::to_value(pipes(&[
        "head",
        "-c",
        &OUTPUT_BYTES.to_string(),
        "/dev/zero",
    ]))?;
    let response = peer.request(1, "command/exec", params).await?;
    let session = response["result"]["sessionId"].clone();
    // From here on nobody reads the server's stdout.
    let child = tokio::time::timeout(DEADLINE, async {
        loop {
            if let [child] = descendants_named(server_pid, "head")?[..] {
                return anyhow::Ok(child);
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .context("the child never appeared")??;
    let paused_at = wait_until_stalled(child).await?;
    assert!(
        paused_at <= PAUSED_BYTES_MAX,
        "the child wrote {paused_at} bytes although nobody read"
    );
    let peak_kib = status_kib(server_pid, "VmHWM:")?;
    assert!(
        peak_kib < 64 * 1024,
        "server peak RSS {peak_kib} KiB while paused"
    );

    // Reading again resumes the child; everything arrives, then the exit.
    let RawPeer::Stdio { lines, .. } = &mut peer else {
        bail!("stdio peer expected");
    };
    let mut received = 0;
    let exit_code = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = lines.next_line().await? {
            if line.contains(r#""command/exec/outputDelta""#) {
                received += chunk_len(&line)?;
                continue;
            }
            let message: Value = serde_json::from_str(&line)?;
            if message["method"] == "command/exec/exited" {
                assert_eq!(message["params"]["sessionId"], session);
                return anyhow::Ok(message["params"]["exitCode"].clone());
            }
        }
        bail!("connection closed before the exit")
    })
    .await
    .context("the output never finished")??;
    assert_eq!((received, exit_code), (OUTPUT_BYTES, json!(0)));
    Ok(())
}
