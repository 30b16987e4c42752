//! A server request put to every client following a thread, where the first answer counts
//! (the model's questions, an MCP server's questions).

use std::sync::Arc;

use keel_protocol::app_server::ServerRequest;
use tokio::sync::mpsc;

use super::{LoadedThread, lock};
use crate::outgoing::{ClientAnswer, Outgoing};

impl LoadedThread {
    /// Sends `request` to every subscriber; the answers arrive on the receiver in the order
    /// they come, and it ends (`None`) when no client can answer any more.
    pub(super) async fn ask_every_subscriber(
        &self,
        request: &ServerRequest,
    ) -> mpsc::UnboundedReceiver<ClientAnswer> {
        let subscribers: Vec<Arc<Outgoing>> = lock(&self.subscribers).values().cloned().collect();
        let (answers, received) = mpsc::unbounded_channel();
        for subscriber in subscribers {
            if let Some((_, answer)) = subscriber.request(request.clone()).await {
                let answers = answers.clone();
                tokio::spawn(async move {
                    if let Ok(answer) = answer.await {
                        let _ = answers.send(answer);
                    }
                });
            }
        }
        received
    }
}
