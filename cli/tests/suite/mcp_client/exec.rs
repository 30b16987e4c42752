//! `keel exec` with MCP servers: the model calls their tools and gets the results (text,
//! structured, images); a server that cannot start is reported and the turn goes on; a slow
//! call is cut at `tool_timeout_sec`; the servers end with `keel exec`.

use anyhow::Context as _;
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, write_config,
};
use serde_json::{Value, json};
use std::time::Duration;

use super::{stdio_server, wait_gone};
use crate::suite::exec::keel_exec;

fn output_text(mock: &MockModelServer, request: usize, call_id: &str) -> String {
    mock.requests()
        .get(request)
        .and_then(|r| r.tool_output(call_id).cloned())
        .map(|output| match output {
            Value::String(text) => text,
            other => other.to_string(),
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn the_model_calls_stdio_server_tools_and_gets_their_results() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-exec-{}", std::process::id());
    let mock = MockModelServer::start(Script::new([
        Turn::new([
            function_call(
                "m1",
                "mcp__everything__echo",
                json!({"message": "hello mcp"}).to_string(),
            ),
            function_call(
                "m2",
                "mcp__everything__get-sum",
                json!({"a": 2, "b": 3}).to_string(),
            ),
            function_call(
                "m3",
                "mcp__everything__get-structured-content",
                json!({"location": "Chicago"}).to_string(),
            ),
            function_call("m4", "mcp__everything__get-tiny-image", "{}".to_string()),
        ]),
        Turn::new([assistant_message("used the tools")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        stdio_server("everything", &marker)?,
    )?;
    let out = keel_exec(home.path(), ws.path(), &["--json", "use the tools"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);

    let first = &mock.requests()[0];
    let mcp_tools: Vec<String> = first
        .tool_names()
        .into_iter()
        .filter(|name| name.starts_with("mcp__"))
        .collect();
    for expected in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__trigger-long-running-operation",
    ] {
        assert!(
            mcp_tools.iter().any(|name| name == expected),
            "{mcp_tools:?}"
        );
    }
    for name in &mcp_tools {
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let echo = first.body["tools"]
        .as_array()
        .and_then(|tools| {
            tools
                .iter()
                .find(|tool| tool["name"] == "mcp__everything__echo")
        })
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(echo["parameters"]["type"], "object");
    assert_eq!(
        echo["parameters"]["properties"]["message"]["type"],
        "string"
    );

    assert!(
        output_text(&mock, 1, "m1").contains("Echo: hello mcp"),
        "{}",
        output_text(&mock, 1, "m1")
    );
    assert!(
        output_text(&mock, 1, "m2").contains('5'),
        "{}",
        output_text(&mock, 1, "m2")
    );
    let structured = output_text(&mock, 1, "m3");
    assert!(structured.contains("temperature"), "{structured}");
    assert!(output_text(&mock, 1, "m4").contains("[image image/png attached]"));
    let second = mock.requests()[1].body.to_string();
    assert!(
        second.contains("data:image/png;base64,"),
        "the image reaches the model"
    );

    let items: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect();
    let completed_calls = items
        .iter()
        .filter(|event| {
            event.to_string().contains("\"mcpToolCall\"")
                || event.to_string().contains("mcp_tool_call")
        })
        .count();
    assert!(completed_calls >= 4, "stdout: {}", out.stdout);
    wait_gone(&marker, std::time::Duration::from_secs(20)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn a_server_that_cannot_start_is_reported_and_the_others_work() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-broken-{}", std::process::id());
    let mock = MockModelServer::start(Script::new([
        Turn::new([function_call(
            "m1",
            "mcp__everything__echo",
            json!({"message": "still here"}).to_string(),
        )]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let mut config = stdio_server("everything", &marker)?;
    config.push((
        "mcp_servers.broken.command".to_string(),
        "/nonexistent/keel-mcp-server".into(),
    ));
    write_config(home.path(), &mock.uri(), config)?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    assert!(
        out.stderr.contains("MCP server `broken`")
            && out.stderr.contains("/nonexistent/keel-mcp-server"),
        "stderr: {}",
        out.stderr
    );
    assert!(output_text(&mock, 1, "m1").contains("Echo: still here"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn a_call_slower_than_tool_timeout_sec_is_cut_and_the_model_told() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-slow-{}", std::process::id());
    let mock = MockModelServer::start(Script::new([
        Turn::new([function_call(
            "m1",
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}).to_string(),
        )]),
        Turn::new([assistant_message("gave up")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let mut config = stdio_server("everything", &marker)?;
    config.push((
        "mcp_servers.everything.tool_timeout_sec".to_string(),
        1.into(),
    ));
    write_config(home.path(), &mock.uri(), config)?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let told = output_text(&mock, 1, "m1");
    assert!(
        told.contains("did not answer within 1 s") && told.contains("tool_timeout_sec"),
        "{told}"
    );
    Ok(())
}

/// The reference server listening on Streamable HTTP at `http://127.0.0.1:PORT/mcp`, killed
/// when dropped.
struct HttpServer {
    _child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    async fn start() -> anyhow::Result<Self> {
        use tokio::io::AsyncBufReadExt;
        let script = super::everything_script()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = tokio::process::Command::new("node")
            .arg(&script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let listening = async {
            while let Some(line) = lines.next_line().await? {
                if line.contains("listening on port") {
                    return Ok(());
                }
            }
            anyhow::bail!("the HTTP server exited before listening")
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), listening).await??;
        // Keep draining its log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn a_streamable_http_server_works_like_a_stdio_one() -> anyhow::Result<()> {
    let http = HttpServer::start().await?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([
            function_call(
                "h1",
                "mcp__remote__echo",
                json!({"message": "over http"}).to_string(),
            ),
            function_call(
                "h2",
                "mcp__remote__trigger-long-running-operation",
                json!({"duration": 1, "steps": 2}).to_string(),
            ),
        ]),
        Turn::new([assistant_message("http done")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "mcp_servers.remote.url",
                toml::Value::from(http.url.clone()),
            ),
            (
                "mcp_servers.remote.http_headers",
                toml::Value::Table(toml::map::Map::from_iter([(
                    "X-Keel-Test".to_string(),
                    toml::Value::from("1"),
                )])),
            ),
        ],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "http done\n");
    assert!(output_text(&mock, 1, "h1").contains("Echo: over http"));
    assert!(output_text(&mock, 1, "h2").contains("Long running operation completed"));
    assert!(
        out.stderr.contains("mcp: remote/echo"),
        "stderr: {}",
        out.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unset_bearer_token_variable_is_reported_by_name() -> anyhow::Result<()> {
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("fine")])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "mcp_servers.remote.url",
                toml::Value::from("http://127.0.0.1:9/mcp"),
            ),
            (
                "mcp_servers.remote.bearer_token_env_var",
                toml::Value::from("KEEL_TEST_UNSET_TOKEN"),
            ),
        ],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "fine\n");
    assert!(
        out.stderr.contains("MCP server `remote`: the environment variable `KEEL_TEST_UNSET_TOKEN` (bearer_token_env_var) is not set"),
        "stderr: {}",
        out.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_mcp_server_table_stops_keel_exec_naming_the_key() -> anyhow::Result<()> {
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("unused")])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("mcp_servers.docs.comand", toml::Value::from("docs-mcp"))],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("mcp_servers.docs.comand: unknown field `comand`"),
        "stderr: {}",
        out.stderr
    );
    assert!(mock.requests().is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_server_that_cannot_start_fails_the_turn_naming_it() -> anyhow::Result<()> {
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("unused")])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "mcp_servers.needed.command",
                toml::Value::from("/nonexistent/needed-mcp"),
            ),
            ("mcp_servers.needed.required", toml::Value::from(true)),
        ],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_ne!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("required MCP servers failed to start: MCP server `needed`: could not start `/nonexistent/needed-mcp`"),
        "stderr: {}",
        out.stderr
    );
    assert!(
        mock.requests().is_empty(),
        "no request without a required server"
    );
    Ok(())
}

/// The model lists the servers' resources and templates and reads one, through Codex's
/// `list_mcp_resources`, `list_mcp_resource_templates` and `read_mcp_resource`; an unknown
/// server is named in the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn the_model_lists_and_reads_mcp_resources() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-resources-{}", std::process::id());
    let mock = MockModelServer::start(Script::new([
        Turn::new([
            function_call("r1", "list_mcp_resources", "{}".to_string()),
            function_call(
                "r2",
                "list_mcp_resource_templates",
                json!({"server": "everything"}).to_string(),
            ),
            function_call(
                "r3",
                "read_mcp_resource",
                json!({"server": "everything", "uri": "demo://resource/static/document/architecture.md"})
                    .to_string(),
            ),
            function_call(
                "r4",
                "list_mcp_resources",
                json!({"server": "nowhere"}).to_string(),
            ),
        ]),
        Turn::new([assistant_message("read them")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        stdio_server("everything", &marker)?,
    )?;
    let out = keel_exec(home.path(), ws.path(), &["look at the resources"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let offered = mock.requests()[0].tool_names();
    for tool in [
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    ] {
        assert!(offered.iter().any(|name| name == tool), "{offered:?}");
    }

    let listed: Value = serde_json::from_str(&output_text(&mock, 1, "r1"))?;
    let resources = listed["resources"].as_array().cloned().unwrap_or_default();
    assert!(!resources.is_empty(), "{listed}");
    assert!(
        resources
            .iter()
            .all(|resource| resource["server"] == "everything" && resource["uri"].is_string()),
        "{listed}"
    );
    let templates: Value = serde_json::from_str(&output_text(&mock, 1, "r2"))?;
    assert!(
        templates["resourceTemplates"]
            .as_array()
            .is_some_and(|templates| !templates.is_empty()),
        "{templates}"
    );
    assert!(
        resources
            .iter()
            .any(|resource| resource["uri"] == "demo://resource/static/document/architecture.md"),
        "the pinned server lists the document read below: {listed}"
    );
    let read: Value = serde_json::from_str(&output_text(&mock, 1, "r3"))?;
    assert_eq!(read["server"], "everything");
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Architecture")),
        "{read}"
    );
    assert_eq!(
        output_text(&mock, 1, "r4"),
        "unknown MCP server `nowhere`; configured: everything"
    );
    wait_gone(&marker, std::time::Duration::from_secs(20)).await?;
    Ok(())
}

/// With `[otel]`, an MCP tool's call is traced as GenAI's `extension` tool of its server, and
/// its `codex.tool_result` names the server, as Codex's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn an_mcp_tool_call_is_traced_with_its_server() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-otel-{}", std::process::id());
    let receiver = keel_test_support::OtlpReceiver::start().await?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([function_call(
            "m1",
            "mcp__everything__echo",
            json!({"message": "traced"}).to_string(),
        )]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let mut config = stdio_server("everything", &marker)?;
    for (key, signal) in [("otel.exporter", "logs"), ("otel.trace_exporter", "traces")] {
        let mut otlp = toml::Table::new();
        otlp.insert("endpoint".into(), receiver.http_endpoint(signal).into());
        let mut exporter = toml::Table::new();
        exporter.insert("otlp-http".into(), otlp.into());
        config.push((key.to_string(), exporter.into()));
    }
    write_config(home.path(), &mock.uri(), config)?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    receiver
        .wait_until(
            "the MCP call's span and result",
            Duration::from_secs(30),
            |receiver| {
                receiver
                    .spans()
                    .iter()
                    .any(|span| span.name == "execute_tool mcp__everything__echo")
                    && receiver
                        .logs()
                        .iter()
                        .any(|log| log.event_name == "codex.tool_result")
            },
        )
        .await?;
    let spans = receiver.spans();
    let call = spans
        .iter()
        .find(|span| span.name == "execute_tool mcp__everything__echo")
        .context("no span for the MCP call")?;
    assert_eq!(call.attributes["gen_ai.tool.type"], "extension");
    assert_eq!(call.attributes["keel.mcp.server"], "everything");
    let logs = receiver.logs();
    let result = logs
        .iter()
        .find(|log| log.event_name == "codex.tool_result")
        .context("no tool result")?;
    assert_eq!(result.attributes["mcp_server"], "everything");
    assert_eq!(result.attributes["success"], "true");
    Ok(())
}
