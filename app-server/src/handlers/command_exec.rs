//! `command/exec*`: standalone commands run through an in-process exec-server, one per
//! connection, so closing the connection kills its commands.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use keel_exec_server::{
    ExecServerClient, ExecServerClientOptions, ExecServerConfig, ExecServerEvent,
};
use keel_protocol::app_server::{
    CommandExecOutputDeltaNotification, CommandExecParams, CommandExecResizeParams,
    CommandExecResponse, CommandExecTerminateParams, CommandExecWriteParams, EmptyResponse,
    ServerNotification,
};
use keel_protocol::exec_server::{
    CloseStdinParams, ExecOutputStream, ExecParams, ResizeParams, TerminateMode, TerminateParams,
    WaitParams, WriteParams,
};
use keel_protocol::{Base64Bytes, ExecSessionId};
use tokio::sync::{OnceCell, broadcast};

use super::paths::require_absolute;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_OUTPUT_CAP: u64 = 1024 * 1024;
/// Events buffered per command before a slow reader misses output; large because a command
/// collecting its output must not lag behind its own stream.
const EVENT_CAPACITY: usize = 4096;

/// One connection's standalone commands.
pub(crate) struct CommandExecs {
    client: OnceCell<ExecServerClient>,
    /// A remote exec-server (`exec_server_url`) to run the commands on, instead of this
    /// process, and the variable holding its bearer token (`exec_server_auth_token_env`).
    remote: Option<RemoteExecServer>,
    sessions: SessionMap,
    next_id: std::sync::atomic::AtomicU64,
    /// Events buffered per command before a slow reader misses some.
    event_capacity: usize,
}

/// Where `command/exec` runs when not in this process.
pub(crate) struct RemoteExecServer {
    /// `exec_server_url`.
    pub(crate) url: String,
    /// `exec_server_auth_token_env`.
    pub(crate) token_env: Option<String>,
    /// An environment's `auth_token_file`.
    pub(crate) token_file: Option<std::path::PathBuf>,
}

/// Frees a reserved process id however `exec` ends (error, cancellation or exit).
struct ProcessIdReservation<'a> {
    sessions: &'a SessionMap,
    process_id: String,
}

impl Drop for ProcessIdReservation<'_> {
    fn drop(&mut self) {
        lock(self.sessions).remove(&self.process_id);
    }
}

/// The server's environment for a command, leaving out variables that are not UTF-8 (the
/// wire carries strings; such a variable cannot be passed on faithfully).
fn server_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(
            |(key, value)| match (key.into_string(), value.into_string()) {
                (Ok(key), Ok(value)) => Some((key, value)),
                (key, _) => {
                    tracing::debug!(?key, "leaving a non-UTF-8 variable out of command/exec");
                    None
                }
            },
        )
        .collect()
}

/// Process ids in use; `None` while the process is still being started.
type SessionMap = std::sync::Mutex<HashMap<String, Option<ExecSessionId>>>;

fn lock(
    sessions: &SessionMap,
) -> std::sync::MutexGuard<'_, HashMap<String, Option<ExecSessionId>>> {
    sessions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl CommandExecs {
    pub(crate) fn new(remote: Option<RemoteExecServer>) -> Self {
        Self {
            client: OnceCell::new(),
            remote,
            sessions: SessionMap::default(),
            next_id: std::sync::atomic::AtomicU64::new(1),
            event_capacity: EVENT_CAPACITY,
        }
    }

    /// Like [`Self::new`] with a smaller event buffer, so tests can make the reader lag.
    #[cfg(test)]
    fn with_event_capacity(event_capacity: usize) -> Self {
        Self {
            event_capacity,
            ..Self::new(None)
        }
    }

    async fn client(&self) -> Result<&ExecServerClient> {
        self.client
            .get_or_try_init(|| async {
                let options = ExecServerClientOptions {
                    client_name: "keel-app-server".into(),
                    event_capacity: self.event_capacity,
                    ..ExecServerClientOptions::default()
                };
                match &self.remote {
                    Some(remote) => {
                        let bearer_token = keel_core::exec_server_bearer_token_from(
                            remote.token_env.as_deref(),
                            remote.token_file.as_deref(),
                        )
                        .map_err(|err| {
                            keel_exec_server::ExecServerError::Protocol(err.to_string())
                        })?;
                        let options = ExecServerClientOptions {
                            bearer_token,
                            ..options
                        };
                        ExecServerClient::connect_websocket(&remote.url, options).await
                    }
                    None => {
                        ExecServerClient::in_process(ExecServerConfig::default(), options).await
                    }
                }
            })
            .await
            .map_err(AppServerError::from)
    }

    fn session(&self, process_id: &str) -> Result<ExecSessionId> {
        match lock(&self.sessions).get(process_id) {
            Some(Some(session)) => Ok(session.clone()),
            Some(None) => Err(AppServerError::InvalidRequest(format!(
                "process id `{process_id}` is still starting"
            ))),
            None => Err(AppServerError::InvalidRequest(format!(
                "unknown process id `{process_id}`"
            ))),
        }
    }

    /// Runs a command to completion, streaming or capturing its output.
    pub(crate) async fn exec(
        &self,
        params: CommandExecParams,
        server: &keel_core::Config,
        outgoing: &Arc<Outgoing>,
    ) -> Result<CommandExecResponse> {
        let default_cwd = server.cwd.as_path();
        if params.command.is_empty() {
            return Err(AppServerError::InvalidParams {
                method: "command/exec".into(),
                message: "`command` must not be empty".into(),
            });
        }
        if params.stream_stdin && !params.tty {
            return Err(AppServerError::InvalidParams {
                method: "command/exec".into(),
                message:
                    "`streamStdin` needs `tty: true` (pipe-backed commands run with stdin closed)"
                        .into(),
            });
        }
        let cwd = params
            .cwd
            .clone()
            .unwrap_or_else(|| default_cwd.to_path_buf());
        require_absolute("command/exec", "cwd", &cwd)?;
        let mut env = server_environment();
        env.extend(params.env.clone().unwrap_or_default());
        let process_id = params.process_id.clone().unwrap_or_else(|| {
            format!(
                "exec-{}",
                self.next_id
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )
        });
        // Checked and reserved in one step, so two requests cannot both take the same id.
        let _reservation = {
            let mut sessions = lock(&self.sessions);
            if sessions.contains_key(&process_id) {
                return Err(AppServerError::InvalidRequest(format!(
                    "process id `{process_id}` is already running"
                )));
            }
            sessions.insert(process_id.clone(), None);
            ProcessIdReservation {
                sessions: &self.sessions,
                process_id: process_id.clone(),
            }
        };
        let (argv, arg0) = sandboxed(&params, server, &cwd)?;
        let client = self.client().await?;
        let mut events = client.subscribe();
        let session = client
            .exec(ExecParams {
                argv,
                cwd,
                env,
                tty: params.tty,
                arg0,
                traceparent: None,
            })
            .await?
            .session_id;
        lock(&self.sessions).insert(process_id.clone(), Some(session.clone()));
        if let Some(size) = params.size
            && params.tty
        {
            client
                .resize(ResizeParams {
                    session_id: session.clone(),
                    rows: size.rows,
                    cols: size.cols,
                })
                .await?;
        }
        self.collect(
            client,
            &mut events,
            &session,
            &process_id,
            &params,
            outgoing,
        )
        .await
    }

    async fn collect(
        &self,
        client: &ExecServerClient,
        events: &mut broadcast::Receiver<ExecServerEvent>,
        session: &ExecSessionId,
        process_id: &str,
        params: &CommandExecParams,
        outgoing: &Arc<Outgoing>,
    ) -> Result<CommandExecResponse> {
        let cap = if params.disable_output_cap {
            u64::MAX
        } else {
            params.output_bytes_cap.unwrap_or(DEFAULT_OUTPUT_CAP)
        };
        let timeout = (!params.disable_timeout).then(|| {
            params
                .timeout_ms
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
        });
        let deadline = async {
            match timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut sent = 0u64;
        let mut timed_out = false;
        // Set when the reader lagged and the process had already exited: the events still
        // queued are read, then the call ends without waiting for an `exited` that was lost.
        let mut exit_seen_by_wait: Option<i32> = None;
        let exit_code = loop {
            let event = if let Some(exit_code) = exit_seen_by_wait {
                match events.try_recv() {
                    Ok(event) => Ok(event),
                    Err(broadcast::error::TryRecvError::Lagged(skipped)) => {
                        Err(broadcast::error::RecvError::Lagged(skipped))
                    }
                    Err(_) => break exit_code,
                }
            } else {
                tokio::select! {
                    () = &mut deadline, if !timed_out => {
                        timed_out = true;
                        client
                            .terminate(TerminateParams { session_id: session.clone(), mode: Some(TerminateMode::Force) })
                            .await?;
                        continue;
                    }
                    event = events.recv() => event,
                }
            };
            let event = match event {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::warn!(
                        process_id,
                        skipped,
                        "command/exec reader fell behind; output lost"
                    );
                    // The lost events may include the exit; ask for it directly.
                    if exit_seen_by_wait.is_none() {
                        let waited = client
                            .wait(WaitParams {
                                session_id: session.clone(),
                                timeout_ms: Some(0),
                            })
                            .await?;
                        exit_seen_by_wait = waited.exit_code;
                    }
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return Err(AppServerError::Internal("exec-server stopped".into()));
                }
            };
            match event {
                ExecServerEvent::Output {
                    session_id,
                    stream,
                    chunk,
                } if &session_id == session => {
                    let room = cap.saturating_sub(sent);
                    let take = (chunk.len() as u64).min(room) as usize;
                    sent += take as u64;
                    if params.stream_stdout_stderr {
                        if take > 0 || sent >= cap {
                            outgoing
                                .notify(ServerNotification::CommandExecOutputDelta(
                                    CommandExecOutputDeltaNotification {
                                        process_id: process_id.to_string(),
                                        stream,
                                        delta_base64: Base64Bytes::from(&chunk[..take]),
                                        cap_reached: sent >= cap,
                                    },
                                ))
                                .await;
                        }
                    } else {
                        match stream {
                            ExecOutputStream::Stdout => stdout.extend_from_slice(&chunk[..take]),
                            ExecOutputStream::Stderr => stderr.extend_from_slice(&chunk[..take]),
                        }
                    }
                }
                ExecServerEvent::Exited {
                    session_id,
                    exit_code,
                } if &session_id == session => break exit_code,
                _ => {}
            }
        };
        Ok(CommandExecResponse {
            exit_code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    /// `command/exec/write`.
    pub(crate) async fn write(&self, params: CommandExecWriteParams) -> Result<EmptyResponse> {
        let session = self.session(&params.process_id)?;
        let client = self.client().await?;
        if let Some(chunk) = params.delta_base64 {
            client
                .write(WriteParams {
                    session_id: session.clone(),
                    chunk,
                })
                .await?;
        }
        if params.close_stdin {
            client
                .close_stdin(CloseStdinParams {
                    session_id: session,
                })
                .await?;
        }
        Ok(EmptyResponse {})
    }

    /// `command/exec/resize`.
    pub(crate) async fn resize(&self, params: CommandExecResizeParams) -> Result<EmptyResponse> {
        let session = self.session(&params.process_id)?;
        self.client()
            .await?
            .resize(ResizeParams {
                session_id: session,
                rows: params.size.rows,
                cols: params.size.cols,
            })
            .await?;
        Ok(EmptyResponse {})
    }

    /// `command/exec/terminate`.
    pub(crate) async fn terminate(
        &self,
        params: CommandExecTerminateParams,
    ) -> Result<EmptyResponse> {
        let session = self.session(&params.process_id)?;
        self.client()
            .await?
            .terminate(TerminateParams {
                session_id: session,
                mode: None,
            })
            .await?;
        Ok(EmptyResponse {})
    }
}

/// The argv (and `argv[0]`) that runs the command under its sandbox: the request's policy, or
/// the server's configured one. Full access only when the server itself runs with it; a
/// command that cannot be confined as promised is not run.
fn sandboxed(
    params: &CommandExecParams,
    server: &keel_core::Config,
    cwd: &std::path::Path,
) -> Result<(Vec<String>, Option<String>)> {
    use keel_core::sandbox::{LINUX_SANDBOX_ARG0, SandboxCommand, SandboxError, probe_kernel};
    use keel_protocol::SandboxPolicy;

    let server_full_access = matches!(server.sandbox_policy, SandboxPolicy::DangerFullAccess);
    let policy = match params.sandbox_policy.clone().map(SandboxPolicy::from) {
        Some(SandboxPolicy::DangerFullAccess) if !server_full_access => {
            return Err(AppServerError::InvalidParams {
                method: "command/exec".into(),
                message: "`sandboxPolicy: dangerFullAccess` is honoured only when the server's \
                          own sandbox_mode is danger-full-access"
                    .into(),
            });
        }
        Some(policy) => policy,
        None => server.sandbox_policy.clone(),
    };
    let tmpdir = params
        .env
        .as_ref()
        .and_then(|env| env.get("TMPDIR"))
        .map(std::path::PathBuf::from);
    crate::ceiling::check_sandbox(server, "command/exec", &policy, cwd, tmpdir.as_deref())?;
    if matches!(policy, SandboxPolicy::DangerFullAccess) {
        return Ok((params.command.clone(), None));
    }
    let refused = |err: SandboxError| {
        AppServerError::InvalidRequest(format!(
            "command not run: it must run in the sandbox, which is unavailable here ({err})"
        ))
    };
    let helper = server
        .sandbox_executable
        .clone()
        .or_else(keel_core::sandbox::default_sandbox_executable)
        .filter(|helper| helper.is_file())
        .ok_or_else(|| refused(SandboxError::HelperNotFound))?;
    probe_kernel().map_err(refused)?;
    let command = SandboxCommand::new(&helper, &policy, cwd, server.sandbox_allow_git_writes)
        .map_err(refused)?;
    Ok((
        command.wrap(&params.command),
        Some(LINUX_SANDBOX_ARG0.to_string()),
    ))
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(CommandExec, |ctx, p| {
    // The server's own settings decide the default sandbox (read per request, so an edit
    // of `config.toml` applies to the next command).
    let server = ctx.state.resolve_config(&Default::default())?;
    Reply::now(
        &ctx.connection
            .execs
            .exec(p, &server, ctx.outgoing())
            .await?,
    )
});
handle!(CommandExecWrite, |ctx, p| Reply::now(
    &ctx.connection.execs.write(p).await?
));
handle!(CommandExecResize, |ctx, p| Reply::now(
    &ctx.connection.execs.resize(p).await?
));
handle!(CommandExecTerminate, |ctx, p| Reply::now(
    &ctx.connection.execs.terminate(p).await?
));

#[cfg(test)]
mod tests {
    use super::*;

    use crate::delivery::DeliveryQueue;

    fn params(command: &[&str]) -> CommandExecParams {
        serde_json::from_value(serde_json::json!({
            "command": command,
            "cwd": "/",
            "disableTimeout": true,
        }))
        .expect("valid params")
    }

    /// A reader that lags so far that the command's `exited` event is gone still ends with
    /// the right exit code (and, with `disableTimeout`, does not wait forever).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lagged_reader_still_learns_the_exit() -> anyhow::Result<()> {
        let execs = CommandExecs::with_event_capacity(2);
        let client = execs.client().await?;
        let mut events = client.subscribe();
        let params = params(&["sh", "-c", "echo out; exit 7"]);
        let session = client
            .exec(ExecParams {
                argv: params.command.clone(),
                cwd: "/".into(),
                env: server_environment(),
                tty: false,
                arg0: None,
                traceparent: None,
            })
            .await?
            .session_id;
        client
            .wait(WaitParams {
                session_id: session.clone(),
                timeout_ms: None,
            })
            .await?;
        // Another command's events push the first one's `exited` out of the buffer.
        let noisy = client
            .exec(ExecParams {
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.01; done".into(),
                ],
                cwd: "/".into(),
                env: server_environment(),
                tty: false,
                arg0: None,
                traceparent: None,
            })
            .await?
            .session_id;
        client
            .wait(WaitParams {
                session_id: noisy,
                timeout_ms: None,
            })
            .await?;

        let outgoing = Arc::new(Outgoing::new(Arc::new(DeliveryQueue::new(16))));
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            execs.collect(client, &mut events, &session, "p1", &params, &outgoing),
        )
        .await??;
        assert_eq!(response.exit_code, 7);
        Ok(())
    }

    /// A server configured with full access, working in `/`.
    fn full_access_server() -> anyhow::Result<(tempfile::TempDir, keel_core::Config)> {
        let home = tempfile::tempdir()?;
        std::fs::write(
            home.path().join("config.toml"),
            "sandbox_mode = \"danger-full-access\"\n",
        )?;
        let env = keel_core::ConfigEnv {
            process_cwd: "/".into(),
            openai_base_url: None,
            oss_base_url: None,
        };
        let config = keel_core::Config::load_with_env(
            home.path(),
            Vec::new(),
            keel_core::ConfigOverrides::default(),
            &env,
        )?;
        Ok((home, config))
    }

    /// Two requests for one process id: exactly one runs, whatever the interleaving.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_process_id_is_taken_once() -> anyhow::Result<()> {
        let (_home, server) = full_access_server()?;
        let execs = CommandExecs::new(None);
        let outgoing = Arc::new(Outgoing::new(Arc::new(DeliveryQueue::new(16))));
        let mut params = params(&["sh", "-c", "sleep 0.3"]);
        params.process_id = Some("same".into());
        let (first, second) = tokio::join!(
            execs.exec(params.clone(), &server, &outgoing),
            execs.exec(params.clone(), &server, &outgoing),
        );
        let failures: Vec<String> = [&first, &second]
            .into_iter()
            .filter_map(|result| result.as_ref().err().map(ToString::to_string))
            .collect();
        assert_eq!(failures.len(), 1, "{first:?} {second:?}");
        assert!(failures[0].contains("already running"), "{failures:?}");
        // Once it has finished, the id is free again.
        assert_eq!(execs.exec(params, &server, &outgoing).await?.exit_code, 0);
        Ok(())
    }
}
