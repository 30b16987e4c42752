//! A live connection to the process service: the client and the router that sorts its events
//! by process.

use std::sync::Arc;

use keel_exec_server::ExecServerClient;

use super::router::ProcessStates;

pub(super) struct Connected {
    pub(super) client: ExecServerClient,
    pub(super) states: Arc<ProcessStates>,
    pub(super) _router: tokio_util::task::AbortOnDropHandle<()>,
}
