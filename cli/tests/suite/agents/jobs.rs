//! `spawn_agents_on_csv` end to end through `keel exec`: the fan-out, rows that never report,
//! time out or report badly, `stop`, and malformed CSVs.

use std::sync::Arc;
use std::time::Duration;

use keel_test_support::{Turn, assistant_message, write_config};
use serde_json::json;

use super::{job_mock, read_csv, report_call, reporting_worker};
use crate::suite::exec::keel_exec;

/// The columns the results CSV adds after the input's.
const RESULT_COLUMNS: [&str; 10] = [
    "job_id",
    "item_id",
    "row_index",
    "source_id",
    "status",
    "attempt_count",
    "last_error",
    "result_json",
    "reported_at",
    "completed_at",
];

fn column(header: &[String], name: &str) -> anyhow::Result<usize> {
    header
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| anyhow::anyhow!("no column {name} in {header:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_rows_fan_out_64_at_once_and_keel_exec_ends_on_its_own_turn() -> anyhow::Result<()>
{
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    // A BOM, quoted fields with commas, quotes and a newline: the names must come back whole.
    let mut csv = String::from("\u{feff}id,name\n");
    let mut names = Vec::new();
    for i in 1..=100 {
        let name = match i {
            3 => "Smith, \"Jr\"\nII".to_string(),
            7 => "comma, inside".to_string(),
            _ => format!("name{i}"),
        };
        csv.push_str(&format!("id{i},\"{}\"\n", name.replace('"', "\"\"")));
        names.push(name);
    }
    std::fs::write(ws.path().join("people.csv"), csv)?;
    let args = json!({
        "csv_path": "people.csv",
        "instruction": "Upper-case {name}",
        "id_column": "id",
        "output_csv_path": "out/results.csv",
        "max_concurrency": 64,
    });
    let (mock, stats) = job_mock(
        vec![("job", "spawn_agents_on_csv", args)],
        reporting_worker(),
    )
    .await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    // The flags a Codex user passes are accepted as they are.
    let out = keel_exec(
        home.path(),
        ws.path(),
        &[
            "-c",
            "features.enable_fanout=true",
            "-c",
            "agents.max_threads=64",
            "run the job",
        ],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.starts_with("FINAL "), "{}", out.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(out.stdout.trim_start_matches("FINAL ").trim())?;
    assert_eq!(summary["total"], 100, "{summary}");
    assert_eq!(summary["completed"], 100, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");

    let (header, rows) = read_csv(&ws.path().join("out/results.csv"))?;
    let mut expected_header = vec!["id".to_string(), "name".to_string()];
    expected_header.extend(RESULT_COLUMNS.iter().map(|c| c.to_string()));
    assert_eq!(header, expected_header);
    assert_eq!(rows.len(), 100);
    let (status, result, source, index) = (
        column(&header, "status")?,
        column(&header, "result_json")?,
        column(&header, "source_id")?,
        column(&header, "row_index")?,
    );
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[1], names[i], "row {i} in input order, whole");
        assert_eq!(row[status], "completed", "{row:?}");
        assert_eq!(row[source], format!("id{}", i + 1));
        assert_eq!(row[index], i.to_string());
        let result: serde_json::Value = serde_json::from_str(&row[result])?;
        assert_eq!(result["upper"], names[i].to_uppercase());
    }
    // Each worker ran once; never more than the cap at once, and truly in parallel.
    let starts = stats.first_requests();
    assert_eq!(starts.len(), 100);
    assert!(starts.values().all(|n| *n == 1), "{starts:?}");
    let max = stats.max_alive();
    assert!((2..=64).contains(&max), "max workers at once: {max}");
    mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_that_do_not_report_time_out_or_report_badly_are_recorded_and_bad_csvs_are_named()
-> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("ragged.csv"), "a,b\n1,2\n3,4,5\n")?;
    std::fs::write(
        ws.path().join("rows.csv"),
        "name\nsilent\nslow\nbad\ngood\n",
    )?;
    let schema = json!({
        "type": "object",
        "required": ["ok"],
        "properties": {"ok": {"type": "boolean"}}
    });
    let worker: super::WorkerScript = Arc::new(|worker, request| {
        let name = worker.row["name"].as_str().unwrap_or_default();
        let outputs = request.tool_output_call_ids();
        match (name, outputs.len()) {
            ("silent", _) => (Turn::new([assistant_message("I forgot to report")]), true),
            // Longer than max_runtime_seconds: the worker is stopped while it streams.
            ("slow", _) => (
                Turn::new([assistant_message("too late")])
                    .with_event_delay(Duration::from_secs(20)),
                true,
            ),
            ("bad", 0) => (report_call(worker, "1", json!({"ok": "yes"}), false), false),
            ("bad", 1) => (report_call(worker, "2", json!({"ok": true}), false), false),
            // A report naming another job, then the right one, then a second report.
            ("good", 0) => {
                let mut wrong = worker.clone();
                wrong.job_id = "no-such-job".to_string();
                (report_call(&wrong, "1", json!({"ok": true}), false), false)
            }
            ("good", 1) => (report_call(worker, "2", json!({"ok": true}), false), false),
            ("good", 2) => (report_call(worker, "3", json!({"ok": false}), false), false),
            (_, 0) => (report_call(worker, "1", json!({"ok": true}), false), false),
            _ => (Turn::new([assistant_message("done")]), true),
        }
    });
    let calls = vec![
        (
            "ragged",
            "spawn_agents_on_csv",
            json!({"csv_path": "ragged.csv", "instruction": "x {a}"}),
        ),
        (
            "job",
            "spawn_agents_on_csv",
            json!({
                "csv_path": "rows.csv",
                "instruction": "Check {name}",
                "output_schema": schema,
                "max_runtime_seconds": 2,
            }),
        ),
    ];
    let (mock, _stats) = job_mock(calls, worker).await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 4)])?;
    let out = keel_exec(home.path(), ws.path(), &["run the job"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    // The malformed CSV is an error for the model naming the row, not a crash.
    let requests = mock.requests();
    let ragged = requests
        .iter()
        .find_map(|r| r.tool_output("ragged"))
        .and_then(|o| o.as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        ragged.contains("row 2 (line 3)") && ragged.contains("has 3 fields but the header has 2"),
        "{ragged}"
    );
    // A result that does not match the schema is refused with the reason; the retry counts.
    let refused = requests
        .iter()
        .find_map(|r| {
            r.tool_output_call_ids()
                .into_iter()
                .find(|id| id.ends_with("-1"))
                .and_then(|id| {
                    let text = r.tool_output(&id)?.as_str()?.to_string();
                    text.contains("output_schema").then_some(text)
                })
        })
        .unwrap_or_default();
    assert!(
        refused.contains("does not match the job's output_schema"),
        "{refused}"
    );

    let (header, rows) = read_csv(&ws.path().join("rows.results.csv"))?;
    let (status, error, result) = (
        column(&header, "status")?,
        column(&header, "last_error")?,
        column(&header, "result_json")?,
    );
    let by_name = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .cloned()
            .unwrap_or_default()
    };
    let silent = by_name("silent");
    assert_eq!(silent[status], "failed");
    assert!(
        silent[error].contains("without calling report_agent_job_result"),
        "{silent:?}"
    );
    let slow = by_name("slow");
    assert_eq!(slow[status], "failed");
    assert!(slow[error].contains("max_runtime_seconds"), "{slow:?}");
    let bad = by_name("bad");
    assert_eq!(bad[status], "completed", "{bad:?}");
    assert_eq!(bad[result], r#"{"ok":true}"#);
    let good = by_name("good");
    assert_eq!(good[status], "completed");
    assert_eq!(
        good[result], r#"{"ok":true}"#,
        "the second report changed nothing"
    );
    let answer = |suffix: &str| {
        requests
            .iter()
            .find_map(|r| {
                r.tool_output_call_ids()
                    .into_iter()
                    .find(|id| id.contains("row-4") && id.ends_with(suffix))
                    .and_then(|id| r.tool_output(&id)?.as_str().map(str::to_string))
            })
            .unwrap_or_default()
    };
    assert!(
        answer("-1").contains("unknown job_id `no-such-job`"),
        "{}",
        answer("-1")
    );
    assert!(answer("-2").contains("recorded"), "{}", answer("-2"));
    assert!(
        answer("-3").contains("already has a result"),
        "{}",
        answer("-3")
    );
    assert!(out.stdout.contains(r#""failed":2"#), "{}", out.stdout);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_with_stop_cancels_the_rest_of_the_job() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let mut csv = String::from("name\n");
    for i in 1..=20 {
        csv.push_str(&format!("n{i}\n"));
    }
    std::fs::write(ws.path().join("rows.csv"), csv)?;
    let worker: super::WorkerScript = Arc::new(|worker, request| {
        let stop = worker.row["name"] == "n3";
        if request.tool_output_call_ids().is_empty() {
            (report_call(worker, "1", json!({"seen": true}), stop), false)
        } else {
            (Turn::new([assistant_message("done")]), true)
        }
    });
    let calls = vec![(
        "job",
        "spawn_agents_on_csv",
        json!({"csv_path": "rows.csv", "instruction": "Look at {name}", "max_concurrency": 1}),
    )];
    let (mock, stats) = job_mock(calls, worker).await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 4)])?;
    let out = keel_exec(home.path(), ws.path(), &["run the job"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (header, rows) = read_csv(&ws.path().join("rows.results.csv"))?;
    let status = column(&header, "status")?;
    let statuses: Vec<&str> = rows.iter().map(|r| r[status].as_str()).collect();
    assert_eq!(statuses[..3], ["completed", "completed", "completed"]);
    assert!(
        statuses[3..].iter().all(|s| *s == "cancelled"),
        "{statuses:?}"
    );
    assert_eq!(rows.len(), 20);
    assert_eq!(
        stats.first_requests().len(),
        3,
        "no worker started after the stop"
    );
    assert!(
        out.stdout.contains(r#""status":"cancelled""#),
        "{}",
        out.stdout
    );
    Ok(())
}

/// A job started while the caller's open sub-agents hold every slot is refused with what to
/// do, not left waiting forever; after `close_agent` the same call runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_every_slot_held_is_refused_until_an_agent_is_closed() -> anyhow::Result<()> {
    use keel_test_support::{MockModelServer, function_call};
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("rows.csv"), "name\nonly\n")?;
    let job = json!({"csv_path": "rows.csv", "instruction": "Do {name}"}).to_string();
    let worker = reporting_worker();
    let mock = MockModelServer::builder()
        .responder(move |request| {
            if let Some(w) = super::worker_of(request) {
                return Some(worker(&w, request).0);
            }
            if super::input_text(request).contains("HELPER") {
                return Some(Turn::new([assistant_message("helper done")]));
            }
            let id = request
                .tool_output("s1")
                .and_then(|o| o.as_str())
                .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                .and_then(|v| v["agent_id"].as_str().map(str::to_string))
                .unwrap_or_default();
            let steps = [
                (
                    "s1",
                    "spawn_agent",
                    json!({"message": "HELPER: wait"}).to_string(),
                ),
                ("j1", "spawn_agents_on_csv", job.clone()),
                ("c1", "close_agent", json!({"id": id}).to_string()),
                ("j2", "spawn_agents_on_csv", job.clone()),
            ];
            for (call_id, tool, args) in steps {
                if request.tool_output(call_id).is_none() {
                    return Some(Turn::new([function_call(call_id, tool, args)]));
                }
            }
            Some(Turn::new([assistant_message("FINAL")]))
        })
        .start()
        .await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 1)])?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let output = |id: &str| {
        mock.requests()
            .iter()
            .find_map(|r| {
                r.tool_output(id)
                    .and_then(|o| o.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    assert!(
        output("j1").contains("held by open sub-agents"),
        "{}",
        output("j1")
    );
    assert!(
        output("j2").contains(r#""completed":1"#),
        "{}",
        output("j2")
    );
    Ok(())
}

/// A job worker is not offered the job and sub-agent tools, and a call to one anyway is
/// refused (it cannot restart its own job under its siblings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cannot_start_jobs_or_agents() -> anyhow::Result<()> {
    use keel_test_support::function_call;
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("rows.csv"), "name\nonly\n")?;
    let job = json!({"csv_path": "rows.csv", "instruction": "Do {name}"});
    let nested = job.to_string();
    let worker: super::WorkerScript =
        Arc::new(
            move |worker, request| match request.tool_output_call_ids().len() {
                0 => (
                    Turn::new([function_call(
                        "nested",
                        "spawn_agents_on_csv",
                        nested.clone(),
                    )]),
                    false,
                ),
                1 => (report_call(worker, "1", json!({"ok": true}), false), false),
                _ => (Turn::new([assistant_message("done")]), true),
            },
        );
    let (mock, stats) = job_mock(vec![("job", "spawn_agents_on_csv", job)], worker).await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 2)])?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains(r#""completed":1"#), "{}", out.stdout);
    let requests = mock.requests();
    let refused = requests
        .iter()
        .find_map(|r| {
            r.tool_output("nested")
                .and_then(|o| o.as_str())
                .map(str::to_string)
        })
        .unwrap_or_default();
    assert!(refused.contains("not available to this agent"), "{refused}");
    let worker_tools = requests
        .iter()
        .find(|r| super::worker_of(r).is_some())
        .map(|r| r.tool_names())
        .unwrap_or_default();
    assert!(worker_tools.contains(&"report_agent_job_result".to_string()));
    assert!(
        !worker_tools.contains(&"spawn_agents_on_csv".to_string()),
        "{worker_tools:?}"
    );
    assert!(
        !worker_tools.contains(&"spawn_agent".to_string()),
        "{worker_tools:?}"
    );
    assert_eq!(stats.first_requests().len(), 1, "the row ran once");
    Ok(())
}

/// A header that repeats a column, or names one like a results column, is refused by
/// `keel agent-job start` with the column and the rule, and no job is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_or_reserved_csv_headers_are_refused_and_nothing_is_stored() -> anyhow::Result<()>
{
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("dup.csv"), "id,name,name\n1,a,b\n")?;
    std::fs::write(ws.path().join("reserved.csv"), "id,status\n1,open\n")?;
    let store = home.path().join("jobs.sqlite3");
    for (csv, expected) in [
        ("dup.csv", "csv header name is duplicated"),
        (
            "reserved.csv",
            "csv header status is the name of a results column",
        ),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args([
                "agent-job",
                "start",
                "--csv",
                csv,
                "--instruction",
                "Do {id}",
            ])
            .arg("--store")
            .arg(&store)
            .current_dir(ws.path())
            .env("KEEL_HOME", home.path())
            .env_remove("KEEL_AGENT_JOB_STORE")
            .stdin(std::process::Stdio::null())
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), out).await??;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{csv}: {stderr}");
        assert!(stderr.contains(expected), "{csv}: {stderr}");
        assert!(out.stdout.is_empty(), "{csv}: printed a job id");
    }
    if store.exists() {
        let db = rusqlite::Connection::open(&store)?;
        let jobs: i64 = db.query_row("SELECT count(*) FROM agent_jobs", [], |row| row.get(0))?;
        assert_eq!(jobs, 0);
    }
    Ok(())
}

/// A PostgreSQL address that accepts connections and never answers makes `keel agent-job`
/// give up within its `connect_timeout` and say so; a closed port's error keeps its cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_never_answers_or_refuses_is_given_up_on_with_the_cause() -> anyhow::Result<()>
{
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    // Accepts, then holds every connection open without a byte.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let silent_port = silent.local_addr()?.port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?.port()
    };
    for (store, expected) in [
        (
            format!(
                "postgres://keel@127.0.0.1:{silent_port}/jobs?connect_timeout=2&sslmode=disable"
            ),
            "no connection within 2s",
        ),
        (
            format!("postgres://keel@127.0.0.1:{closed_port}/jobs?sslmode=disable"),
            "Connection refused",
        ),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["agent-job", "status", "some-job", "--store", &store])
            .current_dir(ws.path())
            .env("KEEL_HOME", home.path())
            .env("PGPASSWORD", "unused")
            .env_remove("PGCONNECT_TIMEOUT")
            .stdin(std::process::Stdio::null())
            .output();
        // Well past the 2 s bound, well short of forever.
        let out = tokio::time::timeout(Duration::from_secs(30), out)
            .await
            .map_err(|_| anyhow::anyhow!("keel agent-job status still waiting on {store}"))??;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{store}: {stderr}");
        assert!(stderr.contains(expected), "{store}: {stderr}");
    }
    held.abort();
    Ok(())
}
