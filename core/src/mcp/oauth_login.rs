//! Logging in to a remote MCP server that asks for OAuth, as `codex mcp login` does: ask the
//! server how it is protected, register Keel (a pre-registered client, a client ID metadata
//! document or dynamic registration, as the authorization server allows), send the user's
//! browser to the authorization page with PKCE, take the code on a loopback callback, and
//! keep the tokens in the home's credentials file. Connections then send the token and
//! refresh it before it expires (rmcp's `AuthClient`).

use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, OAuthClientConfig, OAuthState,
};
use tokio::sync::mpsc;

use super::oauth_store::{CredentialsPlace, ServerCredentialStore, check_place, remove_login};
use crate::config::{McpServerConfig, McpServerTransport};

/// The name Keel registers under.
const CLIENT_NAME: &str = "Keel";

/// What can go wrong logging in or out.
#[derive(Debug, thiserror::Error)]
pub enum McpLoginError {
    /// The server is started as a program; only HTTP servers log in.
    #[error("MCP server `{0}` is started over stdio; only servers with a `url` log in")]
    NotHttp(String),
    /// The configuration was not loaded from a Keel home, so there is nowhere to keep a login.
    #[error("MCP server `{0}`: no Keel home to keep the login in")]
    NoHome(String),
    /// The server authenticates with a bearer token from the environment instead.
    #[error("MCP server `{0}` uses `bearer_token_env_var`; it needs no login")]
    BearerToken(String),
    /// Discovery, registration or the token exchange failed.
    #[error("MCP server `{server}`: {reason}")]
    OAuth {
        /// The server's name.
        server: String,
        /// What the authorization server or the discovery said.
        reason: String,
    },
    /// The loopback callback could not listen.
    #[error("cannot listen for the OAuth callback on {address}: {reason}")]
    Callback {
        /// The address asked for.
        address: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The browser never came back.
    #[error("no answer from the browser within {} s", .0.as_secs())]
    Timeout(Duration),
    /// A client ID metadata document was asked for and the server's configuration names none.
    #[error(
        "MCP server `{0}`: client registration `cimd` needs `oauth.client_metadata_url` (the https URL of Keel's client metadata document)"
    )]
    NoClientMetadataUrl(String),
    /// A machine login was asked for and the configuration lacks the client's credentials.
    #[error(
        "MCP server `{0}`: a client-credentials login needs `oauth.client_id` and `oauth.client_secret`"
    )]
    NoClientSecret(String),
}

/// Narrows how a login identifies Keel to the authorization server (`--oauth-client-registration`,
/// the app-server's `clientRegistration`): `dcr` registers dynamically (no metadata
/// document), `cimd` requires the configured metadata document, `auto` lets the server's
/// metadata decide in the spec's order (pre-registered, document, dynamic).
pub fn choose_client_registration(
    name: &str,
    server: &mut McpServerConfig,
    choice: keel_protocol::app_server::McpServerOauthClientRegistration,
) -> Result<(), McpLoginError> {
    use keel_protocol::app_server::McpServerOauthClientRegistration as Choice;
    match choice {
        Choice::Dcr => server.oauth.client_metadata_url = None,
        Choice::Cimd if server.oauth.client_metadata_url.is_none() => {
            return Err(McpLoginError::NoClientMetadataUrl(name.to_string()));
        }
        Choice::Cimd | Choice::Auto => {}
    }
    Ok(())
}

/// A login under way: the page to send the user to, and the callback that ends it.
pub struct McpLogin {
    server: String,
    state: OAuthState,
    authorization_url: String,
    callbacks: mpsc::Receiver<String>,
    listener: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for McpLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpLogin")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Drop for McpLogin {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// Keeps the scope server `name` refused a call for want of, so the next login asks for it;
/// a failure to write it is logged (the call's error already names the scope).
pub(crate) async fn remember_required_scope(name: &str, server: &McpServerConfig, scope: &str) {
    let Ok((url, file)) = login_target(name, server) else {
        return;
    };
    let store = ServerCredentialStore::new(&file, name, url);
    if let Err(err) = store.remember_required_scope(scope).await {
        tracing::warn!(server = name, %err, "cannot record the scope the server asks for");
    }
}

/// The URL of a server that can log in, and where its login is kept.
fn login_target<'a>(
    name: &str,
    server: &'a McpServerConfig,
) -> Result<(&'a str, CredentialsPlace), McpLoginError> {
    let McpServerTransport::StreamableHttp {
        url,
        bearer_token_env_var,
        ..
    } = &server.transport
    else {
        return Err(McpLoginError::NotHttp(name.to_string()));
    };
    if bearer_token_env_var.is_some() {
        return Err(McpLoginError::BearerToken(name.to_string()));
    }
    let file = server
        .oauth
        .credentials_file
        .clone()
        .ok_or_else(|| McpLoginError::NoHome(name.to_string()))?;
    let place = CredentialsPlace {
        file,
        store: server.oauth.credentials_store,
    };
    Ok((url, place))
}

impl McpLogin {
    /// Starts a login to server `name`: discovers how it is protected, registers Keel, and
    /// listens on loopback for the browser's return. `scopes` empty: the scopes the server
    /// asks for.
    pub async fn start(
        name: &str,
        server: &McpServerConfig,
        scopes: &[String],
    ) -> Result<Self, McpLoginError> {
        let (url, file) = login_target(name, server)?;
        let oauth = |err: AuthError| McpLoginError::OAuth {
            server: name.to_string(),
            reason: err.to_string(),
        };
        check_place(&file, name).await.map_err(oauth)?;
        crate::tls::install_tls_provider();
        let (redirect_uri, callbacks, listener) = listen_for_callback(server).await?;
        let challenge = challenge_of(url).await;
        let mut manager = AuthorizationManager::new(url).await.map_err(oauth)?;
        manager.set_credential_store(ServerCredentialStore::new(&file, name, url));
        let mut request = AuthorizationRequest::new(redirect_uri).with_client_name(CLIENT_NAME);
        // Asked for: `--scopes`, else what the server last asked a call for (step-up) with
        // what was granted, else the configured `scopes`.
        let stepped_up = if scopes.is_empty() {
            ServerCredentialStore::new(&file, name, url)
                .step_up_scopes()
                .await
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let scopes = if !scopes.is_empty() {
            scopes
        } else if !stepped_up.is_empty() {
            stepped_up.as_slice()
        } else {
            server.oauth.scopes.as_slice()
        };
        if !scopes.is_empty() {
            request = request.with_scopes(scopes.iter().cloned());
        }
        if let Some(client_id) = &server.oauth.client_id {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &server.oauth.client_secret {
                request = request.with_client_secret(secret.clone());
            }
        }
        if let Some(document) = &server.oauth.client_metadata_url {
            request = request.with_client_metadata_url(document.clone());
        }
        if let Some(header) = challenge {
            request = request.with_challenge(header);
        }
        let mut state = OAuthState::Unauthorized(manager);
        match state.start_authorization(request.clone()).await {
            Ok(()) => {}
            Err(AuthError::AuthorizationServerMismatch { .. }) => {
                let (OAuthState::Unauthorized(mut manager), Some(metadata)) = (
                    state,
                    super::legacy_metadata::same_origin_metadata(url).await,
                ) else {
                    return Err(oauth(AuthError::InternalError(
                        "the authorization server's metadata names an issuer on another origin"
                            .to_string(),
                    )));
                };
                manager.set_metadata(metadata);
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, err)| oauth(err))?;
                state = OAuthState::Session(session);
            }
            Err(err) => return Err(oauth(err)),
        }
        let authorization_url = state.get_authorization_url().await.map_err(oauth)?;
        Ok(Self {
            server: name.to_string(),
            state,
            authorization_url,
            callbacks,
            listener,
        })
    }

    /// The page the user signs in on.
    pub fn authorization_url(&self) -> &str {
        &self.authorization_url
    }

    /// Waits up to `timeout` for the browser to come back to the loopback callback, then
    /// exchanges the code and keeps the tokens.
    pub async fn wait_for_callback(mut self, timeout: Duration) -> Result<(), McpLoginError> {
        let callback = tokio::time::timeout(timeout, self.callbacks.recv())
            .await
            .ok()
            .flatten()
            .ok_or(McpLoginError::Timeout(timeout))?;
        self.finish(&callback).await
    }

    /// Ends the login with the URL the browser was sent back to (pasted by the user when no
    /// browser could reach the callback): exchanges the code and keeps the tokens.
    pub async fn finish(mut self, callback_url: &str) -> Result<(), McpLoginError> {
        let server = self.server.clone();
        self.state
            .handle_callback_url(callback_url)
            .await
            .map_err(|err| McpLoginError::OAuth {
                server,
                reason: err.to_string(),
            })
    }
}

/// Logs in without a user (the OAuth client-credentials grant, SEP-1046): the configured
/// `oauth.client_id` and `oauth.client_secret` are exchanged for a token at the authorization
/// server the server's metadata names, kept like a browser login's. For a service that runs
/// Keel unattended; the server must allow the grant.
pub async fn mcp_login_client_credentials(
    name: &str,
    server: &McpServerConfig,
    scopes: &[String],
) -> Result<(), McpLoginError> {
    let (url, file) = login_target(name, server)?;
    let (Some(client_id), Some(client_secret)) =
        (&server.oauth.client_id, &server.oauth.client_secret)
    else {
        return Err(McpLoginError::NoClientSecret(name.to_string()));
    };
    let oauth = |err: AuthError| McpLoginError::OAuth {
        server: name.to_string(),
        reason: err.to_string(),
    };
    check_place(&file, name).await.map_err(oauth)?;
    crate::tls::install_tls_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(oauth)?;
    manager.set_credential_store(ServerCredentialStore::new(&file, name, url));
    let scopes = if scopes.is_empty() {
        server.oauth.scopes.clone()
    } else {
        scopes.to_vec()
    };
    let mut state = OAuthState::Unauthorized(manager);
    state
        .authenticate_client_credentials(ClientCredentialsConfig::ClientSecret {
            client_id: client_id.clone(),
            client_secret: client_secret.clone(),
            scopes,
            resource: Some(url.to_string()),
        })
        .await
        .map_err(oauth)
}

/// Forgets server `name`'s login; `true` if there was one.
pub async fn mcp_logout(name: &str, server: &McpServerConfig) -> Result<bool, McpLoginError> {
    let (_, file) = login_target(name, server)?;
    remove_login(&file, name)
        .await
        .map_err(|err| McpLoginError::OAuth {
            server: name.to_string(),
            reason: err.to_string(),
        })
}

/// The manager a connection sends its requests through, when a login is stored for the
/// server; `None` when none is (the server is reached without a token).
pub(crate) async fn stored_login(
    name: &str,
    server: &McpServerConfig,
) -> Result<Option<AuthorizationManager>, McpLoginError> {
    let Ok((url, file)) = login_target(name, server) else {
        return Ok(None);
    };
    let store = ServerCredentialStore::new(&file, name, url);
    if !store.has_token().await {
        return Ok(None);
    }
    let oauth = |err: AuthError| McpLoginError::OAuth {
        server: name.to_string(),
        reason: err.to_string(),
    };
    crate::tls::install_tls_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(oauth)?;
    manager.set_credential_store(store);
    let initialized = match manager.initialize_from_store().await {
        Err(AuthError::AuthorizationServerMismatch { .. }) => {
            match super::legacy_metadata::same_origin_metadata(url).await {
                Some(metadata) => {
                    manager.set_metadata(metadata);
                    manager.initialize_from_store().await
                }
                None => {
                    return Err(oauth(AuthError::InternalError(
                        "the authorization server's metadata names an issuer on another origin"
                            .to_string(),
                    )));
                }
            }
        }
        other => other,
    };
    if !initialized.map_err(oauth)? {
        return Ok(None);
    }
    // The store keeps no client secret: a confidential client is configured again, so its
    // refreshes authenticate.
    if let (Some(client_id), Some(secret)) = (&server.oauth.client_id, &server.oauth.client_secret)
    {
        let redirect_uri = server.oauth.callback_url.clone().unwrap_or_default();
        manager
            .configure_client(
                OAuthClientConfig::new(client_id.clone(), redirect_uri)
                    .with_client_secret(secret.clone()),
            )
            .map_err(oauth)?;
    }
    Ok(Some(manager))
}

/// Whether a login is stored for server `name` (for status reports).
pub(crate) async fn has_stored_login(name: &str, server: &McpServerConfig) -> bool {
    match login_target(name, server) {
        Ok((url, file)) => {
            ServerCredentialStore::new(&file, name, url)
                .has_token()
                .await
        }
        Err(_) => false,
    }
}

/// The `WWW-Authenticate` challenge the server answers an unauthenticated `initialize` with,
/// which names its protected-resource metadata (and maybe the scopes it wants).
async fn challenge_of(url: &str) -> Option<String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "keel", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let response = crate::client::http_client()
        .post(url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()
        .map(str::to_string)
}

/// Listens on loopback for the browser's return (`oauth.callback_port`, or any free port),
/// and gives the redirect URI to register, the callback URLs as they arrive, and the task.
async fn listen_for_callback(
    server: &McpServerConfig,
) -> Result<(String, mpsc::Receiver<String>, tokio::task::JoinHandle<()>), McpLoginError> {
    let address = format!("127.0.0.1:{}", server.oauth.callback_port.unwrap_or(0));
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|err| McpLoginError::Callback {
            address: address.clone(),
            reason: err.to_string(),
        })?;
    let port = listener
        .local_addr()
        .map_err(|err| McpLoginError::Callback {
            address: address.clone(),
            reason: err.to_string(),
        })?
        .port();
    let redirect_uri = server
        .oauth
        .callback_url
        .clone()
        .unwrap_or_else(|| format!("http://127.0.0.1:{port}/callback"));
    let (sender, receiver) = mpsc::channel(1);
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let sender = sender.clone();
        async move {
            let query = uri.query().unwrap_or_default();
            let answered = query
                .split('&')
                .any(|pair| pair.starts_with("code=") || pair.starts_with("error="));
            if !answered {
                return (
                    axum::http::StatusCode::NOT_FOUND,
                    "Not the OAuth callback.".to_string(),
                );
            }
            let _ = sender.try_send(format!("http://127.0.0.1:{port}{uri}"));
            (
                axum::http::StatusCode::OK,
                "Keel received the sign-in. You can close this tab.".to_string(),
            )
        }
    });
    let task = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::warn!(%err, "the OAuth callback listener stopped");
        }
    });
    Ok((redirect_uri, receiver, task))
}
