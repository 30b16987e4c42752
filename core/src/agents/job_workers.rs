//! Job workers of a process that works an agent job on its own (`keel agent-job work`): each
//! is a top-level conversation of the manager, with no parent turn to watch it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use keel_protocol::{CollabAgentStatus, InputItem, Op};

use super::{ConversationHost, Lineage, drain_unobserved};
use crate::agent_jobs::{JobWorker, WorkerHost};
use crate::config::Config;
use crate::conversation::Conversation;

/// How long a worker shutdown may take before it is given up on.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// Worker agents started as conversations of a manager.
pub(crate) struct ManagerWorkers {
    host: Arc<dyn ConversationHost>,
}

impl ManagerWorkers {
    pub(crate) fn new(host: Arc<dyn ConversationHost>) -> Self {
        Self { host }
    }
}

impl WorkerHost for ManagerWorkers {
    fn spawn_worker(
        &self,
        config: Config,
        input: Vec<InputItem>,
        worker: Arc<JobWorker>,
        traceparent: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<Conversation>, String>> {
        Box::pin(async move {
            let mut lineage = Lineage::root(&config);
            lineage.worker = Some(worker);
            let new = self
                .host
                .clone()
                .spawn_child(config, Vec::new(), true, lineage)
                .await
                .map_err(|err| err.to_string())?;
            let conversation = new.conversation;
            // Nobody watches these workers: read their events (declining any approval
            // request) so they never stall on a full queue.
            tokio::spawn(drain_unobserved(conversation.clone()));
            conversation.mark_running();
            let submitted = async {
                if let Some(traceparent) = traceparent {
                    conversation
                        .submit(Op::NextTurnTraceContext { traceparent })
                        .await?;
                }
                conversation.submit(Op::UserInput { items: input }).await
            };
            if let Err(err) = submitted.await {
                self.host.remove(conversation.id());
                return Err(err.to_string());
            }
            Ok(conversation)
        })
    }

    fn shut_down<'a>(&'a self, conversation: &'a Arc<Conversation>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut status = conversation.watch_agent_status();
            if conversation.submit(Op::Shutdown).await.is_ok() {
                let stopped = status.wait_for(|s| s.status == CollabAgentStatus::Shutdown);
                if tokio::time::timeout(SHUTDOWN_WAIT, stopped).await.is_err() {
                    tracing::warn!(agent = %conversation.id(), "a job worker did not confirm its shutdown");
                }
            }
            self.host.remove(conversation.id());
        })
    }
}
