//! What every way of opening a session shares (`session/new`, `load`, `resume`, `fork`): the
//! editor's MCP servers and additional directories as the thread's configuration, and, once
//! the editor has the session, the commands it offers and the notices set aside for it.

use std::path::PathBuf;

use keel_protocol::acp::{Notice, SessionUpdate};
use keel_protocol::{INVALID_PARAMS, JsonRpcErrorObject};
use serde_json::{Map, Value};

use crate::agent::Agent;

/// The thread configuration for a session: its MCP servers and, for additional directories,
/// the writable roots (the configured ones and these); with a notice for each server left out.
pub(crate) struct SessionSetup {
    pub config: Map<String, Value>,
    pub notices: Vec<String>,
}

impl Agent {
    /// The configuration a session asks for, or why it cannot have it.
    pub(crate) fn session_setup(
        &self,
        mcp_servers: &[Value],
        additional_directories: &[PathBuf],
    ) -> Result<SessionSetup, JsonRpcErrorObject> {
        if let Some(relative) = additional_directories.iter().find(|dir| !dir.is_absolute()) {
            return Err(JsonRpcErrorObject::new(
                INVALID_PARAMS,
                format!(
                    "additional directory `{}` is not an absolute path",
                    relative.display()
                ),
            ));
        }
        let (mut config, notices) = crate::mcp_servers::config_of(mcp_servers);
        if !additional_directories.is_empty() {
            let mut roots = self.configured_writable_roots();
            for dir in additional_directories {
                if !roots.contains(dir) {
                    roots.push(dir.clone());
                }
            }
            let roots = roots
                .iter()
                .map(|root| Value::String(root.display().to_string()))
                .collect();
            config.insert(
                "sandbox_workspace_write.writable_roots".to_string(),
                Value::Array(roots),
            );
        }
        Ok(SessionSetup { config, notices })
    }

    /// Tells the editor what a session it now has offers: its commands, then the notices set
    /// aside while it was opened.
    pub(crate) async fn after_open(&self, session_id: &str) {
        self.announce_commands(session_id).await;
        let notices = self
            .sessions
            .with(session_id, |session| std::mem::take(&mut session.notices))
            .unwrap_or_default();
        for notice in notices {
            tracing::warn!(session = %session_id, "{notice}");
            self.send_notice(
                session_id,
                Notice {
                    severity: "warning".to_string(),
                    title: notice,
                    description: None,
                },
            )
            .await;
        }
    }

    /// Whether the editor shows notices (`session.notices` at `initialize`).
    pub(crate) fn shows_notices(&self) -> bool {
        self.offered()
            .session
            .is_some_and(|session| session.notices.is_some())
    }

    /// The configuration the engine runs with (`config.toml` and `-c`), as this process
    /// reads it.
    pub(crate) fn load_config(&self) -> Result<keel_core::Config, keel_core::ConfigError> {
        let overrides = keel_core::ConfigOverrides {
            cwd: Some(self.server.cwd.clone()),
            ..keel_core::ConfigOverrides::default()
        };
        keel_core::Config::load(
            &self.server.keel_home,
            self.server.cli_overrides.clone(),
            overrides,
        )
    }

    /// The writable roots the configuration gives (a session's additional directories are
    /// added to them, not put in their place).
    fn configured_writable_roots(&self) -> Vec<PathBuf> {
        match self.load_config() {
            Ok(config) => match config.sandbox_policy {
                keel_protocol::SandboxPolicy::WorkspaceWrite { writable_roots, .. } => {
                    writable_roots
                }
                _ => Vec::new(),
            },
            Err(err) => {
                tracing::warn!("reading the configured writable roots: {err}");
                Vec::new()
            }
        }
    }

    /// Sends a notice, when the editor shows them.
    pub(crate) async fn send_notice(&self, session_id: &str, notice: Notice) {
        if self.shows_notices() {
            self.send_update(session_id, SessionUpdate::Notice(notice))
                .await;
        }
    }
}
