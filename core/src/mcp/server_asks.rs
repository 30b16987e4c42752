//! What a connected MCP server sends Keel unasked — progress for a running call, a question
//! for the user (elicitation) — and where it goes: to the tool call waiting on that server.
//!
//! A server may be shared by several conversations, so each running call registers a route
//! for the time it runs. Progress is matched by its progress token; an elicitation goes to the
//! most recent call on the server, or is declined when none is running (nobody could answer).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Something a server asked while a call ran.
#[derive(Debug)]
pub(crate) enum ServerAsk {
    /// Progress on the call.
    Progress(ProgressNotificationParam),
    /// A question for the user; the answer goes back on `reply`.
    Elicit {
        /// The server's request id, as JSON.
        id: Value,
        /// What it asks.
        params: ElicitRequestParams,
        /// Where the answer goes; dropping it declines.
        reply: oneshot::Sender<ElicitResult>,
    },
}

#[derive(Default)]
struct Routes {
    next_order: u64,
    /// Running calls by registration order, with their progress token once known.
    calls: BTreeMap<u64, (Option<ProgressToken>, mpsc::UnboundedSender<ServerAsk>)>,
}

/// The handler rmcp runs for one server connection.
#[derive(Clone, Default)]
pub(crate) struct ServerAskRouter {
    routes: Arc<Mutex<Routes>>,
}

/// A running call's registration; dropping it stops routing to the call.
pub(crate) struct CallRoute {
    routes: Arc<Mutex<Routes>>,
    order: u64,
}

impl CallRoute {
    /// Routes progress carrying `token` to this call.
    pub(crate) fn set_progress_token(&self, token: ProgressToken) {
        if let Some(call) = lock(&self.routes).calls.get_mut(&self.order) {
            call.0 = Some(token);
        }
    }
}

impl Drop for CallRoute {
    fn drop(&mut self) {
        lock(&self.routes).calls.remove(&self.order);
    }
}

fn lock(routes: &Mutex<Routes>) -> MutexGuard<'_, Routes> {
    routes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ServerAskRouter {
    /// Registers a running call; what the server asks for it arrives on the receiver.
    pub(crate) fn register_call(&self) -> (CallRoute, mpsc::UnboundedReceiver<ServerAsk>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = lock(&self.routes);
        let order = routes.next_order;
        routes.next_order += 1;
        routes.calls.insert(order, (None, tx));
        (
            CallRoute {
                routes: self.routes.clone(),
                order,
            },
            rx,
        )
    }
}

impl ClientHandler for ServerAskRouter {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::default());
        capabilities.elicitation = Some(elicitation);
        // The newest revision with the `initialize` handshake (2025-11-25): rmcp's default is
        // the stateless 2026-07-28, which a handshake cannot name.
        ClientConfig::new(
            capabilities,
            Implementation::new("keel", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let declined = ElicitResult::new(ElicitationAction::Decline);
        let target = lock(&self.routes)
            .calls
            .values()
            .next_back()
            .map(|(_, tx)| tx.clone());
        let Some(target) = target else {
            tracing::info!("an MCP server asked the user a question while no call ran; declined");
            return Ok(declined);
        };
        let (reply, answer) = oneshot::channel();
        let id = serde_json::to_value(&context.id).unwrap_or(Value::Null);
        if target
            .send(ServerAsk::Elicit { id, params, reply })
            .is_err()
        {
            return Ok(declined);
        }
        Ok(answer.await.unwrap_or(declined))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let routes = lock(&self.routes);
        let target = routes
            .calls
            .values()
            .find(|(token, _)| token.as_ref() == Some(&params.progress_token));
        if let Some((_, tx)) = target {
            // A call that just ended has dropped its receiver; its late progress is moot.
            let _ = tx.send(ServerAsk::Progress(params));
        }
    }
}
