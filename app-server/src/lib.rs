//! keel-app-server: the rich-client interface to the engine. An editor or UI drives many
//! threads (conversations) over one connection and renders their items as they stream.
//! Wire-compatible with the Codex app-server v2 protocol for every method Keel implements.
//!
//! Data flow:
//! - a transport (stdio JSON Lines, or websocket text frames) parses each message and hands
//!   it to the connection, which enforces the `initialize` handshake and
//!   queues requests (bounded; a full queue answers -32001 "Server overloaded; retry later.");
//! - the processor runs each request on its own task, bounded by `--max-in-flight-requests`;
//!   handlers work on the shared state (loaded threads, the engine's `ConversationManager`);
//! - each loaded thread pumps its conversation's engine events through a translator into
//!   `turn/*`, `item/*` and `thread/*` notifications for every subscribed connection, and
//!   turns approval events into `item/*/requestApproval` server requests whose answers go
//!   back to the engine;
//! - the writer sends responses and notifications; when a client stops reading, its bounded
//!   queue fills and the threads feeding it wait, so memory stays bounded.
//!
//! [`InProcessAppServerClient`] offers the same API without a transport.

mod ceiling;
mod client_api;
mod client_error;
mod client_trace;
mod connection;
mod delivery;
mod error;
mod handlers;
mod in_process;
mod organizer;
mod outgoing;
mod pending_requests;
mod read_state;
mod remote_client;
mod resume_locks;
mod run;
mod schema;
mod state;
mod thread_backend;
mod thread_changes;
mod threads;
mod transport;

pub use client_api::AppServerClient;
pub use connection::ConnectionLimits;
pub use error::{AppServerError, Result};
pub use in_process::{
    EventDelivery, IN_PROCESS_EVENT_CAPACITY, InProcessAppServerClient, InProcessError,
    InProcessEvent,
};
pub use remote_client::{RemoteAppServerClient, RemoteConnectError};
pub use run::{AppServerArgs, AppServerListen, DEFAULT_SOCKET, run_main};
pub use schema::{app_server_schemas, write_json_schema};
pub use state::ServerConfig;
pub use thread_backend::ThreadBackend;
