//! The editor as Keel's files and terminals. When the editor offers `fs` at `initialize`, a
//! patch reads and writes what the editor holds (`fs/read_text_file`, `fs/write_text_file`),
//! unsaved edits included, so it shows the change and can undo it; when it offers
//! `terminal`, the model's one-shot commands run in its terminals (`terminal/*`), wrapped in
//! Keel's sandbox helper as always, and the tool call shows the terminal live. The engine
//! decides everything else as for any client: approvals, the sandbox, timeouts, cancels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use keel_core::{
    ClientBackendError, ClientCommand, ClientFiles, ClientTerminal, ClientTerminals, TerminalExit,
    TerminalOutput,
};
use keel_protocol::ConversationId;
use keel_protocol::acp::{
    ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse, EnvVariable, READ_TEXT_FILE,
    ReadTextFileRequest, ReadTextFileResponse, SessionUpdate, TERMINAL_CREATE, TERMINAL_KILL,
    TERMINAL_OUTPUT, TERMINAL_RELEASE, TERMINAL_WAIT_FOR_EXIT, TerminalExitStatus,
    TerminalOutputResponse, TerminalRequest, ToolCallContent, ToolCallUpdate, WRITE_TEXT_FILE,
    WriteTextFileRequest,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::sessions::Sessions;
use crate::wire::Wire;

/// How long the editor gets to answer a file request or a terminal request other than the
/// wait for a command's exit (which the command's own timeout bounds).
const EDITOR_ANSWER: Duration = Duration::from_secs(60);

/// The editor's files and terminals, for the sessions it opened.
pub(crate) struct Editor {
    wire: Wire,
    capabilities: Arc<Mutex<ClientCapabilities>>,
    sessions: Arc<Sessions>,
    /// Links named as the sandbox helper must be started (editors cannot set `argv[0]`), in
    /// a folder only this user can change; removed when the agent ends.
    helper_links: Mutex<Option<tempfile::TempDir>>,
    /// The link made for each (name, program).
    links: Mutex<HashMap<(String, String), PathBuf>>,
}

impl Editor {
    pub(crate) fn new(
        wire: Wire,
        capabilities: Arc<Mutex<ClientCapabilities>>,
        sessions: Arc<Sessions>,
    ) -> Self {
        Self {
            wire,
            capabilities,
            sessions,
            helper_links: Mutex::new(None),
            links: Mutex::default(),
        }
    }

    fn offered(&self) -> ClientCapabilities {
        lock(&self.capabilities).clone()
    }

    /// Whether `conversation` is one of the editor's own sessions (not a sub-agent's, whose
    /// session id an editor without `subagents` has never heard of: its files and commands
    /// stay Keel's).
    fn is_session(&self, conversation: ConversationId) -> bool {
        self.sessions
            .with(&conversation.to_string(), |session| {
                session.parent.is_none()
            })
            .unwrap_or(false)
    }

    /// Calls one of the editor's methods; its result.
    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        limit: Option<Duration>,
    ) -> Result<T, ClientBackendError> {
        let params = serde_json::to_value(params)
            .map_err(|err| ClientBackendError::new(format!("cannot encode `{method}`: {err}")))?;
        let answer = self.wire.request(method, params).await;
        let answer = match limit {
            Some(limit) => tokio::time::timeout(limit, answer).await.map_err(|_| {
                ClientBackendError::new(format!(
                    "the editor did not answer `{method}` within {} s",
                    limit.as_secs()
                ))
            })?,
            None => answer.await,
        };
        match answer {
            Ok(Ok(result)) => serde_json::from_value(result).map_err(|err| {
                ClientBackendError::new(format!("the editor's answer to `{method}`: {err}"))
            }),
            Ok(Err(error)) => Err(ClientBackendError::new(format!(
                "the editor refused `{method}`: {}",
                error.message
            ))),
            Err(_) => Err(ClientBackendError::new(format!(
                "the editor went away before answering `{method}`"
            ))),
        }
    }

    /// The program to start so that it sees `name` as `argv[0]`: a link of that name to it.
    fn program_named(&self, name: &str, program: &str) -> Result<String, ClientBackendError> {
        let key = (name.to_string(), program.to_string());
        if let Some(link) = lock(&self.links).get(&key) {
            return Ok(link.display().to_string());
        }
        let failed =
            |err: std::io::Error| ClientBackendError::new(format!("cannot link `{name}`: {err}"));
        let mut folder = lock(&self.helper_links);
        if folder.is_none() {
            *folder = Some(
                tempfile::Builder::new()
                    .prefix("keel-acp-")
                    .tempdir()
                    .map_err(failed)?,
            );
        }
        let Some(dir) = folder.as_ref() else {
            return Err(ClientBackendError::new("no folder for the helper's link"));
        };
        // One folder per (name, program), so two programs never share a link.
        let place = dir.path().join(lock(&self.links).len().to_string());
        std::fs::create_dir(&place).map_err(failed)?;
        let link = place.join(name);
        std::os::unix::fs::symlink(program, &link).map_err(failed)?;
        lock(&self.links).insert(key, link.clone());
        Ok(link.display().to_string())
    }

    /// Shows `terminal` in the session's tool call `call_id`: now, if the call was announced,
    /// else with its announcement ([`crate::updates`] reads what is recorded here).
    async fn show_terminal(&self, session_id: &str, call_id: &str, terminal_id: &str) {
        let announced = self
            .sessions
            .with(session_id, |session| {
                session
                    .terminals
                    .insert(call_id.to_string(), terminal_id.to_string());
                session.announced.contains(call_id)
            })
            .unwrap_or(false);
        if announced {
            self.wire
                .session_update(session_id, terminal_update(call_id, terminal_id))
                .await;
        }
    }
}

/// The update that shows a terminal in a tool call.
pub(crate) fn terminal_update(call_id: &str, terminal_id: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate {
        tool_call_id: call_id.to_string(),
        content: Some(vec![ToolCallContent::Terminal {
            terminal_id: terminal_id.to_string(),
        }]),
        ..ToolCallUpdate::default()
    })
}

/// The editor's files, as Keel's engine asks for them.
pub(crate) struct EditorFiles(pub(crate) Arc<Editor>);

impl ClientFiles for EditorFiles {
    fn serves(&self, conversation: ConversationId) -> bool {
        let offered = self.0.offered();
        offered.fs.read_text_file && offered.fs.write_text_file && self.0.is_session(conversation)
    }

    fn read_text_file<'a>(
        &'a self,
        conversation: ConversationId,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<String, ClientBackendError>> {
        Box::pin(async move {
            let request = ReadTextFileRequest {
                session_id: conversation.to_string(),
                path: path.to_path_buf(),
                line: None,
                limit: None,
            };
            let read: ReadTextFileResponse = self
                .0
                .call(READ_TEXT_FILE, request, Some(EDITOR_ANSWER))
                .await?;
            Ok(read.content)
        })
    }

    fn write_text_file<'a>(
        &'a self,
        conversation: ConversationId,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), ClientBackendError>> {
        Box::pin(async move {
            let request = WriteTextFileRequest {
                session_id: conversation.to_string(),
                path: path.to_path_buf(),
                content: content.to_string(),
            };
            let _written: serde_json::Value = self
                .0
                .call(WRITE_TEXT_FILE, request, Some(EDITOR_ANSWER))
                .await?;
            Ok(())
        })
    }
}

/// The editor's terminals, as Keel's engine asks for them.
pub(crate) struct EditorTerminals(pub(crate) Arc<Editor>);

impl ClientTerminals for EditorTerminals {
    fn serves(&self, conversation: ConversationId) -> bool {
        self.0.offered().terminal && self.0.is_session(conversation)
    }

    fn start(
        &self,
        conversation: ConversationId,
        command: ClientCommand,
    ) -> BoxFuture<'_, Result<Box<dyn ClientTerminal>, ClientBackendError>> {
        Box::pin(async move {
            let session_id = conversation.to_string();
            let Some((program, args)) = command.argv.split_first() else {
                return Err(ClientBackendError::new("an empty command"));
            };
            let named = |name: &str| Path::new(program).file_name().is_some_and(|n| n == name);
            let program = match &command.arg0 {
                Some(name) if !named(name) => self.0.program_named(name, program)?,
                _ => program.clone(),
            };
            let request = CreateTerminalRequest {
                session_id: session_id.clone(),
                command: program,
                args: args.to_vec(),
                env: command
                    .env
                    .iter()
                    .map(|(name, value)| EnvVariable {
                        name: name.clone(),
                        value: value.clone(),
                    })
                    .collect(),
                cwd: Some(command.cwd.clone()),
                output_byte_limit: Some(command.output_byte_limit),
            };
            let created: CreateTerminalResponse = self
                .0
                .call(TERMINAL_CREATE, request, Some(EDITOR_ANSWER))
                .await?;
            self.0
                .show_terminal(&session_id, command.call_id.as_str(), &created.terminal_id)
                .await;
            Ok(Box::new(EditorTerminal {
                editor: Arc::clone(&self.0),
                request: TerminalRequest {
                    session_id,
                    terminal_id: created.terminal_id,
                },
            }) as Box<dyn ClientTerminal>)
        })
    }
}

/// One command in one of the editor's terminals.
struct EditorTerminal {
    editor: Arc<Editor>,
    request: TerminalRequest,
}

fn exit_of(status: TerminalExitStatus) -> TerminalExit {
    TerminalExit {
        exit_code: status
            .exit_code
            .map(|code| i32::try_from(code).unwrap_or(i32::MAX)),
        signal: status.signal,
    }
}

impl ClientTerminal for EditorTerminal {
    fn wait_for_exit(&self) -> BoxFuture<'_, Result<TerminalExit, ClientBackendError>> {
        Box::pin(async move {
            let status: TerminalExitStatus = self
                .editor
                .call(TERMINAL_WAIT_FOR_EXIT, &self.request, None)
                .await?;
            Ok(exit_of(status))
        })
    }

    fn output(&self) -> BoxFuture<'_, Result<TerminalOutput, ClientBackendError>> {
        Box::pin(async move {
            let shown: TerminalOutputResponse = self
                .editor
                .call(TERMINAL_OUTPUT, &self.request, Some(EDITOR_ANSWER))
                .await?;
            Ok(TerminalOutput {
                output: shown.output,
                truncated: shown.truncated,
            })
        })
    }

    fn kill(&self) -> BoxFuture<'_, Result<(), ClientBackendError>> {
        Box::pin(async move {
            let _killed: serde_json::Value = self
                .editor
                .call(TERMINAL_KILL, &self.request, Some(EDITOR_ANSWER))
                .await?;
            Ok(())
        })
    }

    fn release(&self) -> BoxFuture<'_, Result<(), ClientBackendError>> {
        Box::pin(async move {
            let _released: serde_json::Value = self
                .editor
                .call(TERMINAL_RELEASE, &self.request, Some(EDITOR_ANSWER))
                .await?;
            Ok(())
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
