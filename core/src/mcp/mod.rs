//! Keel as an MCP client: the external servers configured under `[mcp_servers]`, their tools
//! offered to the model, and the calls the model makes on them.
//!
//! - [`registry`] shares a started server between the conversations of the process whose
//!   configuration of it is identical, and stops it when none uses it any more;
//! - [`servers`] starts a conversation's servers concurrently and builds the tool catalog its
//!   first request waits for;
//! - [`connection`] is one live server on rmcp's client (stdio child process in its own
//!   process group, or Streamable HTTP), with timeouts and cancellation;
//! - [`server_asks`] routes what a server sends unasked (progress, elicitation) to the call
//!   that is running on it;
//! - [`tool_names`] and [`input_schema`] make tool names and schemas acceptable to the model
//!   APIs; [`call_output`] turns results into what the model and the client see.

mod call_output;
mod connection;
mod error;
mod input_schema;
mod legacy_metadata;
mod oauth_keyring;
mod oauth_login;
mod oauth_store;
mod registry;
mod scope_watch;
mod server_asks;
mod servers;
mod status;
mod tool_names;

pub(crate) use call_output::{client_result, model_output};
pub use error::McpError;
pub use oauth_login::{
    McpLogin, McpLoginError, choose_client_registration, mcp_login_client_credentials, mcp_logout,
};
pub(crate) use oauth_login::{has_stored_login, stored_login};
pub(crate) use registry::McpRegistry;
pub(crate) use server_asks::ServerAsk;
pub(crate) use servers::{McpServers, McpToolCatalog, McpToolEntry};
pub use status::McpServerState;
pub(crate) use status::{call_tool, read_resource, server_states};
