//! An approval request waiting on the clients that follow a thread.

use std::sync::Arc;

use keel_protocol::RequestId;
use keel_protocol::app_server::ServerRequest;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::outgoing::{ClientAnswer, Outgoing};

/// An approval waiting on the clients.
pub(super) struct PendingApproval {
    /// What was asked, for clients that resume the thread while it waits.
    pub(super) request: ServerRequest,
    /// Where each copy of the request went.
    pub(super) requests: Vec<(Arc<Outgoing>, RequestId)>,
    /// Where the answers meet; the first one settles the approval.
    pub(super) answers: mpsc::UnboundedSender<ClientAnswer>,
    /// Waits for the first answer.
    pub(super) task: JoinHandle<()>,
}
