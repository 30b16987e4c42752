//! What a frontend needs of an app-server, wherever it runs: `keel exec` drives a turn the
//! same way on a server in its own process and on one it reached over a websocket.

use std::future::Future;
use std::time::Duration;

use keel_protocol::{RequestId, RpcRequest};
use serde_json::Value;

use crate::in_process::{InProcessAppServerClient, InProcessError, InProcessEvent};

/// A connected, initialized app-server client.
pub trait AppServerClient: Send + Sync {
    /// Sends a typed request and waits for its typed result.
    fn request<M: RpcRequest>(
        &self,
        params: M::Params,
    ) -> impl Future<Output = Result<M::Response, InProcessError>> + Send
    where
        M::Params: Send;

    /// The next notification or server request; `None` once the server is gone.
    fn next_event(&self) -> impl Future<Output = Option<InProcessEvent>> + Send;

    /// Answers a server request.
    fn respond(
        &self,
        id: RequestId,
        result: Value,
    ) -> impl Future<Output = Result<(), InProcessError>> + Send;

    /// Lets the server's end-of-session work finish, up to `limit`, before the program exits
    /// (a server in another process keeps its threads: nothing to wait for).
    fn shutdown(&self, limit: Duration) -> impl Future<Output = ()> + Send;
}

impl AppServerClient for InProcessAppServerClient {
    fn request<M: RpcRequest>(
        &self,
        params: M::Params,
    ) -> impl Future<Output = Result<M::Response, InProcessError>> + Send
    where
        M::Params: Send,
    {
        InProcessAppServerClient::request::<M>(self, params)
    }

    fn next_event(&self) -> impl Future<Output = Option<InProcessEvent>> + Send {
        InProcessAppServerClient::next_event(self)
    }

    fn respond(
        &self,
        id: RequestId,
        result: Value,
    ) -> impl Future<Output = Result<(), InProcessError>> + Send {
        InProcessAppServerClient::respond(self, id, result)
    }

    fn shutdown(&self, limit: Duration) -> impl Future<Output = ()> + Send {
        InProcessAppServerClient::shutdown(self, limit)
    }
}
