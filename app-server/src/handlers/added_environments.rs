//! The environments clients added to this server at runtime (`environment/add`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use keel_exec_server::BearerToken;
use keel_protocol::app_server::EnvironmentStatusKind;

/// One environment a client added.
pub(super) struct Added {
    pub(super) url: String,
    pub(super) token: Option<BearerToken>,
    pub(super) status: Mutex<(EnvironmentStatusKind, Option<String>)>,
}

/// The environments clients added to this server, by id.
#[derive(Default)]
pub(crate) struct AddedEnvironments {
    pub(super) by_id: Mutex<BTreeMap<String, Arc<Added>>>,
}
