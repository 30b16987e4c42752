//! `mcpServer/oauth/login`: starts a configured MCP server's OAuth login, answers with the page
//! to send the user to, and tells the connection `mcpServer/oauthLogin/completed` when the
//! browser came back (or the wait ran out). The tokens go where `keel mcp login` keeps them.

use std::sync::Arc;
use std::time::Duration;

use keel_core::McpLogin;
use keel_protocol::app_server::{
    McpServerOauthLoginCompletedNotification, McpServerOauthLoginParams,
    McpServerOauthLoginResponse, ServerNotification, ThreadOverrides,
};

use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// How long a login waits for the browser when the client does not say.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Starts the login; the completion arrives as a notification on `outgoing`.
pub(crate) async fn mcp_server_oauth_login(
    state: &AppState,
    params: McpServerOauthLoginParams,
    outgoing: &Arc<Outgoing>,
) -> Result<McpServerOauthLoginResponse> {
    let invalid = |message: String| AppServerError::InvalidParams {
        method: "mcpServer/oauth/login".to_string(),
        message,
    };
    if let Some(environment) = params.environment_id.as_deref()
        && environment != keel_core::config::LOCAL_ENVIRONMENT
    {
        return Err(invalid(format!(
            "unknown environment `{environment}`; MCP logins are kept for `{}` only",
            keel_core::config::LOCAL_ENVIRONMENT
        )));
    }
    let timeout = match params.timeout_secs {
        None => DEFAULT_TIMEOUT,
        Some(secs) if secs > 0 => Duration::from_secs(secs.unsigned_abs()),
        Some(secs) => {
            return Err(invalid(format!(
                "`timeoutSecs` must be positive, not {secs}"
            )));
        }
    };
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let server = config.mcp_servers.get(&params.name).ok_or_else(|| {
        let known: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        invalid(format!(
            "unknown MCP server `{}`; configured: {}",
            params.name,
            known.join(", ")
        ))
    })?;
    let mut server = server.clone();
    if let Some(choice) = params.client_registration {
        keel_core::choose_client_registration(&params.name, &mut server, choice)
            .map_err(|err| invalid(err.to_string()))?;
    }
    let scopes = params.scopes.clone().unwrap_or_default();
    let login = McpLogin::start(&params.name, &server, &scopes)
        .await
        .map_err(|err| AppServerError::InvalidRequest(err.to_string()))?;
    let authorization_url = login.authorization_url().to_string();
    let login_id = uuid::Uuid::new_v4().to_string();
    let outgoing = outgoing.clone();
    let (name, thread_id, id) = (params.name, params.thread_id, login_id.clone());
    tokio::spawn(async move {
        let outcome = login.wait_for_callback(timeout).await;
        let notification = McpServerOauthLoginCompletedNotification {
            name,
            success: outcome.is_ok(),
            error: outcome.err().map(|err| err.to_string()),
            login_id: Some(id),
            thread_id,
        };
        outgoing
            .notify(ServerNotification::McpServerOauthLoginCompleted(
                notification,
            ))
            .await;
    });
    Ok(McpServerOauthLoginResponse {
        authorization_url,
        login_id: Some(login_id),
    })
}

handle!(McpServerOauthLogin, |ctx, p| Reply::now(
    &mcp_server_oauth_login(ctx.state, p, ctx.outgoing()).await?
));
