//! keel-test-support: the scripted mock model server and the process harnesses Keel's tests
//! run against. A dev-dependency only.
//!
//! # The mock model
//!
//! [`MockModelServer`] listens on `127.0.0.1:0` and serves, under `/v1` (and without it):
//!
//! - `POST /responses`: the OpenAI Responses API as SSE (`event:` + `data:` frames):
//!   `response.created`, then per item `response.output_item.added`, its deltas
//!   (`response.output_text.delta`, `response.reasoning_summary_text.delta`,
//!   `response.function_call_arguments.delta`, `response.custom_tool_call_input.delta`, …) and
//!   `response.output_item.done`, then `response.completed` with `usage` (or `response.failed`).
//! - `POST /chat/completions`: Chat Completions chunks (`choices[].delta` content, reasoning and
//!   `tool_calls`, a `finish_reason` chunk, a usage chunk), then `data: [DONE]`.
//! - `GET /models`: the one scripted model.
//!
//! Each model request consumes one scripted [`Turn`]: a list of [`OutputItem`]s plus an
//! optional [`Fault`] and delay between events. A [`Responder`] closure may choose the turn
//! from the request instead (for fan-out tests where arrival order is not fixed). When no turn
//! is left the mock answers HTTP 500 with an error naming `script_exhausted`.
//!
//! Data flow: request → recorded as a [`CapturedRequest`] (headers, parsed body, in arrival
//! order) → checked against protocol invariants (every tool output names a call the mock
//! emitted and sits next to its call; `stream: true`; …; see [`Violation`]) → turn chosen →
//! rendered as frames → faults and delays applied → streamed. Tests assert on
//! [`MockModelServer::requests`] and finish with [`MockModelServer::verify`].
//!
//! ```no_run
//! # async fn demo() -> keel_test_support::Result<()> {
//! use keel_test_support::{MockModelServer, Script, Turn, assistant_message, shell_call};
//!
//! let server = MockModelServer::start(Script::new([
//!     Turn::new([shell_call("call-1", ["echo", "hi"])]),
//!     Turn::new([assistant_message("done")]),
//! ]))
//! .await?;
//! let base_url = server.uri(); // http://127.0.0.1:PORT/v1
//! # let _ = base_url;
//! server.verify()?;
//! # Ok(())
//! # }
//! ```
//!
//! # The JSON script format
//!
//! The `keel-mock-model` binary (and [`Script::load`]) reads either a bare array of turns or
//! `{"model": "mock-model", "turns": [...]}`. A turn is:
//!
//! ```json
//! {
//!   "items": [
//!     {"type": "reasoning", "text": "thinking about it"},
//!     {"type": "shell_call", "call_id": "call-1", "command": ["echo", "hi"],
//!      "workdir": "/tmp", "timeout_ms": 10000},
//!     {"type": "function_call", "call_id": "call-2", "name": "update_plan",
//!      "arguments": {"plan": []}},
//!     {"type": "apply_patch_call", "call_id": "call-3",
//!      "patch": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"},
//!     {"type": "custom_tool_call", "call_id": "call-4", "name": "tool", "input": "text"},
//!     {"type": "message", "text": "All done."}
//!   ],
//!   "event_delay_ms": 10,
//!   "usage": {"input_tokens": 10, "cached_tokens": 0, "output_tokens": 5, "reasoning_tokens": 0},
//!   "fault": {"type": "stall", "after_events": 2, "duration_ms": 500}
//! }
//! ```
//!
//! Every turn field is optional. `shell_call` is a `function_call` of the `shell` tool with
//! arguments `{"command": [...], "workdir"?, "timeout_ms"?}`; `apply_patch_call` is a freeform
//! `custom_tool_call` named `apply_patch`; `function_call` arguments may be JSON text or any
//! JSON value; `assistant_message` is accepted for `message`. Without `usage`, counts are
//! estimated at four bytes per token. Faults (events count SSE frames sent):
//!
//! - `{"type": "http_status", "status": 429, "body"?: "...", "retry_after"?: "2"}`
//! - `{"type": "disconnect", "after_events": 3}`: drop the connection mid-body.
//! - `{"type": "stall", "after_events": 2, "duration_ms": 5000}`: go quiet, then carry on.
//! - `{"type": "malformed_data", "after_events": 1}`: one frame whose data is not JSON.
//! - `{"type": "end_without_completed"}`: no `response.completed` / `[DONE]`.
//! - `{"type": "response_failed", "code": "server_error", "message": "..."}`.
//!
//! # Process harnesses
//!
//! [`ProcessBuilder`] spawns a binary (see [`cargo_bin`]) with a temporary home and its own
//! environment; [`JsonLinesProcess`] writes JSON-RPC messages and reads until a response, a
//! notification or a server request, each under a timeout, keeping stderr for failure
//! messages and killing the child on drop. [`write_config`] writes a Codex-style
//! `config.toml` pointing at the mock. Typed wrappers for Keel's servers build on these.

mod error;
pub mod fuzz;
mod haproxy;
mod harness;
mod mock;
mod oauth_mcp;
mod otlp;
pub mod plot;
mod postgres;
mod secret_service;
mod tls_front;

pub use error::{Error, Result};
pub use haproxy::{Haproxy, haproxy_binary};
pub use harness::{
    AppServerProcess, DEFAULT_TIMEOUT, JsonLinesProcess, MCP_PROTOCOL_VERSION, MarkedSleeper,
    McpProcess, ProcessBuilder, cargo_bin, config_toml, processes_whose_cmdline_contains,
    write_config,
};
pub use mock::{
    CapturedRequest, DEFAULT_MODEL, Endpoint, Fault, MockModelBuilder, MockModelServer, OutputItem,
    Responder, Script, Turn, Usage, Violation, agent_job_responder, apply_patch_call,
    assistant_message, compaction, custom_tool_call, exec_command_call, function_call,
    job_worker_ids, reasoning, shell_call, write_stdin_call,
};
pub use oauth_mcp::{OAuthEvent, OAuthMcpServer};
pub use otlp::{OtlpReceiver, OtlpTransport, ReceivedLog, ReceivedMetric, ReceivedSpan};
pub use postgres::{PostgresCluster, postgres_bin_dir};
pub use secret_service::SecretServiceSession;
pub use tls_front::tls_front;
