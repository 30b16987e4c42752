//! keel-mcp-server: Keel exposed as an MCP server over stdio, or over Streamable HTTP with
//! `--listen` (see `http`), so any MCP client (an IDE, a desktop assistant, another agent)
//! can hand Keel a coding task and watch it work.
//!
//! # Data flow
//!
//! Three named tasks joined by bounded channels (capacities and full-channel behaviour are
//! documented at each constant):
//!
//! 1. **reader** (`transport::read_loop`): stdin lines → JSON-RPC messages, or a parse /
//!    invalid-request error for a malformed line (`INCOMING_CAPACITY`, 128 messages).
//! 2. **processor** (`processor::MessageProcessor`): answers `initialize`, `ping`,
//!    `tools/list`, the empty `resources/list` / `prompts/list`, `logging/setLevel` inline;
//!    spawns one task per `tools/call`; routes client responses to the task waiting for them;
//!    turns `notifications/cancelled` into an interrupt. A call is tracked from the moment it
//!    is read, so a cancellation that arrives while the call is still starting its session
//!    is applied as soon as the call has something to stop.
//! 3. **writer** (`transport::write_loop`): messages → stdout lines with `"jsonrpc": "2.0"`
//!    (`OUTGOING_CAPACITY`, 1024 messages; senders wait when it is full).
//!
//! A `codex` call starts a conversation in keel-core, submits the prompt, and forwards every
//! engine event as a `codex/event` notification (`_meta: {requestId, threadId}`); approval
//! requests become `elicitation/create` requests whose answers go back to the engine (an
//! elicitation still unanswered when its call ends is withdrawn with a server-sent
//! `notifications/cancelled` naming the elicitation's request id); the
//! call's result is the turn's last agent message with `structuredContent {threadId,
//! content}`. The conversation streaming tools keep conversations open with buffered events
//! (see `streaming`); `conversationStatus` reports whether one is streamed and what it has
//! buffered and held.
//!
//! ```no_run
//! # async fn run() -> keel_mcp_server::Result<()> {
//! // What `keel mcp-server` does: serve stdin/stdout until the client closes stdin.
//! keel_mcp_server::run_main(keel_mcp_server::McpServerOptions::default()).await
//! # }
//! ```

mod approval;
mod codex_tool;
mod context;
mod error;
mod http;
mod listen_args;
pub mod methods;
mod outgoing;
mod processor;
mod results;
mod streamed_conversation;
mod streaming;
mod sub_agent_calls;
mod sub_agents;
mod tools;
mod transport;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use keel_core::{Config, ConfigOverrides, find_keel_home, parse_cli_override};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

pub use error::{McpServerError, Result};
pub use http::{
    DEFAULT_SESSION_IDLE_TIMEOUT, HEADER_MISMATCH, HttpListenOptions, MCP_PATH,
    UNSUPPORTED_PROTOCOL_VERSION, parse_listen_url, serve_http, shutdown_on_ctrl_c,
};
pub use listen_args::ListenArgs;
pub use processor::{SERVER_NAME, negotiate_protocol_version};
pub use tools::{list_tools, tool_schema};

use crate::context::{ServerContext, ServerSettings};
use crate::outgoing::{OUTGOING_CAPACITY, OutgoingSender};
use crate::processor::MessageProcessor;
use crate::transport::{INCOMING_CAPACITY, Incoming, read_loop, write_loop};
use keel_protocol::JsonRpcMessage;

/// How long queued messages may take to flush once the processor has stopped.
const WRITER_DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Options of `keel mcp-server`.
#[derive(Debug, Clone, Default)]
pub struct McpServerOptions {
    /// The Keel home; `None` reads `KEEL_HOME`, else `~/.keel`.
    pub keel_home: Option<PathBuf>,
    /// `-c key.path=value` overrides applied to every session.
    pub config_overrides: Vec<String>,
    /// The longest input line accepted; `None` means [`keel_protocol::DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: Option<usize>,
}

/// Serves MCP on this process's stdin and stdout until stdin closes.
pub async fn run_main(options: McpServerOptions) -> Result<()> {
    serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        options,
        CancellationToken::new(),
    )
    .await
}

/// Serves MCP on `reader` / `writer` until input ends or `shutdown` is cancelled. At end of
/// input, requests already read still get their answers (tool calls run on for up to
/// `processor::INPUT_CLOSED_DRAIN`); on `shutdown`, running tool calls are aborted (their
/// commands killed).
pub async fn serve<R, W>(
    reader: R,
    writer: W,
    options: McpServerOptions,
    shutdown: CancellationToken,
) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let max_line_bytes = options
        .max_line_bytes
        .unwrap_or(keel_protocol::DEFAULT_MAX_LINE_BYTES);
    let settings = resolve_settings(options)?;
    let RunningProcessor {
        incoming,
        outgoing,
        task: processor,
    } = RunningProcessor::start(settings, ProcessorMode::Handshake, shutdown);

    let reader = AbortOnDropHandle::new(tokio::spawn(read_loop(reader, max_line_bytes, incoming)));
    let writer = AbortOnDropHandle::new(tokio::spawn(write_loop(writer, outgoing)));

    let processed = processor.await;
    // The processor and its tool calls are gone; the writer ends once the last sender clone
    // drops, normally at once. Give it a bounded moment to flush.
    let written = tokio::time::timeout(WRITER_DRAIN_TIMEOUT, writer).await;
    reader.abort();
    processed.map_err(|source| McpServerError::Task {
        task: "processor",
        source,
    })?;
    match written {
        Ok(joined) => joined.map_err(|source| McpServerError::Task {
            task: "writer",
            source,
        })?,
        Err(_) => {
            tracing::debug!("writer did not finish in time; exiting anyway");
            Ok(())
        }
    }
}

/// Whether a processor expects the `initialize` handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessorMode {
    /// stdio and Streamable HTTP sessions (MCP up to 2025-11-25).
    Handshake,
    /// MCP 2026-07-28 over HTTP: every request stands alone.
    Stateless,
}

/// A processor task with its own conversations, and the channels that feed and drain it.
pub(crate) struct RunningProcessor {
    /// Client messages in.
    pub(crate) incoming: mpsc::Sender<Incoming>,
    /// Server messages out.
    pub(crate) outgoing: mpsc::Receiver<JsonRpcMessage>,
    /// The processor; dropping it aborts its tool calls (and so their commands).
    pub(crate) task: AbortOnDropHandle<()>,
}

impl RunningProcessor {
    /// Starts a processor that runs until its input closes or `shutdown` fires.
    pub(crate) fn start(
        settings: ServerSettings,
        mode: ProcessorMode,
        shutdown: CancellationToken,
    ) -> Self {
        let (incoming, incoming_rx) = mpsc::channel(INCOMING_CAPACITY);
        let (outgoing_tx, outgoing) = mpsc::channel(OUTGOING_CAPACITY);
        let context = Arc::new(ServerContext::new(
            OutgoingSender::new(outgoing_tx),
            settings,
        ));
        sub_agents::forward_spawned(&context);
        let processor = match mode {
            ProcessorMode::Handshake => MessageProcessor::new(context),
            ProcessorMode::Stateless => MessageProcessor::stateless(context),
        };
        let task = AbortOnDropHandle::new(tokio::spawn(processor.run(incoming_rx, shutdown)));
        Self {
            incoming,
            outgoing,
            task,
        }
    }
}

fn resolve_settings(options: McpServerOptions) -> Result<ServerSettings> {
    let keel_home = match options.keel_home {
        Some(home) => home,
        None => find_keel_home(std::env::var_os("KEEL_HOME").as_deref())
            .map_err(|err| McpServerError::Home(Box::new(err)))?,
    };
    let cli_overrides = options
        .config_overrides
        .iter()
        .map(|raw| parse_cli_override(raw))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| McpServerError::Override(Box::new(err)))?;
    // Fail at startup, not at the first tool call, when the configuration is broken.
    Config::load(
        &keel_home,
        cli_overrides.clone(),
        ConfigOverrides::default(),
    )
    .map_err(|source| McpServerError::Config {
        home: keel_home.clone(),
        source: Box::new(source),
    })?;
    Ok(ServerSettings {
        keel_home,
        cli_overrides,
    })
}
