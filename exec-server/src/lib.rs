//! keel-exec-server: a process service spoken over JSON-RPC (`exec-server.v0`), and its
//! client library.
//!
//! The server starts programs for a caller that may live in another process or on another
//! machine, streams their output back, and stops them. It owns no policy: approval, sandbox
//! choice and retries belong to the caller. Wire types come from
//! [`keel_protocol::exec_server`]; this crate moves them.
//!
//! # How data flows
//!
//! ```text
//! transport reader ─▶ processor ─▶ ExecServerHandler ─▶ processes (pipes or PTY)
//!   (stdio lines,      (JSON-RPC     (handshake, sessions,        │ output pumps
//!    ws frames)         routing)      typed methods)              ▼
//! transport writer ◀─ outbound (responses first, then events) ◀── event channel
//! ```
//!
//! Each connection gets its own [`ExecServerHandler`]; the processor only translates
//! JSON-RPC to typed calls, so [`ExecServerClient::in_process`] drives the same handler with
//! no JSON at all. Closing a connection terminates and reaps every process it started
//! (SIGTERM to each process group, SIGKILL after the grace period); SIGTERM or SIGINT to
//! the server does the same for every connection before it exits.
//!
//! # Backpressure
//!
//! Every queue is bounded. Output flows pump → event channel
//! ([`EVENT_CHANNEL_CAPACITY`] chunks of at most 256 KiB) → outbound → writer queue → socket
//! or pipe. When a client stops reading, these fill up, the pumps stop reading the child's
//! pipe or terminal, and the child blocks in `write(2)`: it is paused, not buffered, so the
//! server's memory stays bounded whatever the output size. Nothing is dropped from the
//! live stream. Retained output for `snapshot` is capped separately
//! ([`ExecServerConfig::retained_output_bytes`], head and tail kept).
//!
//! # Exit codes
//!
//! A process that exits reports its status; one killed by signal N reports `128 + N`
//! (SIGKILL → 137), as shells do. Every output byte is delivered once, in order per stream,
//! before `exited`. Should a background grandchild keep the output open after the process
//! exits, the server stops waiting after [`ExecServerConfig::output_drain_timeout`] of
//! silence and reports the exit; the leftover group is killed when the connection closes.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> keel_exec_server::Result<()> {
//! use keel_exec_server::{ExecServerClient, ExecServerClientOptions, ExecServerConfig, ExecServerEvent};
//! use keel_protocol::exec_server::ExecParams;
//!
//! let client =
//!     ExecServerClient::in_process(ExecServerConfig::default(), ExecServerClientOptions::default())
//!         .await?;
//! let mut events = client.subscribe();
//! let started = client
//!     .exec(ExecParams {
//!         argv: vec!["echo".into(), "hi".into()],
//!         cwd: "/".into(),
//!         env: [("PATH".to_string(), "/usr/bin:/bin".to_string())].into(),
//!         tty: false,
//!         arg0: None,
//!         traceparent: None,
//!     })
//!     .await?;
//! while let Ok(event) = events.recv().await {
//!     if let ExecServerEvent::Exited { session_id, exit_code } = event
//!         && session_id == started.session_id
//!     {
//!         assert_eq!(exit_code, 0);
//!         break;
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod buffers;
mod client;
mod codec;
mod config;
mod error;
mod event;
pub mod files;
mod handler;
mod json_lines;
pub mod listener_auth;
mod logging;
mod owned_groups;
pub mod patch;
mod pipe;
mod server;
pub mod supervisor;
#[cfg(feature = "otel")]
mod telemetry;
#[cfg(not(feature = "otel"))]
#[path = "telemetry_disabled.rs"]
mod telemetry;
mod transport;
mod utf8_stream;

pub use client::{
    BearerToken, ExecServerClient, ExecServerClientOptions, LocalExecServer,
    LocalExecServerOptions, dial_websocket, spawn_local_exec_server, token_may_go_to,
};
pub use config::ExecServerConfig;
pub use error::{ExecServerError, Result};
pub use event::ExecServerEvent;
pub use handler::{EVENT_CHANNEL_CAPACITY, ExecServerHandler};
pub use json_lines::{JsonLine, JsonLinesCodec};
pub use logging::{FALLBACK_LOG_ENV, LOG_ENV, init_stderr_logging};
pub use owned_groups::OwnedProcessGroup;
pub use server::raise_open_file_limit;
pub use server::{ExecServerArgs, ListenUrl, run_main};
pub use utf8_stream::Utf8ChunkDecoder;
