//! One live MCP server: started over stdio or reached over Streamable HTTP with rmcp's client,
//! initialised, its tools listed; then tool calls with a timeout, cancellation and progress.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use keel_exec_server::OwnedProcessGroup;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
    ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::McpError;
use super::scope_watch::{RequiredScope, ScopeWatch};
use super::server_asks::{ServerAsk, ServerAskRouter};
use crate::config::{McpServerConfig, McpServerTransport};

/// A started server; dropping the last handle closes the session and kills its process group.
pub(crate) struct McpConnection {
    name: String,
    config: McpServerConfig,
    service: RunningService<RoleClient, ServerAskRouter>,
    router: ServerAskRouter,
    tools: Vec<Tool>,
    /// The scope an HTTP server last refused a request for want of.
    required_scope: RequiredScope,
    /// The stdio server's process group, SIGKILLed when the connection goes (and by the
    /// watchdog if Keel dies first).
    _group: Option<OwnedProcessGroup>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// The last line a stdio server wrote to stderr, kept to explain a failure.
type StderrTail = Arc<Mutex<Option<String>>>;

impl McpConnection {
    /// Starts the server and lists its tools, within its `startup_timeout`.
    pub(crate) async fn start(
        name: &str,
        config: &McpServerConfig,
        http: &reqwest::Client,
    ) -> Result<Self, McpError> {
        let stderr_tail: StderrTail = Arc::default();
        let started = tokio::time::timeout(
            config.startup_timeout,
            Self::connect(name, config, http, stderr_tail.clone()),
        )
        .await;
        let last_stderr = || {
            stderr_tail
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        };
        match started {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(McpError::Startup { server, reason, .. })) => Err(McpError::Startup {
                server,
                reason,
                stderr: last_stderr(),
            }),
            Ok(Err(other)) => Err(other),
            Err(_) => Err(McpError::StartupTimeout {
                server: name.to_string(),
                timeout: config.startup_timeout,
                stderr: last_stderr(),
            }),
        }
    }

    async fn connect(
        name: &str,
        config: &McpServerConfig,
        http: &reqwest::Client,
        stderr_tail: StderrTail,
    ) -> Result<Self, McpError> {
        let router = ServerAskRouter::default();
        let required_scope = RequiredScope::default();
        let failed = |reason: String| McpError::Startup {
            server: name.to_string(),
            reason,
            stderr: None,
        };
        let (service, group) = match &config.transport {
            McpServerTransport::Stdio {
                command,
                args,
                env,
                env_vars,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(
                        env_vars.iter().filter_map(|var| {
                            std::env::var_os(var).map(|value| (var.clone(), value))
                        }),
                    )
                    .envs(env)
                    .process_group(0)
                    .kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|err| McpError::Spawn {
                        server: name.to_string(),
                        command: command.clone(),
                        reason: err.to_string(),
                    })?;
                let group = transport
                    .id()
                    .and_then(|pid| i32::try_from(pid).ok())
                    .map(OwnedProcessGroup::register);
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(name.to_string(), stderr, stderr_tail));
                }
                let service = router
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(|err| failed(err.to_string()))?;
                (service, group)
            }
            McpServerTransport::StreamableHttp {
                url,
                bearer_token_env_var,
                http_headers,
                env_http_headers,
            } => {
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = bearer_token_env_var {
                    let token = std::env::var(var)
                        .ok()
                        .filter(|token| !token.is_empty())
                        .ok_or_else(|| McpError::Setup {
                            server: name.to_string(),
                            reason: format!(
                                "the environment variable `{var}` (bearer_token_env_var) is not set"
                            ),
                        })?;
                    transport_config = transport_config.auth_header(token);
                }
                let mut headers = HashMap::new();
                let env_headers = env_http_headers
                    .iter()
                    .filter_map(|(header, var)| Some((header, std::env::var(var).ok()?)));
                for (header, value) in http_headers
                    .iter()
                    .map(|(header, value)| (header, value.clone()))
                    .chain(env_headers)
                {
                    let parsed = (
                        reqwest::header::HeaderName::from_bytes(header.as_bytes()),
                        reqwest::header::HeaderValue::from_str(&value),
                    );
                    match parsed {
                        (Ok(header), Ok(value)) => {
                            headers.insert(header, value);
                        }
                        _ => {
                            return Err(McpError::Setup {
                                server: name.to_string(),
                                reason: format!("`{header}` is not a valid HTTP header"),
                            });
                        }
                    }
                }
                transport_config = transport_config.custom_headers(headers);
                let login =
                    super::stored_login(name, config)
                        .await
                        .map_err(|err| McpError::Setup {
                            server: name.to_string(),
                            reason: err.to_string(),
                        })?;
                let served = match login {
                    // A stored login: every request carries its token, refreshed as it
                    // nears expiry.
                    Some(manager) => {
                        let client = ScopeWatch::new(
                            AuthClient::new(http.clone(), manager),
                            required_scope.clone(),
                        );
                        let transport =
                            StreamableHttpClientTransport::with_client(client, transport_config);
                        router.clone().serve(transport).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::with_client(
                            http.clone(),
                            transport_config,
                        );
                        router.clone().serve(transport).await
                    }
                };
                let service = served.map_err(|err| {
                    if err.is_authorization_required() {
                        McpError::NeedsLogin {
                            server: name.to_string(),
                        }
                    } else {
                        failed(err.to_string())
                    }
                })?;
                (service, None)
            }
        };
        let tools = service.peer().list_all_tools().await.map_err(|err| {
            // A server may let `initialize` through and ask for a login at the first call.
            if err.auth_challenge().is_some() {
                McpError::NeedsLogin {
                    server: name.to_string(),
                }
            } else {
                failed(format!("tools/list failed: {err}"))
            }
        })?;
        Ok(Self {
            name: name.to_string(),
            config: config.clone(),
            service,
            router,
            tools,
            required_scope,
            _group: group,
        })
    }

    /// The server's tools, as it listed them at start.
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The server's resources and resource templates (JSON objects as it lists them), asked
    /// now; both empty when it offers none. A failed listing is logged and reads as empty.
    pub(crate) async fn resources(&self) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
        let offers = self
            .service
            .peer()
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        if !offers {
            return (Vec::new(), Vec::new());
        }
        let peer = self.service.peer();
        let (resources, templates) = tokio::join!(
            tokio::time::timeout(self.config.tool_timeout, peer.list_all_resources()),
            tokio::time::timeout(self.config.tool_timeout, peer.list_all_resource_templates()),
        );
        (
            listed_json(&self.name, "resources/list", resources),
            listed_json(&self.name, "resources/templates/list", templates),
        )
    }

    /// Reads one resource (`resources/read`): the server's result as JSON (`{"contents":
    /// [...]}`), or why it could not be read.
    pub(crate) async fn read_resource(&self, uri: &str) -> Result<serde_json::Value, String> {
        let params = rmcp::model::ReadResourceRequestParams::new(uri);
        let read = tokio::time::timeout(
            self.config.tool_timeout,
            self.service.peer().read_resource(params),
        )
        .await
        .map_err(|_| {
            format!(
                "resources/read timed out after {} s",
                self.config.tool_timeout.as_secs()
            )
        })?
        .map_err(|err| format!("resources/read failed: {err}"))?;
        serde_json::to_value(read).map_err(|err| err.to_string())
    }

    /// Whether the session has ended (the server exited or the transport closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Calls `tool`, bounded by the server's `tool_timeout`. What the server asks meanwhile
    /// goes to `on_ask`. On interrupt or timeout the server is sent `notifications/cancelled`.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
        mut on_ask: impl FnMut(ServerAsk),
    ) -> Result<CallToolResult, McpError> {
        let call_failed = |reason: String| McpError::Call {
            server: self.name.clone(),
            tool: tool.to_string(),
            reason,
        };
        let (route, mut asks): (_, mpsc::UnboundedReceiver<ServerAsk>) =
            self.router.register_call();
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = self
            .service
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|err| call_failed(err.to_string()))?;
        route.set_progress_token(handle.progress_token.clone());
        let deadline = tokio::time::sleep(self.config.tool_timeout);
        tokio::pin!(deadline);
        let outcome = loop {
            tokio::select! {
                biased;
                response = &mut handle.rx => break Some(response),
                () = cancel.cancelled() => break None,
                () = &mut deadline => {
                    let _ = handle.cancel(Some("timed out".to_string())).await;
                    return Err(McpError::CallTimeout {
                        server: self.name.clone(),
                        tool: tool.to_string(),
                        timeout: self.config.tool_timeout,
                    });
                }
                Some(ask) = asks.recv() => on_ask(ask),
            }
        };
        drop(route);
        if matches!(outcome, Some(Err(_) | Ok(Err(_))))
            && let Some(scope) = self.required_scope.take()
        {
            super::oauth_login::remember_required_scope(&self.name, &self.config, &scope).await;
            return Err(McpError::NeedsScope {
                server: self.name.clone(),
                scope,
            });
        }
        match outcome {
            None => {
                let _ = handle
                    .cancel(Some("interrupted by the user".to_string()))
                    .await;
                Err(McpError::Cancelled {
                    server: self.name.clone(),
                    tool: tool.to_string(),
                })
            }
            Some(Err(_)) => Err(call_failed("the server went away".to_string())),
            Some(Ok(Err(err))) => Err(call_failed(err.to_string())),
            Some(Ok(Ok(ServerResult::CallToolResult(result)))) => Ok(result),
            Some(Ok(Ok(other))) => Err(call_failed(format!(
                "unexpected answer to tools/call: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ))),
        }
    }
}

/// Logs what a stdio server writes to stderr (at debug; its logs are not Keel's) and keeps
/// the last non-empty line.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, "mcp server stderr: {line}");
        if !line.trim().is_empty() {
            let mut last = tail
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *last = Some(line.chars().take(500).collect());
        }
    }
}

/// A listing as JSON objects; a failure or timeout is logged and reads as empty.
fn listed_json<T: serde::Serialize>(
    server: &str,
    what: &str,
    listed: Result<Result<Vec<T>, rmcp::ServiceError>, tokio::time::error::Elapsed>,
) -> Vec<serde_json::Value> {
    match listed {
        Ok(Ok(items)) => items
            .iter()
            .filter_map(|item| serde_json::to_value(item).ok())
            .collect(),
        Ok(Err(err)) => {
            tracing::warn!(server, "{what} failed: {err}");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!(server, "{what} timed out");
            Vec::new()
        }
    }
}
