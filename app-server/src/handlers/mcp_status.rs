//! `mcpServerStatus/list`: each configured MCP server with its start-up state and tools; and
//! `config/mcpServer/reload`, which gives loaded threads the servers the configuration names now.

use keel_protocol::app_server::{
    ListMcpServerStatusParams, ListMcpServerStatusResponse, McpAuthStatus,
    McpServerConnectionStatus, McpServerStatus, ThreadOverrides,
};

use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// Lists the servers in name order, a page at a time (`cursor` is the last name returned).
/// Servers not running yet are started, each bounded by its `startup_timeout_sec`.
pub(crate) async fn mcp_server_status_list(
    state: &AppState,
    params: ListMcpServerStatusParams,
) -> Result<ListMcpServerStatusResponse> {
    if params.limit == Some(0) {
        return Err(AppServerError::InvalidParams {
            method: "mcpServerStatus/list".to_string(),
            message: "`limit` must be at least 1".to_string(),
        });
    }
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let mut servers = config.mcp_servers.clone();
    if let Some(cursor) = &params.cursor {
        servers.retain(|name, _| name > cursor);
    }
    let limit = params.limit.map_or(usize::MAX, |limit| limit as usize);
    let more = servers.len() > limit;
    let page: std::collections::BTreeMap<_, _> = servers.into_iter().take(limit).collect();
    let mut page_config = config;
    page_config.mcp_servers = page;
    let states = state.manager.mcp_server_states(&page_config).await;
    let next_cursor = more
        .then(|| states.last().map(|state| state.name.clone()))
        .flatten();
    let plugin_ids: std::collections::BTreeMap<String, Option<String>> = page_config
        .mcp_servers
        .iter()
        .map(|(name, server)| (name.clone(), server.plugin_id.clone()))
        .collect();
    let data = states
        .into_iter()
        .map(|server| {
            let plugin_id = plugin_ids.get(&server.name).cloned().flatten();
            let (runtime_status, tools_error, tools) = match server.tools {
                Ok(tools) if server.enabled => (McpServerConnectionStatus::Connected, None, tools),
                Ok(_) => (McpServerConnectionStatus::Disabled, None, Vec::new()),
                Err(error) => (McpServerConnectionStatus::Failed, Some(error), Vec::new()),
            };
            McpServerStatus {
                name: server.name,
                auth_status: if server.bearer_token {
                    McpAuthStatus::BearerToken
                } else if server.logged_in {
                    McpAuthStatus::OAuth
                } else if server.needs_login {
                    McpAuthStatus::NotLoggedIn
                } else {
                    McpAuthStatus::Unsupported
                },
                tools: tools
                    .into_iter()
                    .filter_map(|tool| {
                        let name = tool.get("name")?.as_str()?.to_string();
                        Some((name, tool))
                    })
                    .collect(),
                resources: server.resources,
                resource_templates: server.resource_templates,
                runtime_status: Some(runtime_status),
                tools_error,
                environment_id: Some(keel_core::config::LOCAL_ENVIRONMENT.to_string()),
                plugin_id,
            }
        })
        .collect();
    Ok(ListMcpServerStatusResponse { data, next_cursor })
}

/// `mcpServer/resource/read`: one resource of a configured server, started if it is not
/// running; an unknown server or a failed read is an invalid request naming why.
pub(crate) async fn mcp_resource_read(
    state: &AppState,
    params: keel_protocol::app_server::McpResourceReadParams,
) -> Result<keel_protocol::app_server::McpResourceReadResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let read = state
        .manager
        .read_mcp_resource(&config, &params.server, &params.uri)
        .await
        .map_err(AppServerError::InvalidRequest)?;
    let contents = read
        .get("contents")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(keel_protocol::app_server::McpResourceReadResponse { contents })
}

/// `mcpServer/tool/call`: a client calls a server's tool itself, for a loaded thread (the
/// server started if it is not running, the call bounded by its `tool_timeout_sec`, what the
/// server asks meanwhile declined); an unknown thread, server or tool, or a failed call, is
/// an invalid request naming why.
pub(crate) async fn mcp_server_tool_call(
    state: &AppState,
    params: keel_protocol::app_server::McpServerToolCallParams,
) -> Result<keel_protocol::app_server::McpServerToolCallResponse> {
    let id = crate::state::parse_thread_id(&params.thread_id)?;
    if state.loaded(id).await.is_none() {
        return Err(AppServerError::InvalidRequest(format!(
            "thread {} is not loaded; start or resume it first",
            params.thread_id
        )));
    }
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let result = state
        .manager
        .call_mcp_tool(&config, &params.server, &params.tool, params.arguments)
        .await
        .map_err(AppServerError::InvalidRequest)?;
    Ok(keel_protocol::app_server::McpServerToolCallResponse {
        content: result
            .get("content")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default(),
        is_error: result.get("isError").and_then(serde_json::Value::as_bool),
        structured_content: result
            .get("structuredContent")
            .filter(|value| !value.is_null())
            .cloned(),
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(McpServerStatusList, |ctx, p| Reply::now(
    &mcp_server_status_list(ctx.state, p).await?
));
handle!(McpResourceRead, |ctx, p| Reply::now(
    &mcp_resource_read(ctx.state, p).await?
));
handle!(McpServerToolCall, |ctx, p| Reply::now(
    &mcp_server_tool_call(ctx.state, p).await?
));

handle!(McpServerReload, |ctx, _| {
    let config = ctx
        .state
        .resolve_config(&keel_protocol::app_server::ThreadOverrides::default())?;
    let threads = ctx.state.manager.reload_mcp_servers(&config);
    tracing::info!(
        threads,
        servers = config.mcp_servers.len(),
        "MCP servers reloaded from the configuration"
    );
    Reply::now(&keel_protocol::app_server::EmptyResponse {})
});
