//! [`JsonLinesProcess`]: drive a child that speaks JSON lines (JSON-RPC) over stdio.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::harness::output::{Diagnostics, Line};

/// Messages read past while looking for another one are kept for later reads, up to this many;
/// beyond it the oldest is dropped (and counted in failure messages).
const PENDING_CAPACITY: usize = 4096;

/// The child's home directory.
#[derive(Debug)]
pub(crate) enum Home {
    /// A temporary directory deleted with the process handle.
    Temp(TempDir),
    /// A directory the caller owns.
    Path(PathBuf),
}

/// Everything [`crate::ProcessBuilder::spawn`] hands over.
pub(crate) struct ProcessParts {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) lines: mpsc::Receiver<Line>,
    pub(crate) diagnostics: Arc<Diagnostics>,
    pub(crate) tasks: Vec<JoinHandle<()>>,
    pub(crate) home: Home,
    pub(crate) command_line: String,
    pub(crate) cwd: PathBuf,
    pub(crate) timeout: Duration,
    pub(crate) jsonrpc_field: bool,
}

/// A running child that reads JSON messages on stdin and writes them on stdout, one per line.
///
/// Reads look for a message (a response with an id, a notification with a method, a request
/// from the server) and keep any other messages read on the way for later reads. Every wait is
/// bounded by the timeout; failures carry the command, cwd, recent stdout and stderr. The
/// child is killed when the handle drops.
pub struct JsonLinesProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Line>,
    pending: VecDeque<Value>,
    dropped: usize,
    diagnostics: Arc<Diagnostics>,
    tasks: Vec<JoinHandle<()>>,
    home: Home,
    command_line: String,
    cwd: PathBuf,
    timeout: Duration,
    jsonrpc_field: bool,
    next_id: i64,
}

impl JsonLinesProcess {
    pub(crate) fn from_parts(parts: ProcessParts) -> Self {
        Self {
            child: parts.child,
            stdin: Some(parts.stdin),
            lines: parts.lines,
            pending: VecDeque::new(),
            dropped: 0,
            diagnostics: parts.diagnostics,
            tasks: parts.tasks,
            home: parts.home,
            command_line: parts.command_line,
            cwd: parts.cwd,
            timeout: parts.timeout,
            jsonrpc_field: parts.jsonrpc_field,
            next_id: 0,
        }
    }

    /// The child's home directory.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The child's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The bound on each wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Changes the bound on each wait.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The child's stderr so far (the last 64 KiB).
    pub fn stderr(&self) -> String {
        self.diagnostics.stderr()
    }

    /// Waits until the child's stderr holds a whole line matching `matches` and returns it
    /// (a server printing its bound address, say). `what` names it in the timeout error.
    pub async fn wait_for_stderr_line(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let deadline = Instant::now() + self.timeout;
        let diagnostics = Arc::clone(&self.diagnostics);
        loop {
            let changed = diagnostics.stderr_changed.notified();
            tokio::pin!(changed);
            // Registered before looking, so output arriving in between still wakes us.
            changed.as_mut().enable();
            let stderr = diagnostics.stderr();
            // Only whole lines: a chunk may end mid-line.
            let complete = stderr
                .rsplit_once('\n')
                .map_or("", |(complete, _)| complete);
            if let Some(line) = complete.lines().find(|line| matches(line)) {
                return Ok(line.to_owned());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(Error::Timeout {
                    what: what.to_owned(),
                    timeout: self.timeout,
                    context: self.diagnostics(),
                });
            }
        }
    }

    /// For a server started with `--listen ws://127.0.0.1:0`: waits for the `listening on
    /// ws://HOST:PORT` line it logs and returns `HOST:PORT`.
    pub async fn websocket_address(&mut self) -> Result<String> {
        let line = self
            .wait_for_stderr_line("the listening address", |line| {
                line.contains("listening on ws://")
            })
            .await?;
        Ok(line
            .rsplit("ws://")
            .next()
            .unwrap_or_default()
            .trim()
            .trim_end_matches('/')
            .to_string())
    }

    /// For `keel mcp-server --listen http://127.0.0.1:0`: waits for the `listening on
    /// http://HOST:PORT/mcp` line it logs and returns the endpoint URL.
    pub async fn http_endpoint(&mut self) -> Result<String> {
        let line = self
            .wait_for_stderr_line("the listening address", |line| {
                line.contains("listening on http://")
            })
            .await?;
        Ok(line
            .rsplit("listening on ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string())
    }

    /// The command, cwd, recent stdout and stderr, for failure messages.
    pub fn diagnostics(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("exited: {status}"),
            Ok(None) => "still running".to_owned(),
            Err(err) => format!("status unknown: {err}"),
        };
        let mut text = format!(
            "\n--- command: {}\n--- cwd: {}\n--- process: {status}\n--- recent stdout:\n",
            self.command_line,
            self.cwd.display()
        );
        for line in self.diagnostics.recent_stdout() {
            text.push_str(&line);
            text.push('\n');
        }
        if self.dropped > 0 {
            text.push_str(&format!("--- {} unread message(s) dropped\n", self.dropped));
        }
        text.push_str("--- stderr:\n");
        text.push_str(&self.diagnostics.stderr());
        text
    }

    /// Writes one message as a line.
    pub async fn send(&mut self, message: &Value) -> Result<()> {
        let line = serde_json::to_vec(message)?;
        self.send_raw_line(&line).await
    }

    /// Writes `line` plus a newline as is, e.g. to test how a server handles malformed input.
    pub async fn send_raw_line(&mut self, line: impl AsRef<[u8]>) -> Result<()> {
        let mut line = line.as_ref().to_vec();
        line.push(b'\n');
        let result = match self.stdin.as_mut() {
            Some(stdin) => match stdin.write_all(&line).await {
                Ok(()) => stdin.flush().await,
                Err(err) => Err(err),
            },
            None => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin was closed by close_stdin()",
            )),
        };
        result.map_err(|source| Error::ProcessIo {
            command: self.command_line.clone(),
            source,
            context: self.diagnostics(),
        })
    }

    /// Sends a request with the next integer id and returns the id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> Result<i64> {
        self.next_id += 1;
        let id = self.next_id;
        let message = self.envelope(json!({"id": id, "method": method, "params": params}));
        self.send(&message).await?;
        Ok(id)
    }

    /// Sends a notification.
    pub async fn send_notification(&mut self, method: &str, params: Value) -> Result<()> {
        let message = self.envelope(json!({"method": method, "params": params}));
        self.send(&message).await
    }

    /// Answers a server request with a result.
    pub async fn respond(&mut self, id: Value, result: Value) -> Result<()> {
        let message = self.envelope(json!({"id": id, "result": result}));
        self.send(&message).await
    }

    /// Answers a server request with an error.
    pub async fn respond_error(&mut self, id: Value, code: i64, message: &str) -> Result<()> {
        let message = self.envelope(json!({"id": id, "error": {"code": code, "message": message}}));
        self.send(&message).await
    }

    /// Sends a request and waits for its result (an error response becomes [`Error::JsonRpc`]).
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.send_request(method, params).await?;
        self.read_result(id).await
    }

    fn envelope(&self, mut message: Value) -> Value {
        if self.jsonrpc_field
            && let Value::Object(map) = &mut message
        {
            map.insert("jsonrpc".into(), json!("2.0"));
        }
        message
    }

    /// Reads the next message, in order.
    ///
    /// Cancel safe, like every read here: a message is either still queued or returned.
    pub async fn read_message(&mut self) -> Result<Value> {
        self.read_until("any message", |_| true).await
    }

    /// Reads until the response (result or error) to request `id`; returns the whole message.
    pub async fn read_response(&mut self, id: impl Into<Value>) -> Result<Value> {
        let id = id.into();
        self.read_until(&format!("the response to request {id}"), |message| {
            message.get("id") == Some(&id) && message.get("method").is_none()
        })
        .await
    }

    /// Reads until the response to request `id` and returns its `result`.
    pub async fn read_result(&mut self, id: impl Into<Value>) -> Result<Value> {
        let id = id.into();
        let mut response = self.read_response(id.clone()).await?;
        if let Some(error) = response.get_mut("error") {
            return Err(Error::JsonRpc {
                id,
                error: error.take(),
            });
        }
        Ok(response
            .get_mut("result")
            .map(Value::take)
            .unwrap_or_default())
    }

    /// Reads until a notification (a message with a method and no id) named `method`.
    pub async fn read_notification(&mut self, method: &str) -> Result<Value> {
        self.read_until(&format!("notification {method:?}"), |message| {
            message.get("id").is_none()
                && message.get("method").and_then(Value::as_str) == Some(method)
        })
        .await
    }

    /// Reads until a request from the server (a message with both a method and an id).
    pub async fn read_server_request(&mut self) -> Result<Value> {
        self.read_until("a server request", |message| {
            message.get("id").is_some() && message.get("method").is_some()
        })
        .await
    }

    /// Reads until a message matching `matches`; messages read past are kept for later reads.
    /// `what` names the awaited message in errors.
    pub async fn read_until(
        &mut self,
        what: &str,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Result<Value> {
        if let Some(position) = self.pending.iter().position(&mut matches)
            && let Some(found) = self.pending.remove(position)
        {
            return Ok(found);
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(Line::Json(message))) => {
                    if matches(&message) {
                        return Ok(message);
                    }
                    if self.pending.len() == PENDING_CAPACITY {
                        self.pending.pop_front();
                        self.dropped += 1;
                    }
                    self.pending.push_back(message);
                }
                Ok(Some(Line::Text(line))) => {
                    return Err(Error::NotJson {
                        command: self.command_line.clone(),
                        line,
                        context: self.diagnostics(),
                    });
                }
                Ok(None) => {
                    // Give the exit status a moment to land so the message can show it.
                    let _exited =
                        tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await;
                    return Err(Error::ProcessExited {
                        command: self.command_line.clone(),
                        what: what.to_owned(),
                        context: self.diagnostics(),
                    });
                }
                Err(_) => {
                    return Err(Error::Timeout {
                        what: what.to_owned(),
                        timeout: self.timeout,
                        context: self.diagnostics(),
                    });
                }
            }
        }
    }

    /// Messages read past by earlier reads and not yet returned, oldest first.
    pub fn unread(&self) -> impl Iterator<Item = &Value> {
        self.pending.iter()
    }

    /// Closes the child's stdin (EOF), which well-behaved servers take as a shutdown.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the child to exit.
    pub async fn wait(&mut self) -> Result<ExitStatus> {
        match tokio::time::timeout(self.timeout, self.child.wait()).await {
            Ok(Ok(status)) => Ok(status),
            Ok(Err(source)) => Err(Error::ProcessIo {
                command: self.command_line.clone(),
                source,
                context: self.diagnostics(),
            }),
            Err(_) => Err(Error::Timeout {
                what: "the process to exit".to_owned(),
                timeout: self.timeout,
                context: self.diagnostics(),
            }),
        }
    }

    /// Sends `signal` to the child (SIGTERM, SIGINT: how a service manager or a terminal ends
    /// it); a child that has already exited is not an error.
    pub fn signal(&self, signal: nix::sys::signal::Signal) -> Result<()> {
        let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok()) else {
            return Ok(());
        };
        match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(errno) => Err(Error::ProcessIo {
                command: self.command_line.clone(),
                source: errno.into(),
                context: String::new(),
            }),
        }
    }

    /// Kills the child and reaps it.
    pub async fn kill(&mut self) -> Result<ExitStatus> {
        if let Err(source) = self.child.start_kill()
            && source.kind() != std::io::ErrorKind::InvalidInput
        {
            // InvalidInput means it has already exited; anything else is a real failure.
            return Err(Error::ProcessIo {
                command: self.command_line.clone(),
                source,
                context: self.diagnostics(),
            });
        }
        self.wait().await
    }
}

impl Drop for JsonLinesProcess {
    fn drop(&mut self) {
        // `kill_on_drop` also does this; killing here first makes the order explicit: the
        // child dies, then tokio reaps it in the background (no zombie), then the drain tasks
        // stop.
        if let Err(err) = self.child.start_kill() {
            tracing::debug!(%err, "child already gone at drop");
        }
        if let Ok(Some(status)) = self.child.try_wait() {
            tracing::debug!(%status, "child reaped at drop");
        }
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl std::fmt::Debug for JsonLinesProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLinesProcess")
            .field("command", &self.command_line)
            .field("home", &self.home.path())
            .finish_non_exhaustive()
    }
}
