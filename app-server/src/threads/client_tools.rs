//! The client's own tools (`dynamicTools`): a model call becomes an `item/tool/call` request
//! to the connection that registered the tools, and its answer goes to the engine. A client
//! that is gone, disconnects while the call runs, answers with an error or with something
//! unreadable gives the model a failed call, so a turn never waits on a client that cannot
//! answer.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use keel_protocol::app_server::ServerRequest;
use keel_protocol::{CallId, DynamicToolResponse, Op};

use super::{LoadedThread, lock};
use crate::outgoing::{ConnectionId, Outgoing};

impl LoadedThread {
    /// Makes `client`, which defined the thread's own tools, the connection that runs them.
    pub(crate) fn set_tool_client(&self, client: Arc<Outgoing>) {
        self.has_own_tools.store(true, Ordering::Relaxed);
        *lock(&self.tool_client) = Some(client);
    }

    /// Makes `client` the tool client if the thread has own tools and nobody runs them (the
    /// client that defined them went away).
    pub(crate) fn adopt_tool_client(&self, client: &Arc<Outgoing>) {
        if !self.has_own_tools.load(Ordering::Relaxed) {
            return;
        }
        let mut current = lock(&self.tool_client);
        if current.is_none() {
            *current = Some(client.clone());
        }
    }

    /// Asks the tool client to run a call; the engine gets its answer, or a failure.
    pub(super) async fn run_client_tool(self: &Arc<Self>, call_id: CallId, request: ServerRequest) {
        let client = lock(&self.tool_client).clone();
        let sent = match client {
            Some(client) => client
                .request(request)
                .await
                .map(|(id, answer)| (client, id, answer)),
            None => None,
        };
        let Some((client, request_id, answer)) = sent else {
            let failure = DynamicToolResponse::failure(
                "the client that defined this tool is not connected, so it was not run",
            );
            self.answer_client_tool(call_id, failure).await;
            return;
        };
        let connection = client.id();
        lock(&self.tool_calls).insert(call_id.clone(), (client.clone(), request_id.clone()));
        // The client may have gone between being picked and the call being recorded: a
        // disconnect clears the tool client before failing the recorded calls, so if it is no
        // longer this connection, this call must be failed here.
        let still_there = lock(&self.tool_client)
            .as_ref()
            .is_some_and(|current| current.id() == connection);
        if !still_there {
            client.forget(&request_id);
        }
        let thread = Arc::clone(self);
        tokio::spawn(async move {
            let response = match answer.await {
                Ok(Ok(value)) => serde_json::from_value::<DynamicToolResponse>(value)
                    .unwrap_or_else(|err| {
                        DynamicToolResponse::failure(format!(
                            "the client's answer could not be read: {err}"
                        ))
                    }),
                Ok(Err(error)) => DynamicToolResponse::failure(format!(
                    "the client could not run the tool: {}",
                    error.message
                )),
                Err(_) => DynamicToolResponse::failure(
                    "the client that defined this tool disconnected before answering",
                ),
            };
            lock(&thread.tool_calls).remove(&call_id);
            thread.answer_client_tool(call_id, response).await;
        });
    }

    async fn answer_client_tool(&self, call_id: CallId, response: DynamicToolResponse) {
        let answer = Op::DynamicToolResponse {
            id: call_id,
            response,
        };
        if let Err(err) = self.conversation.submit(answer).await {
            tracing::debug!(thread = %self.id, "thread gone before the tool's answer: {err}");
        }
    }

    /// A closed connection answers none of its tool calls: each fails at once, and the
    /// thread has no tool client until one registers the tools again.
    pub(crate) fn forget_tool_client(&self, connection: ConnectionId) {
        let mut client = lock(&self.tool_client);
        if client.as_ref().is_some_and(|c| c.id() == connection) {
            *client = None;
        }
        drop(client);
        for (outgoing, request_id) in lock(&self.tool_calls).values() {
            if outgoing.id() == connection {
                // Dropping the waiter fails the call (see `run_client_tool`).
                outgoing.forget(request_id);
            }
        }
    }
}
