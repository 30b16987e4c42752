//! `[mcp_servers.NAME]`: both transports resolve, and every mistake names the server and key.

use std::collections::BTreeMap;
use std::time::Duration;

use pretty_assertions::assert_eq;

use super::{TestResult, load_err, load_str};
use crate::config::{
    DEFAULT_MCP_STARTUP_TIMEOUT, McpCredentialsStore, McpOAuthSettings, McpServerTransport,
    TokenEndpointAuthMethod,
};

#[test]
fn stdio_and_http_servers_resolve_with_codex_keys() -> TestResult {
    let config = load_str(
        r#"
[mcp_servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { DEBUG = "1" }
env_vars = ["GITHUB_TOKEN"]
cwd = "/srv"
tool_timeout_sec = 2.5
disabled_tools = ["longRunningOperation"]

[mcp_servers.remote]
url = "http://127.0.0.1:3001/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "keel" }
enabled = false
startup_timeout_ms = 1500
"#,
        &["mcp_servers.remote.enabled_tools=[\"echo\"]"],
    )?;
    let everything = &config.mcp_servers["everything"];
    assert_eq!(
        everything.transport,
        McpServerTransport::Stdio {
            command: "npx".to_string(),
            args: vec![
                "-y".to_string(),
                "@modelcontextprotocol/server-everything".to_string()
            ],
            env: BTreeMap::from([("DEBUG".to_string(), "1".to_string())]),
            env_vars: vec!["GITHUB_TOKEN".to_string()],
            cwd: Some("/srv".into()),
        }
    );
    assert_eq!(everything.tool_timeout, Duration::from_millis(2500));
    assert_eq!(everything.startup_timeout, DEFAULT_MCP_STARTUP_TIMEOUT);
    assert!(everything.offers_tool("echo"));
    assert!(!everything.offers_tool("longRunningOperation"));

    let remote = &config.mcp_servers["remote"];
    assert_eq!(
        remote.transport,
        McpServerTransport::StreamableHttp {
            url: "http://127.0.0.1:3001/mcp".to_string(),
            bearer_token_env_var: Some("REMOTE_TOKEN".to_string()),
            http_headers: BTreeMap::from([("X-Team".to_string(), "keel".to_string())]),
            env_http_headers: BTreeMap::new(),
        }
    );
    assert!(!remote.enabled);
    assert_eq!(remote.startup_timeout, Duration::from_millis(1500));
    assert!(remote.offers_tool("echo"));
    assert!(!remote.offers_tool("add"));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    Ok(())
}

/// Codex 0.171's `[mcp_servers.NAME.oauth]` table, with the server's `scopes` and
/// `oauth_resource`, resolves into the settings the login uses.
#[test]
fn the_oauth_table_resolves_with_codex_keys() -> TestResult {
    let config = load_str(
        r#"
[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
scopes = ["read", "write"]
oauth_resource = "https://mcp.example.com"

[mcp_servers.docs.oauth]
client_id = "keel-cli"
client_secret = "shh"
token_endpoint_auth_method = "client_secret_post"
callback_port = 8765
callback_url = "http://localhost:8765/callback"
client_metadata_url = "https://keel.example.com/client.json"
"#,
        &[],
    )?;
    assert_eq!(
        config.mcp_servers["docs"].oauth,
        McpOAuthSettings {
            scopes: vec!["read".to_string(), "write".to_string()],
            resource: Some("https://mcp.example.com".to_string()),
            client_id: Some("keel-cli".to_string()),
            client_secret: Some("shh".to_string()),
            token_endpoint_auth_method: Some(TokenEndpointAuthMethod::ClientSecretPost),
            callback_port: Some(8765),
            callback_url: Some("http://localhost:8765/callback".to_string()),
            client_metadata_url: Some("https://keel.example.com/client.json".to_string()),
            // Logins are kept in the home the configuration was loaded from.
            credentials_file: Some(std::path::PathBuf::from(
                "/home/u/.keel/mcp_credentials.json"
            )),
            credentials_store: McpCredentialsStore::File,
        }
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let message = load_err(
        "[mcp_servers.docs]\nurl = \"http://x/mcp\"\noauth = { client = \"x\" }\n",
        &[],
    );
    assert!(
        message.contains("mcp_servers.docs.oauth.client: unknown field `client`"),
        "{message}"
    );
    let message = load_err(
        "[mcp_servers.docs]\nurl = \"http://x/mcp\"\noauth = { client_metadata_url = \"http://x/c.json\" }\n",
        &[],
    );
    assert!(
        message.contains("oauth.client_metadata_url") && message.contains("not an https URL"),
        "{message}"
    );
    Ok(())
}

/// Codex's top-level login keys: where logins are kept, and the callback every server uses
/// unless its own `oauth` table names one.
#[test]
fn the_top_level_login_keys_apply_to_every_server() -> TestResult {
    let config = load_str(
        r#"
mcp_oauth_credentials_store = "auto"
mcp_oauth_callback_port = 5555
mcp_oauth_callback_url = "http://localhost:5555/cb"

[mcp_servers.docs]
url = "https://mcp.example.com/mcp"

[mcp_servers.wiki]
url = "https://wiki.example.com/mcp"
oauth = { callback_port = 7777 }
"#,
        &[],
    )?;
    let docs = &config.mcp_servers["docs"].oauth;
    assert_eq!(docs.credentials_store, McpCredentialsStore::Auto);
    assert_eq!(docs.callback_port, Some(5555));
    assert_eq!(
        docs.callback_url.as_deref(),
        Some("http://localhost:5555/cb")
    );
    let wiki = &config.mcp_servers["wiki"].oauth;
    assert_eq!(wiki.credentials_store, McpCredentialsStore::Auto);
    assert_eq!(wiki.callback_port, Some(7777), "the server's own wins");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);

    let default = load_str("[mcp_servers.docs]\nurl = \"https://x/mcp\"\n", &[])?;
    assert_eq!(
        default.mcp_servers["docs"].oauth.credentials_store,
        McpCredentialsStore::File,
        "Keel keeps logins in the file unless told otherwise"
    );
    for (file, key, problem) in [
        (
            "mcp_oauth_credentials_store = \"vault\"\n",
            "mcp_oauth_credentials_store",
            "`vault` is not one of file, keyring, auto",
        ),
        (
            "mcp_oauth_callback_port = 0\n",
            "mcp_oauth_callback_port",
            "must be a port number",
        ),
        (
            "mcp_oauth_callback_url = \"ftp://x\"\n",
            "mcp_oauth_callback_url",
            "`ftp://x` is not an http(s) URL",
        ),
    ] {
        let message = load_err(file, &[]);
        assert!(message.contains(&format!("{key}: {problem}")), "{message}");
    }
    Ok(())
}

#[test]
fn an_unknown_key_is_an_error_naming_the_server_and_key() {
    let message = load_err(
        "[mcp_servers.docs]\ncommand = \"docs\"\ncomand = \"x\"\n",
        &[],
    );
    assert!(
        message.starts_with(
            "/home/u/.keel/config.toml: mcp_servers.docs.comand: unknown field `comand`, expected one of `command`,"
        ),
        "{message}"
    );
}

#[test]
fn bad_values_name_the_server_and_key() {
    let file = "/home/u/.keel/config.toml";
    let cases = [
        (
            "[mcp_servers.docs]\ncommand = \"docs\"\nstartup_timeout_sec = \"soon\"\n",
            "mcp_servers.docs.startup_timeout_sec: invalid type: string \"soon\", expected f64",
        ),
        (
            "[mcp_servers.docs]\ncommand = \"docs\"\ntool_timeout_sec = -1\n",
            "mcp_servers.docs.tool_timeout_sec: `-1` is not a positive number of seconds",
        ),
        (
            "[mcp_servers.docs]\ncommand = \"docs\"\nurl = \"http://x/mcp\"\n",
            "mcp_servers.docs: set either `command` (a stdio server) or `url` (Streamable HTTP), not both",
        ),
        (
            "[mcp_servers.docs]\nenabled = true\n",
            "mcp_servers.docs: no transport: set `command` (a stdio server) or `url` (Streamable HTTP)",
        ),
        (
            "[mcp_servers.docs]\nurl = \"http://x/mcp\"\nargs = [\"a\"]\n",
            "mcp_servers.docs.args: applies to stdio servers (`command`), not to a `url`",
        ),
        (
            "[mcp_servers.docs]\ncommand = \"docs\"\nbearer_token_env_var = \"T\"\n",
            "mcp_servers.docs.bearer_token_env_var: applies to Streamable HTTP servers (`url`), not to a stdio `command`",
        ),
        (
            "[mcp_servers.docs]\nurl = \"ftp://x/mcp\"\n",
            "mcp_servers.docs.url: `ftp://x/mcp` has scheme `ftp`; expected `http` or `https`",
        ),
        (
            "[mcp_servers.docs]\nurl = \"http://x/mcp\"\nbearer_token = \"secret\"\n",
            "mcp_servers.docs.bearer_token: inline tokens are not accepted; put the token in an \
             environment variable and name it in `bearer_token_env_var`",
        ),
        (
            "[mcp_servers.docs]\nurl = \"http://x/mcp\"\n[mcp_servers.docs.oauth]\ntoken_endpoint_auth_method = \"jwt\"\n",
            "mcp_servers.docs.oauth.token_endpoint_auth_method: `jwt` is not one of none, client_secret_post, client_secret_basic",
        ),
        (
            "[mcp_servers.docs]\nurl = \"http://x/mcp\"\noauth = { client_secret = \"s\" }\n",
            "mcp_servers.docs.oauth.client_secret: is set without `oauth.client_id`; a secret belongs to a registered client",
        ),
        (
            "[mcp_servers.docs]\nurl = \"http://x/mcp\"\noauth = { callback_port = 0 }\n",
            "mcp_servers.docs.oauth.callback_port: must be a port number from 1 to 65535",
        ),
        (
            "[mcp_servers.docs]\nurl = \"http://x/mcp\"\noauth = { callback_url = \"localhost:1\" }\n",
            "mcp_servers.docs.oauth.callback_url: `localhost:1` is not an http(s) URL",
        ),
        (
            "[mcp_servers.\"my docs\"]\ncommand = \"docs\"\n",
            "mcp_servers.my docs: server name `my docs` may only hold ASCII letters, digits, `_` and `-`",
        ),
    ];
    for (toml, expected) in cases {
        assert_eq!(
            load_err(toml, &[]),
            format!("{file}: {expected}"),
            "for {toml}"
        );
    }
}

#[test]
fn a_bad_override_names_the_override() {
    assert_eq!(
        load_err(
            "[mcp_servers.docs]\ncommand = \"docs\"\n",
            &["mcp_servers.docs.tool_timeout_sec=0"]
        ),
        "-c mcp_servers.docs.tool_timeout_sec=0: mcp_servers.docs.tool_timeout_sec: `0` is not \
         a positive number of seconds"
    );
}

/// The plugin files module names the user's config file without depending on this module.
#[test]
fn plugin_files_read_the_same_config_file() {
    assert_eq!(
        crate::plugin_files::USER_CONFIG_FILE,
        crate::config::CONFIG_FILE_NAME
    );
}
