//! Keel as an MCP client, against `@modelcontextprotocol/server-everything` (the reference
//! server from the npm registry, which nobody here wrote) over stdio and Streamable HTTP,
//! driven through the `keel` binary and the mock model.
//!
//! The server is found through `KEEL_MCP_EVERYTHING` (its `dist/index.js`; `.ci/run` installs
//! it and sets the variable). Without it these tests are reported as ignored, with the
//! reason; under `CI` they run and fail instead.

mod app_server;
mod conformance_client;
mod exec;
mod mcp_server;
mod oauth;
mod oauth_keyring;
mod oauth_refresh;
mod reload;

use std::path::PathBuf;

use anyhow::Context;

/// The reference server's entry script.
pub(crate) fn everything_script() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("KEEL_MCP_EVERYTHING")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .context(
            "KEEL_MCP_EVERYTHING is not set; these tests need the reference MCP server:\n  \
             npm install --prefix target/npm @modelcontextprotocol/server-everything@2026.8.31\n  \
             KEEL_MCP_EVERYTHING=$PWD/target/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js cargo test -p keel mcp_client",
        )?;
    anyhow::ensure!(
        path.is_file(),
        "KEEL_MCP_EVERYTHING names {}, which is not a file",
        path.display()
    );
    Ok(path)
}

/// Config entries for a stdio server `name` running the reference server; `marker` is an
/// extra argument the server ignores, so a test can find its process.
pub(crate) fn stdio_server(name: &str, marker: &str) -> anyhow::Result<Vec<(String, toml::Value)>> {
    let script = everything_script()?;
    Ok(vec![
        (format!("mcp_servers.{name}.command"), "node".into()),
        (
            format!("mcp_servers.{name}.args"),
            toml::Value::Array(vec![
                script.display().to_string().into(),
                "stdio".into(),
                marker.into(),
            ]),
        ),
    ])
}

/// Live (not zombie) processes whose command line holds `marker`.
pub(crate) fn processes_with(marker: &str) -> usize {
    keel_test_support::processes_whose_cmdline_contains(marker).len()
}

/// Waits until no live process holds `marker`, or fails after `within`.
pub(crate) async fn wait_gone(marker: &str, within: std::time::Duration) -> anyhow::Result<()> {
    let gone = async {
        while processes_with(marker) > 0 {
            // The process table has no change notification; look again shortly.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(within, gone)
        .await
        .map_err(|_| anyhow::anyhow!("a process holding {marker} outlived its owner"))
}
