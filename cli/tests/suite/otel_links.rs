//! A turn's trace across processes: a client's span on `turn/start` is the turn's parent, a
//! remote exec-server's processes are children of the tool calls that started them, an agent
//! job's workers continue the call that started the job; and the app-server's gauges.

use keel_test_support::{
    OtlpReceiver, OtlpTransport, Script, Turn, assistant_message, write_config,
};

use super::exec::keel_exec;
use super::otel::{WAIT, configured, one_turn_with_a_command, otlp};

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
    let (_mock, home, cwd) = configured(
        one_turn_with_a_command(),
        vec![
            ("exec_server_url", toml::Value::from(url)),
            (
                "otel.trace_exporter",
                otlp("otlp-grpc", &receiver.grpc_endpoint(), "")?,
            ),
        ],
    )
    .await?;
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

/// An initialized app-server on `home` that exports spans and metrics within 100 ms.
async fn app_server(
    home: &std::path::Path,
    cwd: &std::path::Path,
) -> anyhow::Result<keel_test_support::AppServerProcess> {
    let mut server = keel_test_support::AppServerProcess::spawn(
        keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("app-server")
            .home_path(home)
            .home_var("KEEL_HOME")
            .cwd(cwd)
            .env("OTEL_BSP_SCHEDULE_DELAY", "50")
            .env("OTEL_METRIC_EXPORT_INTERVAL", "100")
            .env_remove("RUST_LOG"),
    )?;
    server.initialize().await?;
    Ok(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_trace_on_turn_start_is_the_turns_parent() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let (_mock, home, cwd) = configured(
        Script::new([Turn::new([assistant_message("traced")])]),
        vec![
            (
                "otel.trace_exporter",
                otlp("otlp-http", &receiver.http_endpoint("traces"), "")?,
            ),
            (
                "otel.metrics_exporter",
                otlp("otlp-grpc", &receiver.grpc_endpoint(), "")?,
            ),
        ],
    )
    .await?;
    let mut server = app_server(home.path(), cwd.path()).await?;
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
    server.kill().await?;

    // Another server on the home, no thread loaded: its gauges are exported from its start,
    // and a message queued for the (unloaded) thread waits there.
    let mut server = app_server(home.path(), cwd.path()).await?;
    server
        .request(
            "thread/queue/add",
            serde_json::json!({
                "threadId": thread,
                "clientUserMessageId": "later",
                "input": [{"type": "text", "text": "later"}],
            }),
        )
        .await?;
    receiver
        .wait_until("the queue's depth", WAIT, |receiver| {
            gauge(receiver, "keel.thread_queue.depth") == Some(1.0)
                && gauge(receiver, "keel.conversations.active") == Some(0.0)
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
                otlp("otlp-grpc", &receiver.grpc_endpoint(), "")?,
            ),
            (
                "otel.metrics_exporter",
                otlp("otlp-http", &receiver.http_endpoint("metrics"), "")?,
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

/// A client's `traceparent` on `command/exec` is only a hint: one that is malformed, or far
/// too long, neither fails the command nor plants a parent in the server's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bogus_traceparent_on_command_exec_is_ignored() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let mut server = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .arg("exec-server")
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            receiver.http_endpoint("traces"),
        )
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env_remove("RUST_LOG")
        .spawn()?;
    server
        .request("initialize", serde_json::json!({"clientName": "attacker"}))
        .await?;
    server
        .send_notification("initialized", serde_json::json!({}))
        .await?;
    let bogus = [
        "not a traceparent".to_string(),
        format!("00-{}-{}-01", "f".repeat(32), "0".repeat(16)),
        format!("00-{}-00f067aa0ba902b7-01", "a".repeat(1 << 20)),
    ];
    for traceparent in &bogus {
        let started = server
            .request(
                "command/exec",
                serde_json::json!({
                    "argv": ["true"], "cwd": "/", "env": {}, "tty": false,
                    "traceparent": traceparent,
                }),
            )
            .await?;
        assert!(started["sessionId"].is_string(), "{started}");
    }
    receiver
        .wait_until("the three processes' spans", WAIT, |receiver| {
            receiver.spans().len() >= 3
        })
        .await?;
    for span in receiver.spans() {
        assert_eq!(span.parent_span_id, "", "{span:?}");
        assert_eq!(span.name, "exec true");
    }
    Ok(())
}
