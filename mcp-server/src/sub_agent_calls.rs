//! Which `tools/call` each live sub-agent's events go out under.

use std::collections::HashMap;
use std::sync::Mutex;

use keel_protocol::{ConversationId, RequestId};

/// The `tools/call` each live sub-agent's events are delivered under.
#[derive(Default)]
pub(crate) struct SubAgentCalls {
    pub(crate) calls: Mutex<HashMap<ConversationId, RequestId>>,
}

impl SubAgentCalls {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ConversationId, RequestId>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
