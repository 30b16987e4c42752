//! A conversation's MCP servers as a replaceable value: `config/mcpServer/reload` swaps in the
//! servers the configuration now names, and the conversation's next model request starts and
//! offers them. A call already running keeps the server it started on.

use std::sync::{Arc, PoisonError, RwLock};

use crate::mcp::McpServers;

/// The servers a conversation uses now; shared by its engine and its handle.
#[derive(Debug)]
pub(crate) struct McpSlot(RwLock<Arc<McpServers>>);

impl McpSlot {
    pub(crate) fn new(servers: McpServers) -> Arc<Self> {
        Arc::new(Self(RwLock::new(Arc::new(servers))))
    }

    /// The servers in use now.
    pub(crate) fn current(&self) -> Arc<McpServers> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Uses `servers` from the next request on; the old ones stop once nothing holds them.
    pub(crate) fn replace(&self, servers: McpServers) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(servers);
    }
}
