//! `keel agent-job`: one job worked by three `keel agent-job work` processes, one of them
//! killed with `kill -9` while it holds a row. The row is claimed again once its lease runs
//! out, and every row ends with exactly one recorded result, exported in input order. Run
//! against a real PostgreSQL cluster (the shared store) and against a SQLite file.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{PostgresCluster, Turn, assistant_message, write_config};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::{job_mock, read_csv, report_call};

/// Rows in the job.
const ROWS: usize = 24;
/// The row whose first worker hangs (and is killed).
const HELD_ROW: &str = "r01";
/// How long to wait for a worker process to finish the job.
const WORK_TIMEOUT: Duration = Duration::from_secs(180);

/// Where the job lives and what a `keel` process needs to reach it.
struct Store {
    arg: String,
    env: Vec<(String, String)>,
}

fn keel(home: &std::path::Path, ws: &std::path::Path, store: &Store, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_keel"));
    command
        .arg("agent-job")
        .args(args)
        .args(["--store", &store.arg])
        .current_dir(ws)
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env_remove("KEEL_AGENT_JOB_STORE")
        // Nothing of the developer's own PostgreSQL settings reaches the test.
        .env_remove("PGSSLMODE")
        .env_remove("PGSERVICE")
        .env_remove("PGSERVICEFILE")
        .env_remove("PGHOST")
        .env_remove("PGPORT")
        .env_remove("PGUSER")
        .env_remove("PGDATABASE")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (name, value) in &store.env {
        command.env(name, value);
    }
    command
}

async fn run_ok(mut command: Command) -> anyhow::Result<String> {
    let out = tokio::time::timeout(WORK_TIMEOUT, command.output())
        .await
        .context("keel agent-job did not finish")??;
    anyhow::ensure!(
        out.status.success(),
        "keel agent-job failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

async fn status(
    home: &std::path::Path,
    ws: &std::path::Path,
    store: &Store,
    job: &str,
) -> anyhow::Result<Value> {
    let out = run_ok(keel(home, ws, store, &["status", job, "--json"])).await?;
    Ok(serde_json::from_str(&out)?)
}

/// Runs the scenario on `store`; returns the job id.
async fn three_workers_one_killed(store: Store) -> anyhow::Result<String> {
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let mut csv = String::from("id,name\n");
    for i in 1..=ROWS {
        csv.push_str(&format!("r{i:02},name {i}\n"));
    }
    std::fs::write(ws.path().join("rows.csv"), csv)?;

    // The first worker of HELD_ROW hangs until it is killed; every other worker reports its
    // row's name in capitals.
    let held_starts = Arc::new(AtomicUsize::new(0));
    let held_seen = Arc::new(tokio::sync::Notify::new());
    let (starts, seen) = (held_starts.clone(), held_seen.clone());
    let worker: super::WorkerScript = Arc::new(move |worker, request| {
        let first = request.tool_output_call_ids().is_empty();
        if worker.item_id == HELD_ROW && first && starts.fetch_add(1, Ordering::SeqCst) == 0 {
            seen.notify_one();
            let hang =
                Turn::new([assistant_message("never")]).with_event_delay(Duration::from_secs(600));
            return (hang, false);
        }
        if first {
            let name = worker.row["name"]
                .as_str()
                .unwrap_or_default()
                .to_uppercase();
            (
                report_call(worker, "1", json!({ "upper": name }), false),
                false,
            )
        } else {
            (Turn::new([assistant_message("reported")]), true)
        }
    });
    let (mock, stats) = job_mock(Vec::new(), worker).await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 8)])?;

    let job = run_ok(keel(
        home.path(),
        ws.path(),
        &store,
        &[
            "start",
            "--csv",
            "rows.csv",
            "--id-column",
            "id",
            "--instruction",
            "Capitalise {name}",
        ],
    ))
    .await?
    .trim()
    .to_string();
    anyhow::ensure!(!job.is_empty(), "start printed no job id");

    let spawn_worker = || -> anyhow::Result<Child> {
        Ok(keel(
            home.path(),
            ws.path(),
            &store,
            // Renewed every 3.3 s: a busy machine may be late with a renewal or two without
            // a live row being taken over; the killed worker's row waits out the 10 s.
            &["work", &job, "--concurrency", "2", "--lease-seconds", "10"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
    };
    let mut workers = vec![spawn_worker()?, spawn_worker()?, spawn_worker()?];

    // Once the held row's worker is waiting on the model, find its process and kill it.
    tokio::time::timeout(Duration::from_secs(60), held_seen.notified())
        .await
        .context("no worker started the held row")?;
    let now = status(home.path(), ws.path(), &store, &job).await?;
    let holder = now["running"]
        .as_array()
        .and_then(|running| running.iter().find(|item| item["item_id"] == HELD_ROW))
        .and_then(|item| item["holder"].as_str())
        .with_context(|| format!("no worker holds {HELD_ROW}: {now}"))?
        .to_string();
    let pid: u32 = holder
        .split(':')
        .nth(1)
        .and_then(|pid| pid.parse().ok())
        .with_context(|| format!("holder {holder} names no process"))?;
    let victim = workers
        .iter()
        .position(|child| child.id() == Some(pid))
        .with_context(|| format!("{pid} is none of the workers"))?;
    let mut killed = workers.remove(victim);
    killed.start_kill()?;
    tokio::time::timeout(Duration::from_secs(30), killed.wait()).await??;

    // The other two finish the job, the held row included once its lease has run out.
    for child in workers {
        let out = tokio::time::timeout(WORK_TIMEOUT, child.wait_with_output())
            .await
            .context("a worker did not finish the job")??;
        anyhow::ensure!(
            out.status.success(),
            "a worker failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: Value = serde_json::from_slice(&out.stdout)?;
        assert_eq!(summary["counts"]["completed"], ROWS, "{summary}");
    }

    let done = status(home.path(), ws.path(), &store, &job).await?;
    assert_eq!(done["status"], "completed", "{done}");
    for (status, n) in [
        ("completed", ROWS),
        ("failed", 0),
        ("running", 0),
        ("pending", 0),
    ] {
        assert_eq!(done["counts"][status], n, "{status}: {done}");
    }
    assert_eq!(
        held_starts.load(Ordering::SeqCst),
        2,
        "the held row ran twice"
    );
    // Every row's worker reported once: no report was refused as a second one.
    for request in mock.requests() {
        for call in request.tool_output_call_ids() {
            let output = request
                .tool_output(&call)
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(!output.contains("already has a result"), "{output}");
        }
    }
    let started = stats.first_requests();
    assert_eq!(
        started.len(),
        ROWS,
        "every row's worker started: {started:?}"
    );

    let out = run_ok(keel(
        home.path(),
        ws.path(),
        &store,
        &["export", &job, "--out", "results.csv"],
    ))
    .await?;
    assert!(out.trim().ends_with("results.csv"), "{out}");
    let (header, rows) = read_csv(&ws.path().join("results.csv"))?;
    let column = |name: &str| header.iter().position(|h| h == name).unwrap_or(usize::MAX);
    assert_eq!(rows.len(), ROWS);
    let mut rerun = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let id = format!("r{:02}", i + 1);
        assert_eq!(row[column("item_id")], id, "input order: {row:?}");
        assert_eq!(row[column("status")], "completed", "{row:?}");
        let result: Value = serde_json::from_str(&row[column("result_json")])?;
        assert_eq!(result["upper"], format!("NAME {}", i + 1), "{row:?}");
        if id == HELD_ROW {
            assert_eq!(row[column("attempt_count")], "2", "{row:?}");
        } else if row[column("attempt_count")] != "1" {
            // The killed worker's other place (it ran two rows at once) may have held a row.
            assert_eq!(row[column("attempt_count")], "2", "{row:?}");
            rerun.push(id);
        }
    }
    assert!(
        rerun.len() <= 1,
        "rows run again besides the held one: {rerun:?}"
    );
    Ok(job)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn workers_on_postgres_survive_a_killed_worker_with_every_row_recorded_once()
-> anyhow::Result<()> {
    let pg = PostgresCluster::start_required()?;
    // The password reaches keel through PGPASSWORD, never the command line.
    let store = Store {
        arg: pg.url(),
        env: vec![("PGPASSWORD".to_string(), pg.password().to_string())],
    };
    let job = three_workers_one_killed(store).await?;
    let recorded = pg.psql(&format!(
        "SELECT count(*), count(DISTINCT item_id) FROM agent_job_items
         WHERE job_id = '{job}' AND result_json IS NOT NULL"
    ))?;
    assert_eq!(recorded, format!("{ROWS}|{ROWS}"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_on_one_sqlite_file_survive_a_killed_worker_too() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = Store {
        arg: dir.path().join("jobs.sqlite3").display().to_string(),
        env: Vec::new(),
    };
    three_workers_one_killed(store).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn the_password_comes_from_a_password_file_and_a_wrong_one_is_named() -> anyhow::Result<()> {
    let pg = PostgresCluster::start_required()?;
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("rows.csv"), "name\none\ntwo\n")?;
    let pgpass = ws.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{}:postgres:keel:{}\n", pg.port(), pg.password()),
    )?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600))?;
    }
    let store = Store {
        arg: pg.url(),
        env: vec![("PGPASSFILE".to_string(), pgpass.display().to_string())],
    };
    let job = run_ok(keel(
        home.path(),
        ws.path(),
        &store,
        &["start", "--csv", "rows.csv", "--instruction", "Say {name}"],
    ))
    .await?;
    let now = status(home.path(), ws.path(), &store, job.trim()).await?;
    assert_eq!(now["counts"]["pending"], 2, "{now}");

    // A wrong password: the error names the store (without a password) and what failed.
    let wrong = Store {
        arg: pg.url(),
        env: vec![("PGPASSWORD".to_string(), "not-the-password".to_string())],
    };
    let out = keel(home.path(), ws.path(), &wrong, &["status", job.trim()])
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("postgres://keel@127.0.0.1:{}/postgres", pg.port())),
        "{stderr}"
    );
    assert!(stderr.contains("password"), "{stderr}");
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_job_on_postgres_keeps_its_starters_trace_for_every_workers_turn() -> anyhow::Result<()> {
    let pg = PostgresCluster::start_required()?;
    let store = Store {
        arg: pg.url(),
        env: vec![("PGPASSWORD".to_string(), pg.password().to_string())],
    };
    let receiver = keel_test_support::OtlpReceiver::start().await?;
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("rows.csv"), "id,name\nr1,ann\nr2,bob\n")?;
    let (mock, _stats) = job_mock(Vec::new(), super::reporting_worker()).await?;
    write_config(
        home.path(),
        &mock.uri(),
        [(
            "otel.trace_exporter",
            toml::Value::Table(toml::toml! {
                [otlp-http]
                endpoint = (receiver.http_endpoint("traces"))
            }),
        )],
    )?;
    // The starter's span, as a CI system or a script hands it to command-line tools.
    let (trace, span) = ("5a9d6ecb2f3e4c1f8a7b6c5d4e3f2a1b", "1122334455667788");
    let mut start = keel(
        home.path(),
        ws.path(),
        &store,
        &[
            "start",
            "--csv",
            "rows.csv",
            "--id-column",
            "id",
            "--instruction",
            "Up {name}",
        ],
    );
    start.env("TRACEPARENT", format!("00-{trace}-{span}-01"));
    let job = run_ok(start).await?.trim().to_string();
    let stored = pg.psql(&format!(
        "SELECT trace_context FROM agent_jobs WHERE id = '{job}'"
    ))?;
    assert_eq!(stored, format!("00-{trace}-{span}-01"));
    // A worker process on another "host" (its own home would do; the job row carries the span).
    run_ok(keel(home.path(), ws.path(), &store, &["work", &job])).await?;
    let workers = |receiver: &keel_test_support::OtlpReceiver| {
        receiver
            .spans()
            .into_iter()
            .filter(|s| {
                s.name == "invoke_agent keel" && s.trace_id == trace && s.parent_span_id == span
            })
            .count()
    };
    receiver
        .wait_until(
            "both workers' turns in the starter's trace",
            Duration::from_secs(30),
            |r| workers(r) == 2,
        )
        .await?;
    Ok(())
}
