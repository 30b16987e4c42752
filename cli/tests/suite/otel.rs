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

pub(super) const WAIT: Duration = Duration::from_secs(30);

/// An inline TOML value, as written in `config.toml`.
pub(super) fn toml_value(text: &str) -> anyhow::Result<toml::Value> {
    let table: toml::Table = toml::from_str(&format!("value = {text}"))?;
    table
        .get("value")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no value in {text}"))
}

/// An OTLP exporter's value: `{ KIND = { endpoint = "ENDPOINT", MORE } }`.
pub(super) fn otlp(kind: &str, endpoint: &str, more: &str) -> anyhow::Result<toml::Value> {
    let more = if more.is_empty() {
        String::new()
    } else {
        format!(", {more}")
    };
    toml_value(&format!(
        r#"{{ {kind} = {{ endpoint = "{endpoint}"{more} }} }}"#
    ))
}

/// A mock serving `script`, a Keel home configured for it with `entries` (`otel.*` keys and
/// others), and an empty workspace.
pub(super) async fn configured(
    script: Script,
    entries: Vec<(&str, toml::Value)>,
) -> anyhow::Result<(MockModelServer, tempfile::TempDir, tempfile::TempDir)> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), entries)?;
    Ok((mock, home, tempfile::tempdir()?))
}

/// The log events named `name`.
pub(super) fn events<'a>(logs: &'a [ReceivedLog], name: &str) -> Vec<&'a ReceivedLog> {
    logs.iter().filter(|log| log.event_name == name).collect()
}

fn attribute<'a>(log: &'a ReceivedLog, key: &str) -> &'a str {
    log.attributes.get(key).map_or("", String::as_str)
}

pub(super) fn one_turn_with_a_command() -> Script {
    Script::new([
        Turn::new([shell_call("call-1", ["echo", "from-the-tool"])]),
        Turn::new([assistant_message("All done.")]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_sends_codex_log_events_linked_spans_and_metrics() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let (_mock, home, cwd) = configured(
        one_turn_with_a_command(),
        vec![
            (
                "otel.exporter",
                otlp(
                    "otlp-http",
                    &receiver.http_endpoint("logs"),
                    r#"protocol = "binary", headers = { "x-otlp-api-key" = "s3cret" }"#,
                )?,
            ),
            (
                "otel.trace_exporter",
                otlp(
                    "otlp-http",
                    &receiver.http_endpoint("traces"),
                    r#"protocol = "json""#,
                )?,
            ),
            (
                "otel.metrics_exporter",
                otlp(
                    "otlp-grpc",
                    &receiver.grpc_endpoint(),
                    r#"headers = { "x-otlp-meta" = "m1" }"#,
                )?,
            ),
            ("otel.environment", toml::Value::from("staging")),
        ],
    )
    .await?;
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
    let (_mock, home, cwd) = configured(
        one_turn_with_a_command(),
        vec![
            (
                "otel.exporter",
                otlp("otlp-grpc", &receiver.grpc_endpoint(), "")?,
            ),
            ("otel.log_user_prompt", toml::Value::from(true)),
            ("otel.metrics_exporter", toml::Value::from("statsig")),
        ],
    )
    .await?;
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
    let (_mock, home, cwd) = configured(
        one_turn_with_a_command(),
        vec![
            (
                "otel.exporter",
                otlp("otlp-http", &format!("http://{closed}/v1/logs"), "")?,
            ),
            (
                "otel.trace_exporter",
                otlp("otlp-grpc", &format!("http://{silent_addr}"), "")?,
            ),
            (
                "otel.metrics_exporter",
                otlp("otlp-http", &format!("http://{silent_addr}/v1/metrics"), "")?,
            ),
        ],
    )
    .await?;
    let out = keel_exec(home.path(), cwd.path(), &["run it"], None).await?;
    held.abort();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "All done.\n");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_exporter_is_refused_naming_the_key() -> anyhow::Result<()> {
    let (mock, home, cwd) = configured(
        Script::new([]),
        vec![(
            "otel.exporter",
            toml_value(r#"{ otlp-http = { endpoint = "localhost:4318" } }"#)?,
        )],
    )
    .await?;
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
