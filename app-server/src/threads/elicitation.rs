//! An MCP server's question (elicitation) as an `mcpServer/elicitation/request` server
//! request: sent to every client following the thread; the first answer goes back to the
//! server. An error answer, an unreadable one, or no client at all declines, so the server is
//! never left waiting on a client that cannot ask.

use std::sync::Arc;

use keel_protocol::app_server::{
    McpServerElicitationAction, McpServerElicitationRequestResponse, ServerRequest,
};
use keel_protocol::{ElicitationAction, Op};

use super::LoadedThread;

impl LoadedThread {
    /// Asks every subscriber; the first answer is given to the engine.
    pub(super) async fn ask_elicitation(
        self: &Arc<Self>,
        server_name: String,
        request_id: serde_json::Value,
        request: ServerRequest,
    ) {
        let mut first = self.ask_every_subscriber(&request).await;
        let thread = Arc::clone(self);
        tokio::spawn(async move {
            let declined = (ElicitationAction::Decline, None);
            let (decision, content) = match first.recv().await {
                Some(Ok(value)) => {
                    match serde_json::from_value::<McpServerElicitationRequestResponse>(value) {
                        Ok(answer) => match answer.action {
                            McpServerElicitationAction::Accept => {
                                (ElicitationAction::Accept, answer.content)
                            }
                            McpServerElicitationAction::Decline => declined,
                            McpServerElicitationAction::Cancel => (ElicitationAction::Cancel, None),
                        },
                        Err(err) => {
                            tracing::warn!(
                                "unreadable answer to an MCP elicitation ({err}); declined"
                            );
                            declined
                        }
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!("the client could not answer an MCP elicitation: {error}");
                    declined
                }
                None => declined,
            };
            let answer = Op::ResolveElicitation {
                server_name,
                request_id,
                decision,
                content,
            };
            if let Err(err) = thread.conversation.submit(answer).await {
                tracing::debug!("thread gone before the elicitation answer arrived: {err}");
            }
        });
    }
}
