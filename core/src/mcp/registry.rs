//! The process's MCP servers, shared by the conversations whose configuration of a server is
//! identical, and stopped when the last of them lets go.
//!
//! Each entry is a start that runs once: every conversation that needs the server waits on
//! the same start, so a server is never launched twice for the same configuration. The
//! registry itself holds only weak references. A start that failed, or a server that has
//! since exited, is not reused: the next conversation starts it afresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::OnceCell;

use super::connection::McpConnection;
use super::error::McpError;
use crate::config::McpServerConfig;

/// A server's start, run once, and its outcome.
#[derive(Debug)]
pub(crate) struct ServerEntry {
    name: String,
    config: McpServerConfig,
    outcome: OnceCell<Result<McpConnection, McpError>>,
}

impl ServerEntry {
    /// The server's configured name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Starts the server unless it is started (or starting) already, and returns the outcome.
    pub(crate) async fn connect(&self, http: &reqwest::Client) -> &Result<McpConnection, McpError> {
        self.outcome
            .get_or_init(|| McpConnection::start(&self.name, &self.config, http))
            .await
    }

    /// The outcome if the start has finished.
    pub(crate) fn outcome(&self) -> Option<&Result<McpConnection, McpError>> {
        self.outcome.get()
    }

    fn reusable(&self) -> bool {
        match self.outcome.get() {
            None => true,
            Some(Ok(connection)) => !connection.is_closed(),
            Some(Err(_)) => false,
        }
    }
}

/// Live servers by name and configuration.
#[derive(Debug, Default)]
pub(crate) struct McpRegistry {
    entries: Mutex<HashMap<String, Weak<ServerEntry>>>,
}

impl McpRegistry {
    /// The shared entry for this server, creating it (not yet started) when none is usable.
    pub(crate) fn entry(&self, name: &str, config: &McpServerConfig) -> Arc<ServerEntry> {
        let key = format!(
            "{name}\u{0}{}",
            serde_json::to_string(config).unwrap_or_default()
        );
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        entries.retain(|_, entry| entry.strong_count() > 0);
        if let Some(entry) = entries.get(&key).and_then(Weak::upgrade)
            && entry.reusable()
        {
            return entry;
        }
        let entry = Arc::new(ServerEntry {
            name: name.to_string(),
            config: config.clone(),
            outcome: OnceCell::new(),
        });
        entries.insert(key, Arc::downgrade(&entry));
        entry
    }
}
