//! Environments a client adds at runtime (`environment/add`), their status
//! (`environment/status`), and the environment a thread starts in (`thread/start`'s
//! `environments`: `local`, a name from the config's `[environments]`, or an added one).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use keel_core::Config;
use keel_core::config::LOCAL_ENVIRONMENT;
use keel_exec_server::{BearerToken, ExecServerClient, ExecServerClientOptions};
use keel_protocol::app_server::{
    EnvironmentAddParams, EnvironmentAddResponse, EnvironmentStatusKind, EnvironmentStatusParams,
    EnvironmentStatusResponse, ThreadOverrides, TurnEnvironmentParams,
};

use super::added_environments::Added;
use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// How long connecting to an added environment may take when the client does not say.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn invalid(message: String) -> AppServerError {
    AppServerError::InvalidRequest(message)
}

/// `environment/add`: registers the exec-server and connects to it in the background (its
/// status says how that went). Adding an id again replaces it for threads started later.
pub(crate) async fn add(
    state: &AppState,
    params: EnvironmentAddParams,
) -> Result<EnvironmentAddResponse> {
    let id = params.environment_id.trim().to_string();
    if id.is_empty() {
        return Err(invalid(
            "environment/add: environment id cannot be empty".into(),
        ));
    }
    if id == LOCAL_ENVIRONMENT {
        return Err(invalid(
            "environment/add: environment id `local` is reserved for this machine".into(),
        ));
    }
    let url: axum::http::Uri = params.exec_server_url.parse().map_err(|err| {
        invalid(format!(
            "environment/add: `{}` is not a URL: {err}",
            params.exec_server_url
        ))
    })?;
    if !matches!(url.scheme_str(), Some("ws" | "wss")) || url.host().is_none() {
        return Err(invalid(format!(
            "environment/add: `{}` is not a ws:// or wss:// URL with a host",
            params.exec_server_url
        )));
    }
    let token = params
        .auth_bearer_token
        .as_deref()
        .filter(|token| !token.trim().is_empty())
        .map(BearerToken::new);
    if token.is_some() && !keel_exec_server::token_may_go_to(&params.exec_server_url) {
        return Err(invalid(
            "environment/add: a bearer token is sent only over wss:// or to a loopback host".into(),
        ));
    }
    let added = Arc::new(Added {
        url: params.exec_server_url.clone(),
        token,
        status: Mutex::new((EnvironmentStatusKind::Pending, None)),
    });
    lock(&state.environments.by_id).insert(id.clone(), added.clone());
    let timeout = params
        .connect_timeout_ms
        .map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_millis);
    tokio::spawn(async move {
        let options = ExecServerClientOptions {
            client_name: format!("keel-app-server {}", env!("CARGO_PKG_VERSION")),
            bearer_token: added.token.clone(),
            connect_timeout: timeout,
            ..ExecServerClientOptions::default()
        };
        let outcome = match ExecServerClient::connect_websocket(&added.url, options).await {
            Ok(client) => {
                client.shutdown().await;
                (EnvironmentStatusKind::Ready, None)
            }
            Err(err) => (EnvironmentStatusKind::Disconnected, Some(err.to_string())),
        };
        tracing::info!(environment = %id, status = ?outcome.0, "environment checked");
        *lock(&added.status) = outcome;
    });
    Ok(EnvironmentAddResponse {})
}

/// `environment/status`: `local` is always ready; an added one says how its connection went;
/// one the config names and no thread has used is `pending`; any other id is `unknown`.
pub(crate) async fn status(
    state: &AppState,
    params: EnvironmentStatusParams,
) -> Result<EnvironmentStatusResponse> {
    let id = params.environment_id;
    if id == LOCAL_ENVIRONMENT {
        return Ok(EnvironmentStatusResponse {
            status: EnvironmentStatusKind::Ready,
            error: None,
        });
    }
    if let Some(added) = lock(&state.environments.by_id).get(&id).cloned() {
        let (status, error) = lock(&added.status).clone();
        return Ok(EnvironmentStatusResponse { status, error });
    }
    if configured(state, &id) {
        return Ok(EnvironmentStatusResponse {
            status: EnvironmentStatusKind::Pending,
            error: None,
        });
    }
    Ok(EnvironmentStatusResponse {
        status: EnvironmentStatusKind::Unknown,
        error: Some(format!("unknown environment id `{id}`")),
    })
}

/// Whether the config defines `[environments.<id>]`.
fn configured(state: &AppState, id: &str) -> bool {
    state.resolve_config(&with_environment(id)).is_ok()
}

fn with_environment(id: &str) -> ThreadOverrides {
    let mut config = serde_json::Map::new();
    config.insert("environment".into(), serde_json::Value::String(id.into()));
    ThreadOverrides {
        config: Some(config),
        ..ThreadOverrides::default()
    }
}

/// Checks `environments` (from `thread/start`) and resolves the thread's configuration for
/// its first one, the primary: Keel runs a thread's commands in one environment.
pub(crate) fn resolve_thread_config(
    state: &AppState,
    environments: &[TurnEnvironmentParams],
    mut overrides: ThreadOverrides,
) -> Result<Config> {
    let mut seen = std::collections::BTreeSet::new();
    for env in environments {
        if !seen.insert(env.environment_id.as_str()) {
            return Err(invalid(format!(
                "duplicate turn environment id `{}`",
                env.environment_id
            )));
        }
        if !env.cwd.is_absolute() {
            return Err(invalid(format!(
                "invalid cwd for environment `{}`: path `{}` is not absolute",
                env.environment_id,
                env.cwd.display()
            )));
        }
    }
    let Some(primary) = environments.first() else {
        // No environment: this machine (Keel has no thread without one).
        return state.resolve_config(&overrides);
    };
    if environments.len() > 1 {
        tracing::info!(
            primary = %primary.environment_id,
            "thread/start named several environments; Keel runs the thread in the first"
        );
    }
    overrides.cwd = Some(primary.cwd.clone());
    let id = primary.environment_id.as_str();
    let added = lock(&state.environments.by_id).get(id).cloned();
    let map = overrides.config.get_or_insert_with(serde_json::Map::new);
    match &added {
        // An added environment: this machine's config names it as local, and the added
        // server's URL and token are set below.
        Some(_) => map.insert(
            "environment".into(),
            serde_json::Value::String(LOCAL_ENVIRONMENT.into()),
        ),
        None => map.insert("environment".into(), serde_json::Value::String(id.into())),
    };
    let mut config = state.resolve_config(&overrides).map_err(|err| match err {
        AppServerError::Config(_) if added.is_none() && id != LOCAL_ENVIRONMENT => {
            invalid(format!("unknown turn environment id `{id}`"))
        }
        other => other,
    })?;
    if let Some(added) = added {
        config.exec_server_url = Some(added.url.clone());
        config.exec_server_auth_token = added.token.clone();
        config.exec_server_auth_token_env = None;
        config.exec_server_auth_token_file = None;
        config.environment = Some(id.to_string());
    }
    Ok(config)
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(EnvironmentAdd, |ctx, p| Reply::now(
    &add(ctx.state, p).await?
));
handle!(EnvironmentStatus, |ctx, p| Reply::now(
    &status(ctx.state, p).await?
));
