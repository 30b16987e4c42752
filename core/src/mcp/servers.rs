//! One conversation's MCP servers: started together when the conversation starts, waited for
//! by its first request (no longer than the slowest start), and turned into the tools the
//! model is offered.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use keel_protocol::{
    EventMsg, McpStartupCompleteEvent, McpStartupFailure, McpStartupStatus, McpStartupUpdateEvent,
};
use rmcp::model::Tool;
use serde_json::{Value, json};
use tokio::sync::{OnceCell, mpsc};

use super::connection::McpConnection;
use super::input_schema::function_parameters;
use super::registry::{McpRegistry, ServerEntry};
use super::tool_names::qualify_tools;
use crate::config::McpServerConfig;

/// A tool the model may call: where it lives and what it promises.
#[derive(Debug, Clone)]
pub(crate) struct McpToolEntry {
    /// The server's configured name.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// The server's announcement that the tool only reads (no approval needed).
    pub read_only: bool,
    entry: Arc<ServerEntry>,
}

impl McpToolEntry {
    /// The live connection to the tool's server.
    pub(crate) fn connection(&self) -> Option<&McpConnection> {
        self.entry
            .outcome()
            .and_then(|outcome| outcome.as_ref().ok())
    }
}

/// The tools of every server that started, by the names offered to the model.
#[derive(Debug, Default)]
pub(crate) struct McpToolCatalog {
    /// Function definitions, in name order.
    pub definitions: Vec<Value>,
    /// What each offered name calls.
    pub by_name: HashMap<String, McpToolEntry>,
    /// How start-up went, per server.
    pub startup: McpStartupCompleteEvent,
    /// Servers marked `required` that failed, with why.
    pub required_failures: Vec<McpStartupFailure>,
}

/// The configured, enabled servers of one conversation.
#[derive(Debug)]
pub(crate) struct McpServers {
    servers: Vec<(Arc<ServerEntry>, McpServerConfig)>,
    http: reqwest::Client,
    catalog: OnceCell<Arc<McpToolCatalog>>,
}

impl McpServers {
    /// Takes the conversation's servers from the registry and starts those not running yet,
    /// each on its own task, so start-up overlaps with whatever the conversation does first.
    pub(crate) fn start(
        registry: &McpRegistry,
        configs: &BTreeMap<String, McpServerConfig>,
        http: reqwest::Client,
    ) -> Self {
        let servers: Vec<_> = configs
            .iter()
            .filter(|(_, config)| config.enabled)
            .map(|(name, config)| (registry.entry(name, config), config.clone()))
            .collect();
        for (entry, _) in &servers {
            let entry = entry.clone();
            let http = http.clone();
            tokio::spawn(async move {
                entry.connect(&http).await;
            });
        }
        Self {
            servers,
            http,
            catalog: OnceCell::new(),
        }
    }

    /// No servers are configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The names of the servers being started, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(|(entry, _)| entry.name())
    }

    /// Waits for every server's start and returns the tools to offer, reporting start-up
    /// on `report` (`mcp_startup_update` as each server starts and settles, then
    /// `mcp_startup_complete`) when this call is the one that waits. Computed once; later
    /// calls return the same catalog.
    pub(crate) async fn catalog(
        &self,
        report: mpsc::UnboundedSender<EventMsg>,
    ) -> Arc<McpToolCatalog> {
        self.catalog
            .get_or_init(|| async move {
                for name in self.names() {
                    let _ = report.send(EventMsg::McpStartupUpdate(McpStartupUpdateEvent {
                        server: name.to_string(),
                        status: McpStartupStatus::Starting,
                    }));
                }
                let catalog = self.build_catalog(&report).await;
                let _ = report.send(EventMsg::McpStartupComplete(catalog.startup.clone()));
                catalog
            })
            .await
            .clone()
    }

    /// The started servers (all, or the one named), each with its connection, in
    /// configuration order; waits for their start. A name no server has is an error naming
    /// the configured ones.
    pub(crate) async fn connected(
        &self,
        name: Option<&str>,
    ) -> Result<Vec<(&str, &McpConnection)>, String> {
        if let Some(name) = name
            && !self.names().any(|known| known == name)
        {
            let known: Vec<&str> = self.names().collect();
            return Err(format!(
                "unknown MCP server `{name}`; configured: {}",
                known.join(", ")
            ));
        }
        let mut connected = Vec::new();
        for (entry, _) in &self.servers {
            if name.is_some_and(|name| name != entry.name()) {
                continue;
            }
            match entry.connect(&self.http).await {
                Ok(connection) => connected.push((entry.name(), connection)),
                Err(err) if name.is_some() => {
                    return Err(format!(
                        "MCP server `{}` is not running: {err}",
                        entry.name()
                    ));
                }
                Err(_) => {}
            }
        }
        Ok(connected)
    }

    /// The catalog, if start-up has been waited for already.
    pub(crate) fn catalog_if_ready(&self) -> Option<Arc<McpToolCatalog>> {
        self.catalog.get().cloned()
    }

    async fn build_catalog(&self, report: &mpsc::UnboundedSender<EventMsg>) -> Arc<McpToolCatalog> {
        let mut pending: futures::stream::FuturesUnordered<_> = self
            .servers
            .iter()
            .map(|(entry, config)| async move { (entry, config, entry.connect(&self.http).await) })
            .collect();
        let mut catalog = McpToolCatalog::default();
        let mut offered: Vec<(&Arc<ServerEntry>, &McpServerConfig, &Tool)> = Vec::new();
        while let Some((entry, config, outcome)) = futures::StreamExt::next(&mut pending).await {
            let status = match outcome {
                Ok(connection) => {
                    catalog.startup.ready.push(entry.name().to_string());
                    offered.extend(
                        connection
                            .tools()
                            .iter()
                            .filter(|tool| config.offers_tool(&tool.name))
                            .map(|tool| (entry, config, tool)),
                    );
                    McpStartupStatus::Ready
                }
                Err(err) => {
                    let failure = McpStartupFailure {
                        server: entry.name().to_string(),
                        error: err.to_string(),
                    };
                    tracing::info!(server = entry.name(), "{err}");
                    if config.required {
                        catalog.required_failures.push(failure.clone());
                    }
                    catalog.startup.failed.push(failure);
                    McpStartupStatus::Failed {
                        error: err.to_string(),
                    }
                }
            };
            let _ = report.send(EventMsg::McpStartupUpdate(McpStartupUpdateEvent {
                server: entry.name().to_string(),
                status,
            }));
        }
        catalog.startup.ready.sort();
        catalog
            .startup
            .failed
            .sort_by(|a, b| a.server.cmp(&b.server));
        let names = qualify_tools(
            offered
                .iter()
                .map(|(entry, _, tool)| (entry.name(), tool.name.as_ref())),
        );
        let by_pair: HashMap<(&str, &str), &(&Arc<ServerEntry>, &McpServerConfig, &Tool)> = offered
            .iter()
            .map(|offer| ((offer.0.name(), offer.2.name.as_ref()), offer))
            .collect();
        for named in names {
            let Some((entry, config, tool)) =
                by_pair.get(&(named.server.as_str(), named.tool.as_str()))
            else {
                continue;
            };
            // As Codex does, the model is told which plugin a tool comes with.
            let mut description = tool.description.as_deref().unwrap_or_default().to_string();
            if let Some(plugin) = &config.plugin_id {
                let name = plugin
                    .split_once('@')
                    .map_or(plugin.as_str(), |(name, _)| name);
                description.push_str(&format!(" This tool is part of plugin `{name}`."));
            }
            catalog.definitions.push(json!({
                "type": "function",
                "name": named.name,
                "description": description,
                "strict": false,
                "parameters": function_parameters(&tool.input_schema),
            }));
            catalog.by_name.insert(
                named.name,
                McpToolEntry {
                    server: named.server,
                    tool: named.tool,
                    read_only: tool
                        .annotations
                        .as_ref()
                        .and_then(|annotations| annotations.read_only_hint)
                        .unwrap_or(false),
                    entry: Arc::clone(entry),
                },
            );
        }
        Arc::new(catalog)
    }
}
