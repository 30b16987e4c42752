//! Plugins and marketplaces over `keel app-server`, with Codex 0.171's shapes: a local
//! marketplace added, its plugin listed, read (skills, hooks, MCP servers), installed (its
//! skill then in `skills/list` with `pluginId`), uninstalled; a repository's own marketplace
//! found through `cwds`; what needs a ChatGPT account refused with the reason.

use keel_test_support::Script;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

fn write(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// A marketplace `tools` at `root` (Claude Code's manifest location) with plugin `alpha`.
fn marketplace(root: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let manifest = root.join(".claude-plugin/marketplace.json");
    write(
        &manifest,
        &json!({"name": "tools", "plugins": [
            {"name": "alpha", "source": "./alpha", "category": "dev"},
        ]})
        .to_string(),
    )?;
    let plugin = root.join("alpha");
    write(
        &plugin.join(".codex-plugin/plugin.json"),
        &json!({"name": "alpha", "version": "0.3.0", "description": "Alpha tools",
                "keywords": ["demo"], "interface": {"displayName": "Alpha"}})
        .to_string(),
    )?;
    write(
        &plugin.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greets people.\n---\nHello.\n",
    )?;
    write(
        &plugin.join("hooks/hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )?;
    write(
        &plugin.join(".mcp.json"),
        r#"{"mcpServers": {"alpha-mcp": {"command": "alpha-server"}}}"#,
    )?;
    Ok(manifest)
}

async fn error_of(
    server: &mut keel_test_support::AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<(i64, String)> {
    let id = server.send_request(method, params).await?;
    let response = server.read_response(id).await?;
    Ok((
        response["error"]["code"].as_i64().unwrap_or_default(),
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_marketplace_is_added_listed_read_installed_and_uninstalled() -> anyhow::Result<()>
{
    let world = World::new(Script::new([]), &[]).await?;
    let market = tempfile::tempdir()?;
    let manifest = marketplace(market.path())?;
    let root = std::fs::canonicalize(market.path())?;
    let manifest = std::fs::canonicalize(manifest)?;
    let mut server = world.server().await?;

    let empty = server.request("plugin/list", json!({})).await?;
    assert_eq!(
        empty,
        json!({"marketplaces": [], "marketplaceLoadErrors": [], "featuredPluginIds": []})
    );
    let added = server
        .request("marketplace/add", json!({"source": market.path()}))
        .await?;
    assert_eq!(
        added,
        json!({"marketplaceName": "tools", "installedRoot": root, "alreadyAdded": false})
    );
    let again = server
        .request("marketplace/add", json!({"source": market.path()}))
        .await?;
    assert_eq!(again["alreadyAdded"], true);

    let listed = server.request("plugin/list", json!({})).await?;
    let entry = &listed["marketplaces"][0];
    assert_eq!(entry["name"], "tools");
    assert_eq!(entry["path"], json!(manifest));
    let summary = &entry["plugins"][0];
    assert_eq!(summary["id"], "alpha@tools");
    assert_eq!(summary["installed"], false);
    assert_eq!(summary["enabled"], false);
    assert_eq!(summary["localVersion"], "0.3.0");
    assert_eq!(
        summary["source"],
        json!({"type": "local", "path": root.join("alpha")})
    );
    assert_eq!(summary["installPolicy"], "AVAILABLE");
    assert_eq!(summary["authPolicy"], "ON_INSTALL");
    assert_eq!(summary["interface"]["displayName"], "Alpha");
    assert_eq!(summary["interface"]["category"], "dev");
    assert_eq!(summary["keywords"], json!(["demo"]));

    let read = server
        .request(
            "plugin/read",
            json!({"pluginName": "alpha", "marketplacePath": manifest}),
        )
        .await?;
    let plugin = &read["plugin"];
    assert_eq!(plugin["marketplaceName"], "tools");
    assert_eq!(plugin["description"], "Alpha tools");
    assert_eq!(plugin["skills"][0]["name"], "alpha:greet");
    assert_eq!(
        plugin["hooks"],
        json!([{"key": "alpha@tools:hooks/hooks.json:pre_tool_use:0:0", "eventName": "preToolUse"}])
    );
    assert_eq!(plugin["mcpServers"], json!(["alpha-mcp"]));

    let installed = server
        .request(
            "plugin/install",
            json!({"pluginName": "alpha", "marketplacePath": manifest}),
        )
        .await?;
    assert_eq!(
        installed,
        json!({"authPolicy": "ON_INSTALL", "appsNeedingAuth": []})
    );
    let only_installed = server.request("plugin/installed", json!({})).await?;
    assert_eq!(
        only_installed["marketplaces"][0]["plugins"][0]["installed"],
        true
    );
    assert_eq!(
        only_installed["marketplaces"][0]["plugins"][0]["enabled"],
        true
    );
    let skills = server
        .request("skills/list", json!({"cwds": [world.ws()]}))
        .await?;
    let greet = skills["data"][0]["skills"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|skill| skill["name"] == "alpha:greet")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(greet["pluginId"], "alpha@tools", "{skills}");
    assert_eq!(greet["scope"], "user");
    let statuses = server.request("mcpServerStatus/list", json!({})).await?;
    let alpha = statuses["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|status| status["name"] == "alpha-mcp")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(alpha["pluginId"], "alpha@tools", "{statuses}");

    let uninstalled = server
        .request("plugin/uninstall", json!({"pluginId": "alpha@tools"}))
        .await?;
    assert_eq!(uninstalled, json!({}));
    let none = server.request("plugin/installed", json!({})).await?;
    assert_eq!(none["marketplaces"], json!([]));
    let removed = server
        .request("marketplace/remove", json!({"marketplaceName": "tools"}))
        .await?;
    assert_eq!(
        removed,
        json!({"marketplaceName": "tools", "installedRoot": null})
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_marketplace_is_found_and_account_only_requests_say_why() -> anyhow::Result<()>
{
    let world = World::new(Script::new([]), &[]).await?;
    let repo = world.ws().join("repo");
    // A repository as git lays one out (an empty `.git` does not count).
    write(&repo.join(".git/HEAD"), "ref: refs/heads/main\n")?;
    marketplace(&repo)?;
    let deep = repo.join("src/deep");
    std::fs::create_dir_all(&deep)?;
    let mut server = world.server().await?;

    let listed = server
        .request("plugin/list", json!({"cwds": [deep]}))
        .await?;
    assert_eq!(listed["marketplaces"][0]["name"], "tools", "{listed}");

    let refusals = [
        (
            "plugin/list",
            json!({"marketplaceKinds": ["shared-with-me"]}),
            "chatgpt authentication required",
        ),
        (
            "plugin/read",
            json!({"pluginName": "alpha", "remoteMarketplaceName": "x"}),
            "chatgpt authentication required",
        ),
        (
            "plugin/install",
            json!({"pluginName": "alpha"}),
            "plugin/install requires exactly one of marketplacePath or remoteMarketplaceName",
        ),
        (
            "plugin/uninstall",
            json!({"pluginId": "alpha"}),
            "resolve remote plugin before uninstall",
        ),
        (
            "plugin/skill/read",
            json!({"remoteMarketplaceName": "m", "remotePluginId": "p", "skillName": "s"}),
            "read remote plugin skill details",
        ),
        (
            "marketplace/upgrade",
            json!({"marketplaceName": "tools"}),
            "marketplace `tools` is not configured as a Git marketplace",
        ),
        (
            "marketplace/remove",
            json!({"marketplaceName": "tools"}),
            "marketplace `tools` is not configured or installed",
        ),
        (
            "marketplace/add",
            json!({"source": world.ws()}),
            "marketplace root does not contain a supported manifest",
        ),
    ];
    for (method, params, expected) in refusals {
        let (code, message) = error_of(&mut server, method, params).await?;
        assert_eq!(code, -32600, "{method}: {message}");
        assert!(message.contains(expected), "{method}: {message}");
    }
    // What comes with a ChatGPT account or with Windows: neutral answers, as Codex gives them
    // under API-key authentication on Linux.
    let apps = server.request("app/list", json!({})).await?;
    assert_eq!(apps, json!({"data": [], "nextCursor": null}));
    let readiness = server
        .request("windowsSandbox/readiness", Value::Null)
        .await?;
    assert_eq!(readiness, json!({"status": "notConfigured"}));
    let reconciled = server.request("plugin/reconcile", json!({})).await?;
    assert_eq!(
        reconciled,
        json!({"changedPlugins": [], "failedRemotePluginIds": [], "failedMaterializationRemotePluginIds": []})
    );
    Ok(())
}
