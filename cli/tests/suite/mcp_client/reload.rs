//! `config/mcpServer/reload`: a server added to `config.toml` while a thread is loaded is
//! offered to that thread's next turn, and one removed is no longer offered. The server
//! added is Keel's own MCP server over Streamable HTTP (`keel mcp-server --listen`).

use keel_test_support::{ProcessBuilder, Script, Turn, assistant_message};
use serde_json::{Value, json};

use crate::suite::app_server::common::{World, until_turn_completed};

/// The tools the model was offered in request `index` whose names start with `mcp__`.
fn mcp_tools(world: &World, index: usize) -> Vec<String> {
    world
        .mock
        .requests()
        .get(index)
        .map(|request| request.tool_names())
        .unwrap_or_default()
        .into_iter()
        .filter(|name| name.starts_with("mcp__"))
        .collect()
}

async fn run_turn(
    server: &mut keel_test_support::AppServerProcess,
    thread: &str,
) -> anyhow::Result<()> {
    let turn = server.start_turn(thread, "go").await?;
    until_turn_completed(server, &turn).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_gives_loaded_threads_the_servers_the_config_names_now() -> anyhow::Result<()> {
    let helper_home = tempfile::tempdir()?;
    let mut helper = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["mcp-server", "--listen", "http://127.0.0.1:0"])
        .home_var("KEEL_HOME")
        .home_path(helper_home.path())
        .spawn()?;
    let url = helper.http_endpoint().await?;

    let script = Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
        Turn::new([assistant_message("three")]),
    ]);
    let world = World::new(script, &[]).await?;
    let config_file = world.home.path().join("config.toml");
    let original = std::fs::read_to_string(&config_file)?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    run_turn(&mut server, &thread).await?;
    assert!(mcp_tools(&world, 0).is_empty());

    std::fs::write(
        &config_file,
        format!("{original}\n[mcp_servers.helper]\nurl = \"{url}\"\n"),
    )?;
    let reloaded = server
        .request("config/mcpServer/reload", Value::Null)
        .await?;
    assert_eq!(reloaded, json!({}));
    run_turn(&mut server, &thread).await?;
    let offered = mcp_tools(&world, 1);
    assert!(
        offered.contains(&"mcp__helper__codex".to_string()),
        "the added server's tools are offered: {offered:?}"
    );

    std::fs::write(&config_file, &original)?;
    server
        .request("config/mcpServer/reload", Value::Null)
        .await?;
    run_turn(&mut server, &thread).await?;
    assert!(
        mcp_tools(&world, 2).is_empty(),
        "{:?}",
        mcp_tools(&world, 2)
    );
    drop(helper_home);
    Ok(())
}
