//! An OAuth-protected MCP server for tests: one loopback listener that is both the
//! authorization server (metadata, dynamic registration, an authorization endpoint that
//! approves at once, as a signed-in user would, and a token endpoint with PKCE and refresh
//! tokens) and the protected resource (a minimal Streamable HTTP MCP server with one tool,
//! `whoami`, that says which access token it was called with, by number).
//!
//! Tests can revoke the current access token at the resource, as a server does when a token
//! expires early or is withdrawn, and read what happened: every token grant and every MCP
//! request with the token it carried.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;
use tokio_util::task::AbortOnDropHandle;

use crate::{Error, Result};

/// One thing the server saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthEvent {
    /// A token was issued for `grant_type` (`authorization_code` or `refresh_token`).
    Granted {
        /// The grant type used.
        grant_type: String,
        /// The access token issued.
        access_token: String,
    },
    /// An MCP request arrived with this bearer token (`None`: without one); `accepted` says
    /// whether the token was valid.
    McpRequest {
        /// The JSON-RPC method.
        method: String,
        /// The bearer token sent.
        token: Option<String>,
        /// Whether it was let through.
        accepted: bool,
    },
}

#[derive(Default)]
struct Inner {
    origin: String,
    /// Authorization codes not yet redeemed: code → PKCE challenge.
    codes: HashMap<String, String>,
    /// The refresh token the next refresh must present.
    refresh_token: Option<String>,
    /// Access tokens the resource accepts.
    valid: Vec<String>,
    issued: u32,
    events: Vec<OAuthEvent>,
}

type Shared = Arc<Mutex<Inner>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running server.
pub struct OAuthMcpServer {
    shared: Shared,
    address: SocketAddr,
    _task: AbortOnDropHandle<()>,
}

impl OAuthMcpServer {
    /// Starts the server on a free loopback port.
    pub async fn start() -> Result<Self> {
        let bind_error = |source| Error::Bind {
            addr: "127.0.0.1:0".to_string(),
            source,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        let shared: Shared = Arc::new(Mutex::new(Inner {
            origin: format!("http://{address}"),
            ..Inner::default()
        }));
        let app = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route(
                "/mcp",
                post(mcp).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
            )
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::warn!(%err, "the OAuth MCP fixture stopped");
            }
        });
        Ok(Self {
            shared,
            address,
            _task: AbortOnDropHandle::new(task),
        })
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops accepting every access token issued so far (the next request with one gets
    /// `401 invalid_token`); the refresh token stays good.
    pub fn revoke_access_tokens(&self) {
        lock(&self.shared).valid.clear();
    }

    /// Everything seen so far, in order.
    pub fn events(&self) -> Vec<OAuthEvent> {
        lock(&self.shared).events.clone()
    }
}

async fn resource_metadata(State(shared): State<Shared>) -> Json<Value> {
    let origin = lock(&shared).origin.clone();
    Json(json!({
        "resource": format!("{origin}/mcp"),
        "authorization_servers": [origin],
        "scopes_supported": ["tools"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn server_metadata(State(shared): State<Shared>) -> Json<Value> {
    let origin = lock(&shared).origin.clone();
    Json(json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["tools"],
    }))
}

async fn register(Json(mut metadata): Json<Value>) -> (StatusCode, Json<Value>) {
    if let Some(object) = metadata.as_object_mut() {
        object.insert("client_id".into(), json!("fixture-client"));
        object.insert("token_endpoint_auth_method".into(), json!("none"));
    }
    (StatusCode::CREATED, Json(metadata))
}

async fn authorize(
    State(shared): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let (Some(redirect), Some(challenge)) =
        (params.get("redirect_uri"), params.get("code_challenge"))
    else {
        return (
            StatusCode::BAD_REQUEST,
            "redirect_uri and code_challenge are required",
        )
            .into_response();
    };
    if params.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "only S256 PKCE").into_response();
    }
    let code = {
        let mut inner = lock(&shared);
        let code = format!("code-{}", inner.codes.len() + 1);
        inner.codes.insert(code.clone(), challenge.clone());
        code
    };
    let state = params.get("state").cloned().unwrap_or_default();
    let separator = if redirect.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{redirect}{separator}code={code}&state={state}")).into_response()
}

async fn token(
    State(shared): State<Shared>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let grant_type = form.get("grant_type").cloned().unwrap_or_default();
    let mut inner = lock(&shared);
    let allowed = match grant_type.as_str() {
        "authorization_code" => {
            let challenge = form.get("code").and_then(|code| inner.codes.remove(code));
            let verifier = form.get("code_verifier");
            match (challenge, verifier) {
                (Some(challenge), Some(verifier)) => {
                    let digest = sha2::Sha256::digest(verifier.as_bytes());
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == challenge
                }
                _ => false,
            }
        }
        "refresh_token" => {
            inner.refresh_token.is_some()
                && form.get("refresh_token") == inner.refresh_token.as_ref()
        }
        _ => false,
    };
    if !allowed {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    inner.issued += 1;
    let access_token = format!("access-{}", inner.issued);
    let refresh_token = format!("refresh-{}", inner.issued);
    inner.valid.push(access_token.clone());
    inner.refresh_token = Some(refresh_token.clone());
    inner.events.push(OAuthEvent::Granted {
        grant_type,
        access_token: access_token.clone(),
    });
    Json(json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh_token,
        "scope": "tools",
    }))
    .into_response()
}

async fn mcp(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Json(message): Json<Value>,
) -> Response {
    let method = message["method"].as_str().unwrap_or_default().to_string();
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_string);
    let (accepted, origin) = {
        let mut inner = lock(&shared);
        let accepted = token
            .as_ref()
            .is_some_and(|token| inner.valid.contains(token));
        inner.events.push(OAuthEvent::McpRequest {
            method: method.clone(),
            token: token.clone(),
            accepted,
        });
        (accepted, inner.origin.clone())
    };
    if !accepted {
        let error = if token.is_some() {
            ", error=\"invalid_token\""
        } else {
            ""
        };
        let challenge = format!(
            "Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"{error}"
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    }
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-fixture", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says which access token the call carried.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
        "tools/call" => json!({"content": [{
            "type": "text",
            // The token's number, never the token: what a tool returns is recorded.
            "text": format!(
                "called with token {}",
                token
                    .as_deref()
                    .and_then(|token| token.strip_prefix("access-"))
                    .unwrap_or("?")
            ),
        }]}),
        "ping" => json!({}),
        _ => {
            return Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no method {method}")}}))
            .into_response();
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
