//! `[mcp_servers.NAME.oauth]` and the server's `scopes`/`oauth_resource`: how Keel would log
//! in to a remote MCP server that asks for OAuth, in Codex's keys so a Codex file carries over.
//!
//! Parsed and checked here, with the top-level `mcp_oauth_*` keys every server shares; the
//! login itself is in `mcp::oauth_login` (`docs/configuration.md`).

use serde::Deserialize;

/// One `[mcp_servers.NAME.oauth]` table as written.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct McpOAuthToml {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub token_endpoint_auth_method: Option<String>,
    pub callback_port: Option<u16>,
    pub callback_url: Option<String>,
    pub client_metadata_url: Option<String>,
}

/// How the client authenticates at the token endpoint (RFC 7591's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenEndpointAuthMethod {
    /// A public client: no secret.
    None,
    /// The secret in the request body.
    ClientSecretPost,
    /// The secret in HTTP Basic authentication.
    ClientSecretBasic,
}

impl TokenEndpointAuthMethod {
    const NAMES: [(&'static str, Self); 3] = [
        ("none", Self::None),
        ("client_secret_post", Self::ClientSecretPost),
        ("client_secret_basic", Self::ClientSecretBasic),
    ];
}

/// A server's OAuth settings, resolved: everything optional, since a server that publishes
/// its metadata needs none of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct McpOAuthSettings {
    /// Scopes to ask for (`scopes`); the server's advertised scopes when empty.
    pub scopes: Vec<String>,
    /// The resource indicator to ask a token for (`oauth_resource`, RFC 8707).
    pub resource: Option<String>,
    /// A client registered beforehand (`oauth.client_id`), instead of registering one.
    pub client_id: Option<String>,
    /// That client's secret (`oauth.client_secret`).
    pub client_secret: Option<String>,
    /// How that client authenticates (`oauth.token_endpoint_auth_method`).
    pub token_endpoint_auth_method: Option<TokenEndpointAuthMethod>,
    /// The local port the browser is sent back to (`oauth.callback_port`).
    pub callback_port: Option<u16>,
    /// The redirect URL registered for the client (`oauth.callback_url`).
    pub callback_url: Option<String>,
    /// Keel's client ID metadata document (`oauth.client_metadata_url`, a Keel key): an
    /// https URL serving the client's metadata, used as its client ID where the authorization
    /// server accepts such documents instead of registering a client.
    pub client_metadata_url: Option<String>,
    /// Where a login to this server is kept (`KEEL_HOME/mcp_credentials.json`); `None` when
    /// the configuration was not loaded from a home, so no login is looked for.
    #[serde(skip)]
    pub credentials_file: Option<std::path::PathBuf>,
    /// Whether logins go to that file or the desktop keyring (`mcp_oauth_credentials_store`).
    #[serde(skip)]
    pub credentials_store: McpCredentialsStore,
}

/// Where MCP logins are kept (`mcp_oauth_credentials_store`, Codex's values).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum McpCredentialsStore {
    /// `KEEL_HOME/mcp_credentials.json`, mode 0600 (Keel's default).
    #[default]
    File,
    /// The desktop keyring (the freedesktop Secret Service); a login fails without one.
    Keyring,
    /// The keyring when one answers, else the file.
    Auto,
}

impl McpCredentialsStore {
    const NAMES: [(&'static str, Self); 3] = [
        ("file", Self::File),
        ("keyring", Self::Keyring),
        ("auto", Self::Auto),
    ];

    /// The value as written in `config.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Keyring => "keyring",
            Self::Auto => "auto",
        }
    }
}

/// The top-level login keys, applied to every server: where logins are kept, and the
/// callback of servers whose own `oauth` table names none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct McpOAuthDefaults {
    pub store: McpCredentialsStore,
    pub callback_port: Option<u16>,
    pub callback_url: Option<String>,
}

impl McpOAuthDefaults {
    /// Gives `server` the store and, where it sets none, the callback.
    pub(crate) fn apply(&self, server: &mut McpOAuthSettings) {
        server.credentials_store = self.store;
        if server.callback_port.is_none() {
            server.callback_port = self.callback_port;
        }
        if server.callback_url.is_none() {
            server.callback_url.clone_from(&self.callback_url);
        }
    }
}

/// Checks `mcp_oauth_credentials_store`, `mcp_oauth_callback_port` and
/// `mcp_oauth_callback_url`; `Err` names the key and the problem.
pub(crate) fn resolve_oauth_defaults(
    store: Option<String>,
    callback_port: Option<u16>,
    callback_url: Option<String>,
) -> Result<McpOAuthDefaults, (&'static str, String)> {
    let store = match store {
        None => McpCredentialsStore::default(),
        Some(name) => McpCredentialsStore::NAMES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, store)| *store)
            .ok_or_else(|| {
                (
                    "mcp_oauth_credentials_store",
                    format!("`{name}` is not one of file, keyring, auto"),
                )
            })?,
    };
    if callback_port == Some(0) {
        return Err((
            "mcp_oauth_callback_port",
            "must be a port number from 1 to 65535".into(),
        ));
    }
    if let Some(url) = &callback_url
        && !is_http_url(url)
    {
        return Err((
            "mcp_oauth_callback_url",
            format!("`{url}` is not an http(s) URL"),
        ));
    }
    Ok(McpOAuthDefaults {
        store,
        callback_port,
        callback_url,
    })
}

fn is_http_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|parsed| matches!(parsed.scheme(), "http" | "https"))
}

/// The file in the Keel home that keeps MCP servers' OAuth logins (mode 0600).
pub const MCP_CREDENTIALS_FILE: &str = "mcp_credentials.json";

/// Checks an `oauth` table with the server's `scopes` and `oauth_resource`; `Err` names the
/// key (under `oauth.` for the table's own keys) and the problem.
pub(crate) fn resolve_oauth(
    table: Option<McpOAuthToml>,
    scopes: Option<Vec<String>>,
    resource: Option<String>,
) -> Result<McpOAuthSettings, (&'static str, String)> {
    let table = table.unwrap_or_default();
    let token_endpoint_auth_method = match table.token_endpoint_auth_method {
        None => None,
        Some(name) => Some(
            TokenEndpointAuthMethod::NAMES
                .iter()
                .find(|(known, _)| *known == name)
                .map(|(_, method)| *method)
                .ok_or_else(|| {
                    let known: Vec<&str> = TokenEndpointAuthMethod::NAMES
                        .iter()
                        .map(|(known, _)| *known)
                        .collect();
                    (
                        "oauth.token_endpoint_auth_method",
                        format!("`{name}` is not one of {}", known.join(", ")),
                    )
                })?,
        ),
    };
    if table.client_secret.is_some() && table.client_id.is_none() {
        return Err((
            "oauth.client_secret",
            "is set without `oauth.client_id`; a secret belongs to a registered client".into(),
        ));
    }
    if table.callback_port == Some(0) {
        return Err((
            "oauth.callback_port",
            "must be a port number from 1 to 65535".into(),
        ));
    }
    if let Some(url) = &table.client_metadata_url {
        match reqwest::Url::parse(url) {
            Ok(parsed) if parsed.scheme() == "https" && parsed.path() != "/" => {}
            _ => {
                return Err((
                    "oauth.client_metadata_url",
                    format!("`{url}` is not an https URL with a path"),
                ));
            }
        }
    }
    if let Some(url) = &table.callback_url
        && !is_http_url(url)
    {
        return Err((
            "oauth.callback_url",
            format!("`{url}` is not an http(s) URL"),
        ));
    }
    Ok(McpOAuthSettings {
        scopes: scopes.unwrap_or_default(),
        resource,
        client_id: table.client_id,
        client_secret: table.client_secret,
        token_endpoint_auth_method,
        callback_port: table.callback_port,
        callback_url: table.callback_url,
        client_metadata_url: table.client_metadata_url,
        credentials_file: None,
        credentials_store: McpCredentialsStore::default(),
    })
}
