//! Keel built without the `mcp` feature: no MCP client. Configured `[mcp_servers]` are
//! ignored with a warning, and the model is offered no MCP tools. The types below keep the
//! engine's signatures the same as with the client.

use std::collections::BTreeMap;
use std::sync::Arc;

use keel_protocol::{EventMsg, McpStartupFailure};
use tokio::sync::mpsc;

use crate::config::McpServerConfig;

/// Shared servers; there are none in this build.
#[derive(Debug, Default)]
pub(crate) struct McpRegistry {
    _none: (),
}

/// The MCP tools to offer: none in this build.
#[derive(Debug, Default)]
pub(crate) struct McpToolCatalog {
    /// Servers marked `required` that failed (always empty).
    pub required_failures: Vec<McpStartupFailure>,
}

/// A conversation's servers: none in this build.
#[derive(Debug)]
pub(crate) struct McpServers;

impl McpServers {
    /// Warns when servers are configured, since this build cannot start them.
    pub(crate) fn start(
        _registry: &McpRegistry,
        configs: &BTreeMap<String, McpServerConfig>,
        _http: reqwest::Client,
    ) -> Self {
        if configs.values().any(|config| config.enabled) {
            tracing::warn!(
                "[mcp_servers] is ignored: this program was built without keel-core's `mcp` \
                 feature"
            );
        }
        Self
    }

    /// Always `true`: no server is started.
    pub(crate) fn is_empty(&self) -> bool {
        true
    }

    /// The (empty) catalog.
    pub(crate) async fn catalog(
        &self,
        _report: mpsc::UnboundedSender<EventMsg>,
    ) -> Arc<McpToolCatalog> {
        Arc::new(McpToolCatalog::default())
    }

    /// The (empty) catalog.
    pub(crate) fn catalog_if_ready(&self) -> Option<Arc<McpToolCatalog>> {
        Some(Arc::new(McpToolCatalog::default()))
    }
}
