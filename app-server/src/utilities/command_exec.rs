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
    WriteParams,
};
use keel_protocol::{Base64Bytes, ExecSessionId};
use tokio::sync::{Mutex, OnceCell, broadcast};

use super::require_absolute;
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
    sessions: Mutex<HashMap<String, ExecSessionId>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl CommandExecs {
    pub(crate) fn new() -> Self {
        Self {
            client: OnceCell::new(),
            sessions: Mutex::new(HashMap::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
        }
    }

    async fn client(&self) -> Result<&ExecServerClient> {
        self.client
            .get_or_try_init(|| async {
                let options = ExecServerClientOptions {
                    client_name: "keel-app-server".into(),
                    event_capacity: EVENT_CAPACITY,
                    ..ExecServerClientOptions::default()
                };
                ExecServerClient::in_process(ExecServerConfig::default(), options).await
            })
            .await
            .map_err(AppServerError::from)
    }

    async fn session(&self, process_id: &str) -> Result<ExecSessionId> {
        self.sessions
            .lock()
            .await
            .get(process_id)
            .cloned()
            .ok_or_else(|| {
                AppServerError::InvalidRequest(format!("unknown process id `{process_id}`"))
            })
    }

    /// Runs a command to completion, streaming or capturing its output.
    pub(crate) async fn exec(
        &self,
        params: CommandExecParams,
        default_cwd: &std::path::Path,
        outgoing: &Arc<Outgoing>,
    ) -> Result<CommandExecResponse> {
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
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        env.extend(params.env.clone().unwrap_or_default());
        let process_id = params.process_id.clone().unwrap_or_else(|| {
            format!(
                "exec-{}",
                self.next_id
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )
        });
        if self.sessions.lock().await.contains_key(&process_id) {
            return Err(AppServerError::InvalidRequest(format!(
                "process id `{process_id}` is already running"
            )));
        }
        let client = self.client().await?;
        let mut events = client.subscribe();
        let session = client
            .exec(ExecParams {
                argv: params.command.clone(),
                cwd,
                env,
                tty: params.tty,
                arg0: None,
            })
            .await?
            .session_id;
        self.sessions
            .lock()
            .await
            .insert(process_id.clone(), session.clone());
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
        let result = self
            .collect(
                client,
                &mut events,
                &session,
                &process_id,
                &params,
                outgoing,
            )
            .await;
        self.sessions.lock().await.remove(&process_id);
        result
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
        let deadline = tokio::time::sleep(timeout.unwrap_or(Duration::from_secs(u64::MAX / 4)));
        tokio::pin!(deadline);
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut sent = 0u64;
        let mut timed_out = false;
        loop {
            let event = tokio::select! {
                () = &mut deadline, if !timed_out => {
                    timed_out = true;
                    client
                        .terminate(TerminateParams { session_id: session.clone(), mode: Some(TerminateMode::Force) })
                        .await?;
                    continue;
                }
                event = events.recv() => event,
            };
            let event = match event {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::warn!(
                        process_id,
                        skipped,
                        "command/exec reader fell behind; output lost"
                    );
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
                } if &session_id == session => {
                    return Ok(CommandExecResponse {
                        exit_code,
                        stdout: String::from_utf8_lossy(&stdout).into_owned(),
                        stderr: String::from_utf8_lossy(&stderr).into_owned(),
                    });
                }
                _ => {}
            }
        }
    }

    /// `command/exec/write`.
    pub(crate) async fn write(&self, params: CommandExecWriteParams) -> Result<EmptyResponse> {
        let session = self.session(&params.process_id).await?;
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
        let session = self.session(&params.process_id).await?;
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
        let session = self.session(&params.process_id).await?;
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
