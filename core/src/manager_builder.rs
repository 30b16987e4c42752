//! How an embedder sets up a [`ConversationManager`] with more than the defaults: its own
//! tools, hooks and model backend, API keys from code rather than the environment, and where
//! conversations are recorded.

use std::sync::Arc;

use keel_protocol::app_server::SessionSource;

use crate::client::{ApiKeyFn, ModelProvider};
use crate::conversation_manager::ConversationManager;
use crate::hooks::EmbeddedHook;
use crate::rollout::RolloutStore;
use crate::tools::{
    DynTool, ObservedTool, ToolRegistrationError, is_builtin_name, valid_tool_name,
};
use crate::turn_setup::{EmbedderModel, EnvLookup};

impl ConversationManager {
    /// Starts a manager with tools, credentials or storage of the embedder's.
    pub fn builder() -> ConversationManagerBuilder {
        ConversationManagerBuilder::default()
    }
}

/// Builds a [`ConversationManager`]; start from [`ConversationManager::builder`].
#[derive(Default)]
pub struct ConversationManagerBuilder {
    env: Option<EnvLookup>,
    tools: Vec<Arc<dyn DynTool>>,
    model: EmbedderModel,
    hooks: Vec<EmbeddedHook>,
    store: Option<Arc<dyn RolloutStore>>,
    session_source: Option<SessionSource>,
    client_backends: crate::ClientBackends,
}

impl ConversationManagerBuilder {
    /// Reads API keys and provider headers through `env` instead of the process
    /// environment.
    pub fn env(mut self, env: EnvLookup) -> Self {
        self.env = Some(env);
        self
    }

    /// Samples every conversation through `provider` instead of Keel's HTTP backends; the
    /// configuration still names the model and reasoning options it is given.
    pub fn provider(mut self, provider: impl ModelProvider + 'static) -> Self {
        self.model.provider = Some(Arc::new(provider));
        self
    }

    /// Sends `key` as the API key of every model request, instead of the one the
    /// configuration's provider names in the environment.
    pub fn api_key(self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.api_key_fn(Arc::new(move || Some(key.clone())))
    }

    /// Asks `key` for the API key before every model request (a rotating key, a secret
    /// store); when it answers `None`, the configuration's key is used.
    pub fn api_key_fn(mut self, key: ApiKeyFn) -> Self {
        self.model.api_key = Some(key);
        self
    }

    /// Offers `tool` to the model in every conversation of the manager (sub-agents'
    /// included), after Keel's own tools; its calls take the same path as theirs.
    pub fn tool(self, tool: impl DynTool + 'static) -> Self {
        self.shared_tool(Arc::new(tool))
    }

    /// [`Self::tool`] for a tool already shared.
    pub fn shared_tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Runs `hook` in every conversation of the manager (sub-agents' included), after the
    /// hooks the user configured; no trust record is needed for it.
    pub fn hook(mut self, hook: EmbeddedHook) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Records every conversation of the manager (sub-agents' included) in `store` instead of
    /// rollout files under each configuration's `keel_home`;
    /// [`ConversationManager::resume_conversation_by_id`] reads them back from it.
    pub fn rollout_store(mut self, store: Arc<dyn RolloutStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Records `source` as where the conversations the embedder starts come from (default
    /// `unknown`), so listings can tell a person's threads from a batch run's; sub-agents
    /// record the thread that spawned them.
    pub fn session_source(mut self, source: SessionSource) -> Self {
        self.session_source = Some(source);
        self
    }

    /// Reads and writes patched files, and runs one-shot commands, through the program that
    /// drives each conversation (an editor) where it offers them ([`crate::ClientBackends`]).
    pub fn client_backends(mut self, backends: crate::ClientBackends) -> Self {
        self.client_backends = backends;
        self
    }

    /// The manager; fails when a tool's name is not one the model APIs accept, is taken by
    /// one of Keel's own tools, is given twice, or differs from the name in its definition.
    pub fn build(self) -> Result<ConversationManager, ToolRegistrationError> {
        let mut seen = std::collections::HashSet::new();
        for tool in &self.tools {
            let name = tool.name();
            if !valid_tool_name(name) {
                return Err(ToolRegistrationError::InvalidName(name.to_string()));
            }
            if is_builtin_name(name) || !seen.insert(name.to_string()) {
                return Err(ToolRegistrationError::Duplicate(name.to_string()));
            }
            if let Some(offered) = tool.spec().get("name").and_then(|n| n.as_str())
                && offered != name
            {
                return Err(ToolRegistrationError::SpecNameMismatch {
                    name: name.to_string(),
                    offered: offered.to_string(),
                });
            }
        }
        let env = self
            .env
            .unwrap_or_else(|| Arc::new(|name: &str| std::env::var(name).ok()));
        let tools: Vec<Arc<dyn DynTool>> = self.tools.into_iter().map(ObservedTool::wrap).collect();
        Ok(ConversationManager::from_parts(
            env,
            Arc::from(tools),
            self.model,
            Arc::from(self.hooks),
            self.store,
            self.session_source.unwrap_or(SessionSource::Unknown),
            self.client_backends,
        ))
    }
}
