//! keel-protocol: the wire types every Keel crate, server and client shares.
//!
//! Pure data: serde and schemars derives, no async runtime. It holds
//! - identifiers ([`ConversationId`], [`TurnId`], [`CallId`], ...), all plain strings on the wire;
//! - the engine's queue protocol: a client sends a [`Submission`] carrying an [`Op`] and reads
//!   [`Event`]s whose [`EventMsg`] is tagged `{"type": "snake_case_name", ...}`;
//! - the JSON-RPC 2.0 envelope ([`JsonRpcMessage`]), with or without the `jsonrpc` member, and
//!   what every server answers to a line that is not one ([`decode_frame`], [`FrameError`]);
//! - typed method tables ([`request_table!`], [`notification_table!`]) that bind each method
//!   name to its params and result type in one place;
//! - the exec-server protocol ([`exec_server`]);
//! - the app-server protocol ([`app_server`]);
//! - the MCP subset and Codex extensions of Keel's MCP server ([`mcp`]);
//! - JSON Schema export of all of the above ([`schema`]).
//!
//! ```
//! use keel_protocol::{Event, EventMsg};
//!
//! let line = r#"{"id":"1","msg":{"type":"agent_message_delta","delta":"Hi"}}"#;
//! let event: Event = serde_json::from_str(line)?;
//! assert!(matches!(event.msg, EventMsg::AgentMessageDelta(_)));
//! # Ok::<(), serde_json::Error>(())
//! ```

pub mod acp;
pub mod app_server;
mod bytes;
mod engine;
pub mod exec_events;
pub mod exec_server;
mod framing;
mod ids;
mod jsonrpc;
pub mod mcp;
mod rpc;
pub mod schema;

pub use bytes::Base64Bytes;
pub use engine::*;
pub use framing::{DEFAULT_MAX_LINE_BYTES, FrameError, decode_frame, message_from_value};
pub use ids::{
    CallId, ConversationId, ConversationIdParseError, ExecSessionId, SubmissionId, TurnId,
};
pub use jsonrpc::{
    ECHO_LIMIT, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JSONRPC_VERSION, JsonRpcError,
    JsonRpcErrorObject, JsonRpcFraming, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest,
    JsonRpcResponse, METHOD_NOT_FOUND, PARSE_ERROR, RequestId, SERVER_OVERLOADED, W3cTraceContext,
    echo_bounded,
};
pub use rpc::{Handles, MethodTable, RequestHandler, RpcNotification, RpcRequest};
