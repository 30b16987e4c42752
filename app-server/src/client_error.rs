//! Why a request of a client of the app-server failed, in this process or over a websocket.

use keel_protocol::JsonRpcErrorObject;

/// Why a client's request failed (the name is the in-process client's, which had it first).
#[derive(Debug, thiserror::Error)]
pub enum InProcessError {
    /// The server answered with an error (shown as its message: the code is for programs).
    #[error("{}", .0.message)]
    Rpc(JsonRpcErrorObject),
    /// The server has stopped.
    #[error("the in-process app-server has stopped")]
    Closed,
    /// A value could not be converted.
    #[error("cannot convert a message: {0}")]
    Serde(#[from] serde_json::Error),
}
