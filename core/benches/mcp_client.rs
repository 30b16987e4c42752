//! What Keel's MCP client costs, against the reference server
//! `@modelcontextprotocol/server-everything` (Node, from npm) over stdio. Not part of
//! `cargo test`; run with
//! `KEEL_MCP_EVERYTHING=$PWD/target/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js cargo bench -p keel-core --bench mcp_client`
//! (`.ci/run` installs the server there).
//!
//! Three figures, each the median (and range) of several runs:
//! 1. handshake: starting one server and listing its tools (spawn `node`, `initialize`,
//!    `tools/list`), alone, and three at once;
//! 2. time to the first model request of a new conversation: with no MCP server, and with
//!    three configured (the first request waits for every server's tool list);
//! 3. per-call cost of an MCP tool call (`echo`): through rmcp's client directly (the server's
//!    own time plus transport), and through a Keel turn (the model's `function_call` to the
//!    `mcp_tool_call_end` event, approval check and events included).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use keel_core::{Config, ConfigEnv, ConfigOverrides, ConversationManager};
use keel_protocol::{EventMsg, InputItem, Op};
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, write_config,
};
use serde_json::json;

const RUNS: usize = 7;
const CALLS: usize = 200;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

fn everything() -> anyhow::Result<String> {
    std::env::var("KEEL_MCP_EVERYTHING").context(
        "set KEEL_MCP_EVERYTHING to server-everything's dist/index.js \
         (npm install --prefix target/npm @modelcontextprotocol/server-everything@2026.8.31)",
    )
}

fn server_entries(script: &str, count: usize) -> Vec<(String, toml::Value)> {
    (0..count)
        .flat_map(|i| {
            [
                (
                    format!("mcp_servers.s{i}.command"),
                    toml::Value::from("node"),
                ),
                (
                    format!("mcp_servers.s{i}.args"),
                    toml::Value::Array(vec![script.into(), "stdio".into()]),
                ),
            ]
        })
        .collect()
}

struct World {
    mock: MockModelServer,
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl World {
    async fn new(script: Script, entries: &[(String, toml::Value)]) -> anyhow::Result<Self> {
        let mock = MockModelServer::start(script).await?;
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        write_config(home.path(), &mock.uri(), entries.iter().cloned())?;
        Ok(Self {
            mock,
            home,
            workspace,
        })
    }

    fn config(&self) -> anyhow::Result<Config> {
        let env = ConfigEnv {
            process_cwd: self.workspace.path().to_path_buf(),
            openai_base_url: None,
            oss_base_url: None,
        };
        Ok(Config::load_with_env(
            self.home.path(),
            Vec::new(),
            ConfigOverrides::default(),
            &env,
        )?)
    }
}

fn summary(label: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let median = samples[samples.len() / 2];
    println!(
        "{label:<58} median {:>8.2} ms   range {:.2}–{:.2} ms",
        median.as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
    median
}

async fn handshake(script: &str, servers: usize) -> anyhow::Result<Duration> {
    let world = World::new(Script::new([]), &server_entries(script, servers)).await?;
    let config = world.config()?;
    let manager = ConversationManager::with_env(Arc::new(|_| None));
    let started = Instant::now();
    let states = manager.mcp_server_states(&config).await;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        states.iter().all(|s| s.tools.is_ok()),
        "a server failed: {states:?}"
    );
    Ok(elapsed)
}

async fn first_request(script: &str, servers: usize) -> anyhow::Result<Duration> {
    let world = World::new(
        Script::new([Turn::new([assistant_message("ok")])]),
        &server_entries(script, servers),
    )
    .await?;
    let config = world.config()?;
    let manager = ConversationManager::with_env(Arc::new(|_| None));
    let started = Instant::now();
    let new = manager.new_conversation(config).await?;
    new.conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text("hi")],
        })
        .await?;
    loop {
        let event =
            tokio::time::timeout(Duration::from_secs(60), new.conversation.next_event()).await??;
        match event.msg {
            // The first event that needs the model's answer: the request went out just before.
            EventMsg::AgentMessageDelta(_) | EventMsg::AgentMessage(_) => break,
            EventMsg::Error(error) => anyhow::bail!("{}", error.message),
            _ => {}
        }
    }
    let elapsed = started.elapsed();
    anyhow::ensure!(world.mock.requests().len() == 1);
    Ok(elapsed)
}

async fn raw_calls(script: &str) -> anyhow::Result<Duration> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let mut command = tokio::process::Command::new("node");
    command.arg(script).arg("stdio");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let client = ().serve(transport).await?;
    let mut arguments = serde_json::Map::new();
    arguments.insert("message".to_string(), json!("hello"));
    let started = Instant::now();
    for _ in 0..CALLS {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = Some(arguments.clone());
        client.peer().call_tool(params).await?;
    }
    Ok(started.elapsed() / CALLS as u32)
}

async fn keel_calls(script: &str) -> anyhow::Result<Duration> {
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            function_call(
                format!("c{i}"),
                "mcp__s0__echo",
                json!({"message": "hello"}).to_string(),
            )
        })
        .collect();
    let world = World::new(
        Script::new([Turn::new(calls), Turn::new([assistant_message("done")])]),
        &server_entries(script, 1),
    )
    .await?;
    let manager = ConversationManager::with_env(Arc::new(|_| None));
    let new = manager.new_conversation(world.config()?).await?;
    new.conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text("go")],
        })
        .await?;
    let mut first_begin = None;
    let mut ended = 0;
    loop {
        let event =
            tokio::time::timeout(Duration::from_secs(60), new.conversation.next_event()).await??;
        match event.msg {
            EventMsg::McpToolCallBegin(_) if first_begin.is_none() => {
                first_begin = Some(Instant::now())
            }
            EventMsg::McpToolCallEnd(end) => {
                anyhow::ensure!(end.result.is_ok(), "{:?}", end.result);
                ended += 1;
                if ended == CALLS {
                    break;
                }
            }
            EventMsg::Error(error) => anyhow::bail!("{}", error.message),
            _ => {}
        }
    }
    let first = first_begin.context("no call began")?;
    Ok(first.elapsed() / CALLS as u32)
}

async fn run() -> anyhow::Result<()> {
    keel_core::install_tls_provider();
    let script = everything()?;
    println!("server-everything over stdio, {RUNS} runs each\n");
    let mut one = Vec::new();
    let mut three = Vec::new();
    for _ in 0..RUNS {
        one.push(handshake(&script, 1).await?);
        three.push(handshake(&script, 3).await?);
    }
    summary(
        "handshake, one server (spawn + initialize + tools/list)",
        one,
    );
    let slowest = summary("handshake, three servers at once (the slowest)", three);

    let mut none = Vec::new();
    let mut with_three = Vec::new();
    for _ in 0..RUNS {
        none.push(first_request(&script, 0).await?);
        with_three.push(first_request(&script, 3).await?);
    }
    let base = summary("first model request, no MCP server", none);
    let full = summary("first model request, three MCP servers", with_three);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "  → three servers delay the first request by {:.1} ms; that is {:+.1} ms against \
         three handshakes at once",
        ms(full) - ms(base),
        ms(full) - ms(slowest)
    );

    let mut raw = Vec::new();
    let mut keel = Vec::new();
    for _ in 0..RUNS {
        raw.push(raw_calls(&script).await?);
        keel.push(keel_calls(&script).await?);
    }
    let raw = summary(
        &format!("echo call through rmcp directly (per call, {CALLS} calls)"),
        raw,
    );
    let keel = summary(
        &format!("echo call through a Keel turn (per call, {CALLS} calls)"),
        keel,
    );
    println!(
        "  → Keel's per-call overhead: {:.2} ms",
        keel.saturating_sub(raw).as_secs_f64() * 1e3
    );
    Ok(())
}
