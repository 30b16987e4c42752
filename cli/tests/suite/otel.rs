//! `[otel]` as Codex configures it: a `keel exec` turn sends Codex-named log events, linked
//! spans and metrics to a real OTLP receiver (HTTP protobuf, HTTP JSON and gRPC); prompts and
//! tool output stay out unless `log_user_prompt` lets them in; a collector that is down or
//! never answers costs the turn nothing; a bad endpoint is refused naming the key.

use std::collections::BTreeMap;
use std::time::Duration;

use keel_test_support::{
    MockModelServer, OtlpReceiver, OtlpTransport, ReceivedLog, Script, Turn, assistant_message,
    shell_call, write_config,
};

use super::exec::keel_exec;

const WAIT: Duration = Duration::from_secs(30);

/// An inline TOML value, as written in `config.toml`.
fn toml_value(text: &str) -> anyhow::Result<toml::Value> {
    let table: toml::Table = toml::from_str(&format!("value = {text}"))?;
    table
        .get("value")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no value in {text}"))
}

/// The log events named `name`.
fn events<'a>(logs: &'a [ReceivedLog], name: &str) -> Vec<&'a ReceivedLog> {
    logs.iter().filter(|log| log.event_name == name).collect()
}

fn attribute<'a>(log: &'a ReceivedLog, key: &str) -> &'a str {
    log.attributes.get(key).map_or("", String::as_str)
}

fn one_turn_with_a_command() -> Script {
    Script::new([
        Turn::new([shell_call("call-1", ["echo", "from-the-tool"])]),
        Turn::new([assistant_message("All done.")]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_sends_codex_log_events_linked_spans_and_metrics() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "otel.exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "{}", protocol = "binary", headers = {{ "x-otlp-api-key" = "s3cret" }} }} }}"#,
                    receiver.http_endpoint("logs")
                ))?,
            ),
            (
                "otel.trace_exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "{}", protocol = "json" }} }}"#,
                    receiver.http_endpoint("traces")
                ))?,
            ),
            (
                "otel.metrics_exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "{}", headers = {{ "x-otlp-meta" = "m1" }} }} }}"#,
                    receiver.grpc_endpoint()
                ))?,
            ),
            ("otel.environment", toml::Value::from("staging")),
        ],
    )?;
    let prompt = "please run the tool";
    let out = keel_exec(home.path(), cwd.path(), &[prompt], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "All done.\n");

    receiver
        .wait_until("the turn's records", WAIT, |receiver| {
            let logs = receiver.logs();
            !events(&logs, "codex.tool_result").is_empty()
                && receiver
                    .spans()
                    .iter()
                    .any(|span| span.name == "invoke_agent keel")
                && receiver
                    .metrics()
                    .iter()
                    .any(|metric| metric.name == "codex.turn.e2e_duration_ms")
        })
        .await?;

    // Log events: Codex's names and attributes, over HTTP protobuf with the headers.
    let logs = receiver.logs();
    assert!(
        logs.iter()
            .all(|log| log.transport == OtlpTransport::HttpProtobuf)
    );
    let starts = events(&logs, "codex.conversation_starts");
    assert_eq!(starts.len(), 1, "{logs:#?}");
    let conversation = attribute(starts[0], "conversation.id").to_string();
    assert!(!conversation.is_empty());
    assert_eq!(attribute(starts[0], "provider_name"), "mock");
    assert_eq!(attribute(starts[0], "approval_policy"), "never");
    assert_eq!(
        starts[0].resource.get("service.name").map(String::as_str),
        Some("keel")
    );
    assert_eq!(
        starts[0].resource.get("env").map(String::as_str),
        Some("staging")
    );
    for log in &logs {
        assert_eq!(attribute(log, "conversation.id"), conversation, "{log:?}");
        assert_eq!(attribute(log, "model"), "mock-model", "{log:?}");
        assert_eq!(attribute(log, "event.name"), log.event_name, "{log:?}");
    }
    let prompt_event = events(&logs, "codex.user_prompt");
    assert_eq!(prompt_event.len(), 1);
    assert_eq!(
        attribute(prompt_event[0], "prompt_length"),
        prompt.len().to_string()
    );
    assert_eq!(attribute(prompt_event[0], "prompt"), "[REDACTED]");
    let requests = events(&logs, "codex.api_request");
    assert_eq!(requests.len(), 2, "one per model request");
    for request in &requests {
        assert_eq!(attribute(request, "http.response.status_code"), "200");
        assert_eq!(attribute(request, "attempt"), "1");
    }
    let completed: Vec<_> = events(&logs, "codex.sse_event")
        .into_iter()
        .filter(|event| attribute(event, "event.kind") == "response.completed")
        .collect();
    assert_eq!(completed.len(), 2);
    for event in &completed {
        assert!(attribute(event, "input_token_count").parse::<u64>()? > 0);
    }
    let decision = events(&logs, "codex.tool_decision");
    assert_eq!(decision.len(), 1, "{logs:#?}");
    assert_eq!(attribute(decision[0], "tool_name"), "shell");
    assert_eq!(attribute(decision[0], "call_id"), "call-1");
    assert_eq!(attribute(decision[0], "decision"), "approved");
    assert_eq!(attribute(decision[0], "source"), "config");
    let result = events(&logs, "codex.tool_result");
    assert_eq!(result.len(), 1);
    assert_eq!(attribute(result[0], "tool_name"), "shell");
    assert_eq!(attribute(result[0], "success"), "true");
    assert!(attribute(result[0], "arguments").contains("from-the-tool"));
    assert_eq!(attribute(result[0], "output"), "[REDACTED]");
    let header_sets = receiver.headers();
    assert!(
        header_sets
            .iter()
            .any(|headers| headers.get("x-otlp-api-key").map(String::as_str) == Some("s3cret")),
        "{header_sets:?}"
    );

    // Spans, over HTTP JSON: the turn, its two model requests and its tool call, linked.
    let spans = receiver.spans();
    assert!(
        spans
            .iter()
            .all(|span| span.transport == OtlpTransport::HttpJson)
    );
    let turn = spans
        .iter()
        .find(|span| span.name == "invoke_agent keel")
        .ok_or_else(|| anyhow::anyhow!("no turn span in {spans:#?}"))?;
    assert_eq!(turn.parent_span_id, "");
    assert_eq!(turn.attributes["gen_ai.conversation.id"], conversation);
    assert_eq!(turn.attributes["keel.turn.outcome"], "completed");
    assert_eq!(turn.service_name, "keel");
    let chats: Vec<_> = spans
        .iter()
        .filter(|span| span.name == "chat mock-model")
        .collect();
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in &chats {
        assert_eq!(chat.trace_id, turn.trace_id);
        assert_eq!(chat.parent_span_id, turn.span_id);
        assert_eq!(chat.attributes["gen_ai.operation.name"], "chat");
        assert_eq!(chat.attributes["gen_ai.request.model"], "mock-model");
        assert!(chat.attributes["gen_ai.usage.input_tokens"].parse::<u64>()? > 0);
        assert!(
            chat.attributes
                .contains_key("gen_ai.response.time_to_first_chunk")
        );
        assert_eq!(chat.status_code, 1, "ok");
    }
    let finish: Vec<&str> = chats
        .iter()
        .map(|chat| chat.attributes["gen_ai.response.finish_reasons"].as_str())
        .collect();
    assert!(
        finish.contains(&"tool_calls") && finish.contains(&"stop"),
        "{finish:?}"
    );
    let tool = spans
        .iter()
        .find(|span| span.name == "execute_tool shell")
        .ok_or_else(|| anyhow::anyhow!("no tool span in {spans:#?}"))?;
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(tool.attributes["gen_ai.tool.call.id"], "call-1");
    assert_eq!(tool.attributes["gen_ai.tool.type"], "function");
    assert_eq!(tool.attributes["keel.tool.kind"], "function");
    assert_eq!(tool.attributes["keel.tool.decision"], "approved");
    assert_eq!(tool.attributes["keel.tool.success"], "true");
    // Log events sit in the spans they happened in.
    assert_eq!(requests[0].trace_id, turn.trace_id);
    assert!(chats.iter().any(|chat| chat.span_id == requests[0].span_id));
    assert_eq!(decision[0].span_id, tool.span_id);

    // Metrics, over gRPC with the metadata.
    let metrics = receiver.metrics();
    assert!(
        metrics
            .iter()
            .all(|metric| metric.transport == OtlpTransport::Grpc)
    );
    let names: BTreeMap<&str, &keel_test_support::ReceivedMetric> = metrics
        .iter()
        .map(|metric| (metric.name.as_str(), metric))
        .collect();
    for name in [
        "codex.thread.started",
        "keel.turn.count",
        "codex.turn.e2e_duration_ms",
        "codex.turn.ttft.duration_ms",
        "codex.turn.token_usage",
        "codex.tool.call",
        "codex.tool.call.duration_ms",
        "codex.api_request",
        "codex.api_request.duration_ms",
    ] {
        assert!(
            names.contains_key(name),
            "{name} missing from {:?}",
            names.keys()
        );
    }
    assert!(
        names["codex.tool.call"].points.iter().any(|point| {
            point.get("tool").map(String::as_str) == Some("shell")
                && point.get("success").map(String::as_str) == Some("true")
        }),
        "{:?}",
        names["codex.tool.call"]
    );
    assert!(
        names["keel.turn.count"]
            .points
            .iter()
            .any(|point| point.get("outcome").map(String::as_str) == Some("completed"))
    );
    assert!(
        header_sets
            .iter()
            .any(|headers| headers.get("x-otlp-meta").map(String::as_str) == Some("m1")),
        "{header_sets:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_tool_output_are_sent_only_when_log_user_prompt_allows() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "otel.exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "{}" }} }}"#,
                    receiver.grpc_endpoint()
                ))?,
            ),
            ("otel.log_user_prompt", toml::Value::from(true)),
            ("otel.metrics_exporter", toml::Value::from("statsig")),
        ],
    )?;
    let out = keel_exec(home.path(), cwd.path(), &["say the secret word"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // Codex's own collector: one line says Keel sends nothing there.
    assert_eq!(out.stderr.matches("statsig").count(), 1, "{}", out.stderr);
    receiver
        .wait_until("the tool result", WAIT, |receiver| {
            !events(&receiver.logs(), "codex.tool_result").is_empty()
        })
        .await?;
    let logs = receiver.logs();
    assert!(logs.iter().all(|log| log.transport == OtlpTransport::Grpc));
    let prompt = events(&logs, "codex.user_prompt");
    assert_eq!(attribute(prompt[0], "prompt"), "say the secret word");
    let result = events(&logs, "codex.tool_result");
    assert!(attribute(result[0], "output").contains("from-the-tool"));
    // Traces were not configured and metrics went to `statsig`: nothing else arrived.
    assert!(receiver.spans().is_empty());
    assert!(receiver.metrics().is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_or_silent_never_fails_a_turn() -> anyhow::Result<()> {
    // One port nothing listens on, one that accepts and never answers.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?
    };
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let silent_addr = silent.local_addr()?;
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            kept.push(stream);
        }
    });
    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "otel.exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "http://{closed}/v1/logs" }} }}"#
                ))?,
            ),
            (
                "otel.trace_exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "http://{silent_addr}" }} }}"#
                ))?,
            ),
            (
                "otel.metrics_exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "http://{silent_addr}/v1/metrics" }} }}"#
                ))?,
            ),
        ],
    )?;
    let out = keel_exec(home.path(), cwd.path(), &["run it"], None).await?;
    held.abort();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "All done.\n");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_exporter_is_refused_naming_the_key() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [(
            "otel.exporter",
            toml_value(r#"{ otlp-http = { endpoint = "localhost:4318" } }"#)?,
        )],
    )?;
    let out = keel_exec(home.path(), cwd.path(), &["hi"], None).await?;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("otel.exporter.otlp-http.endpoint")
            && out.stderr.contains("localhost:4318"),
        "{}",
        out.stderr
    );
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "{}\n[otel]\nexporter = {{ otlp-http = {{ endpoint = \"http://127.0.0.1:1/v1/logs\", protocol = \"xml\" }} }}\n",
            keel_test_support::config_toml(&mock.uri(), Vec::<(&str, toml::Value)>::new())?
        ),
    )?;
    let out = keel_exec(home.path(), cwd.path(), &["hi"], None).await?;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("otel.exporter") && out.stderr.contains("xml"),
        "{}",
        out.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_trace_continues_on_a_remote_exec_server() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    // The exec-server traces as any OpenTelemetry service is told to: by its environment.
    let _server_process;
    let url = {
        let mut server = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
            .env(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                receiver.http_endpoint("traces"),
            )
            .env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
            .env("OTEL_BSP_SCHEDULE_DELAY", "50")
            .spawn()?;
        let url = format!("ws://{}", server.websocket_address().await?);
        _server_process = server;
        url
    };
    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("exec_server_url", toml::Value::from(url)),
            (
                "otel.trace_exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "{}" }} }}"#,
                    receiver.grpc_endpoint()
                ))?,
            ),
        ],
    )?;
    let out = keel_exec(home.path(), cwd.path(), &["run it remotely"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let child_of_the_tool = |receiver: &OtlpReceiver| {
        let spans = receiver.spans();
        let tool = spans
            .iter()
            .find(|span| span.name == "execute_tool shell")?;
        spans
            .iter()
            .find(|span| {
                span.service_name == "keel-exec-server" && span.parent_span_id == tool.span_id
            })
            .map(|remote| (tool.clone(), remote.clone()))
    };
    receiver
        .wait_until("the remote process's span", WAIT, |receiver| {
            child_of_the_tool(receiver).is_some()
        })
        .await?;
    let (tool, remote) =
        child_of_the_tool(&receiver).ok_or_else(|| anyhow::anyhow!("no remote span"))?;
    assert_eq!(remote.trace_id, tool.trace_id);
    assert_eq!(remote.transport, OtlpTransport::HttpProtobuf);
    assert_eq!(tool.transport, OtlpTransport::Grpc);
    assert!(remote.name.starts_with("exec "), "{remote:?}");
    assert_eq!(remote.attributes["process.exit.code"], "0");
    let turn = receiver
        .spans()
        .into_iter()
        .find(|span| span.name == "invoke_agent keel")
        .ok_or_else(|| anyhow::anyhow!("no turn span"))?;
    assert_eq!(tool.parent_span_id, turn.span_id);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_trace_on_turn_start_is_the_turns_parent() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("traced")])])).await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "otel.trace_exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "{}" }} }}"#,
                    receiver.http_endpoint("traces")
                ))?,
            ),
            (
                "otel.metrics_exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "{}" }} }}"#,
                    receiver.grpc_endpoint()
                ))?,
            ),
        ],
    )?;
    let mut server = keel_test_support::AppServerProcess::spawn(
        keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("app-server")
            .home_path(home.path())
            .home_var("KEEL_HOME")
            .cwd(cwd.path())
            .env("OTEL_BSP_SCHEDULE_DELAY", "50")
            .env("OTEL_METRIC_EXPORT_INTERVAL", "100")
            .env_remove("RUST_LOG"),
    )?;
    server.initialize().await?;
    let thread = server
        .start_thread(serde_json::json!({"cwd": cwd.path()}))
        .await?;
    // Codex 0.171's request shape: an optional W3C trace context beside the params.
    let client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    server
        .send(&serde_json::json!({
            "id": 77,
            "method": "turn/start",
            "params": {"threadId": thread, "input": [{"type": "text", "text": "hi"}]},
            "trace": {"traceparent": format!("00-{client_trace}-{client_span}-01")},
        }))
        .await?;
    let started = server.read_response(77).await?;
    let turn_id = started["result"]["turn"]["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no turn id in {started}"))?
        .to_string();
    server.read_turn_completed(&turn_id).await?;
    // A malformed trace is ignored, not a failed request.
    server
        .send(&serde_json::json!({
            "id": 78, "method": "thread/list", "params": {}, "trace": "not an object",
        }))
        .await?;
    let listed = server.read_response(78).await?;
    assert!(listed.get("result").is_some(), "{listed}");
    receiver
        .wait_until("the turn's span", WAIT, |receiver| {
            receiver
                .spans()
                .iter()
                .any(|span| span.name == "invoke_agent keel")
        })
        .await?;
    let spans = receiver.spans();
    let turn = spans
        .iter()
        .find(|span| span.name == "invoke_agent keel")
        .ok_or_else(|| anyhow::anyhow!("no turn span"))?;
    assert_eq!(turn.trace_id, client_trace);
    assert_eq!(turn.parent_span_id, client_span);
    // The server's gauges, exported while it runs: this connection, and the thread it holds.
    let gauge = |receiver: &OtlpReceiver, name: &str| {
        receiver
            .metrics()
            .iter()
            .rev()
            .find(|metric| metric.name == name)
            .and_then(|metric| metric.values.first().copied())
    };
    receiver
        .wait_until("the server's gauges", WAIT, |receiver| {
            gauge(receiver, "keel.app_server.connections") == Some(1.0)
                && gauge(receiver, "keel.conversations.active") == Some(1.0)
        })
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_jobs_workers_continue_the_trace_of_the_call_that_started_it() -> anyhow::Result<()>
{
    let receiver = OtlpReceiver::start().await?;
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(
        ws.path().join("people.csv"),
        "id,name\n1,ann\n2,bob\n3,cy\n",
    )?;
    let args = serde_json::json!({
        "csv_path": "people.csv",
        "instruction": "Upper-case {name}",
        "id_column": "id",
        "output_csv_path": "results.csv",
    });
    let (mock, _stats) = super::agents::job_mock(
        vec![("job", "spawn_agents_on_csv", args)],
        super::agents::reporting_worker(),
    )
    .await?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "otel.trace_exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "{}" }} }}"#,
                    receiver.grpc_endpoint()
                ))?,
            ),
            (
                "otel.metrics_exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "{}" }} }}"#,
                    receiver.http_endpoint("metrics")
                ))?,
            ),
        ],
    )?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["-c", "features.enable_fanout=true", "run the job"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let job_span = |receiver: &OtlpReceiver| {
        receiver
            .spans()
            .into_iter()
            .find(|span| span.name == "execute_tool spawn_agents_on_csv")
    };
    let workers_of = |receiver: &OtlpReceiver, job: &keel_test_support::ReceivedSpan| {
        receiver
            .spans()
            .into_iter()
            .filter(|span| span.name == "invoke_agent keel" && span.parent_span_id == job.span_id)
            .collect::<Vec<_>>()
    };
    receiver
        .wait_until(
            "three workers' turns under the job's call",
            WAIT,
            |receiver| job_span(receiver).is_some_and(|job| workers_of(receiver, &job).len() == 3),
        )
        .await?;
    let job = job_span(&receiver).ok_or_else(|| anyhow::anyhow!("no job span"))?;
    let workers = workers_of(&receiver, &job);
    assert!(workers.iter().all(|worker| worker.trace_id == job.trace_id));
    // Three distinct worker conversations.
    let conversations: std::collections::BTreeSet<_> = workers
        .iter()
        .map(|worker| worker.attributes["gen_ai.conversation.id"].clone())
        .collect();
    assert_eq!(conversations.len(), 3);
    // Each worker's tool call is in its own turn, in the same trace.
    let reports: Vec<_> = receiver
        .spans()
        .into_iter()
        .filter(|span| span.name == "execute_tool report_agent_job_result")
        .collect();
    assert_eq!(reports.len(), 3);
    assert!(reports.iter().all(|report| {
        report.trace_id == job.trace_id
            && workers
                .iter()
                .any(|worker| worker.span_id == report.parent_span_id)
    }));
    // Finished rows are counted by status.
    let rows = receiver
        .metrics()
        .into_iter()
        .rev()
        .find(|metric| metric.name == "keel.agent_job.rows")
        .ok_or_else(|| anyhow::anyhow!("no keel.agent_job.rows"))?;
    let completed: f64 = rows
        .points
        .iter()
        .zip(&rows.values)
        .filter(|(point, _)| point.get("status").map(String::as_str) == Some("completed"))
        .map(|(_, value)| *value)
        .sum();
    assert_eq!(completed, 3.0, "{rows:?}");
    Ok(())
}

/// A certificate authority for a collector, with a server certificate for `localhost` and a
/// client certificate, made on the spot.
struct TestCa {
    ca: rcgen::Certificate,
    server: rcgen::Certificate,
    server_key: rcgen::KeyPair,
    client: rcgen::Certificate,
    client_key: rcgen::KeyPair,
}

impl TestCa {
    fn new() -> anyhow::Result<Self> {
        let ca_key = rcgen::KeyPair::generate()?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key)?;
        let server_key = rcgen::KeyPair::generate()?;
        let server = rcgen::CertificateParams::new(vec!["localhost".to_string()])?.signed_by(
            &server_key,
            &ca,
            &ca_key,
        )?;
        let client_key = rcgen::KeyPair::generate()?;
        let client = rcgen::CertificateParams::new(vec!["keel-client".to_string()])?.signed_by(
            &client_key,
            &ca,
            &ca_key,
        )?;
        Ok(Self {
            ca,
            server,
            server_key,
            client,
            client_key,
        })
    }

    /// A TLS terminator on a loopback port in front of `backend` that offers `alpn` and
    /// wants a client certificate from this CA; returns its port.
    async fn terminator(&self, backend: String, alpn: &[u8]) -> anyhow::Result<u16> {
        use tokio_rustls::rustls;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone())?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider.clone(),
        )
        .build()?;
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.server_key.serialize_der().into());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![self.server.der().clone()], key)?;
        config.alpn_protocols = vec![alpn.to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (acceptor, backend) = (acceptor.clone(), backend.clone());
                tokio::spawn(async move {
                    // No client certificate, or an untrusted server: the handshake ends here.
                    let Ok(mut client) = acceptor.accept(client).await else {
                        return;
                    };
                    if let Ok(mut server) = tokio::net::TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Ok(port)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exporters_speak_mutual_tls_with_the_configured_certificates() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let ca = TestCa::new()?;
    let http_backend = receiver
        .http_endpoint("logs")
        .trim_start_matches("http://")
        .trim_end_matches("/v1/logs")
        .to_string();
    let grpc_backend = receiver
        .grpc_endpoint()
        .trim_start_matches("http://")
        .to_string();
    let https = ca.terminator(http_backend, b"http/1.1").await?;
    let grpcs = ca.terminator(grpc_backend, b"h2").await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    // Relative paths: resolved against the Keel home, as Codex resolves them against its own.
    let certs = home.path().join("certs");
    std::fs::create_dir_all(&certs)?;
    std::fs::write(certs.join("ca.pem"), ca.ca.pem())?;
    std::fs::write(certs.join("client.pem"), ca.client.pem())?;
    std::fs::write(certs.join("client-key.pem"), ca.client_key.serialize_pem())?;
    let tls = r#"tls = { ca-certificate = "certs/ca.pem", client-certificate = "certs/client.pem", client-private-key = "certs/client-key.pem" }"#;
    let exporters = |with_tls: bool| -> anyhow::Result<Vec<(&'static str, toml::Value)>> {
        let tls = if with_tls { tls } else { "" };
        let comma = if with_tls { "," } else { "" };
        Ok(vec![
            (
                "otel.exporter",
                toml_value(&format!(
                    r#"{{ otlp-http = {{ endpoint = "https://localhost:{https}/v1/logs"{comma} {tls} }} }}"#
                ))?,
            ),
            (
                "otel.trace_exporter",
                toml_value(&format!(
                    r#"{{ otlp-grpc = {{ endpoint = "https://localhost:{grpcs}"{comma} {tls} }} }}"#
                ))?,
            ),
        ])
    };

    // Without the CA and the client certificate nothing gets through, and the turn is fine.
    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    write_config(home.path(), &mock.uri(), exporters(false)?)?;
    let out = keel_exec(home.path(), cwd.path(), &["untrusted"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(receiver.logs().is_empty() && receiver.spans().is_empty());

    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    write_config(home.path(), &mock.uri(), exporters(true)?)?;
    let out = keel_exec(home.path(), cwd.path(), &["over tls"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    receiver
        .wait_until("log events and spans through TLS", WAIT, |receiver| {
            !events(&receiver.logs(), "codex.tool_result").is_empty()
                && receiver
                    .spans()
                    .iter()
                    .any(|span| span.name == "invoke_agent keel")
        })
        .await?;
    assert!(
        receiver
            .logs()
            .iter()
            .all(|log| log.transport == OtlpTransport::HttpProtobuf)
    );
    assert!(
        receiver
            .spans()
            .iter()
            .all(|span| span.transport == OtlpTransport::Grpc)
    );
    Ok(())
}
