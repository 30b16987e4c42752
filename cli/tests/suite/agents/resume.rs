//! A job cut short by `kill -9` resumes where it stopped: calling the tool again with the
//! same arguments runs only the rows that had not finished.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use keel_test_support::{Turn, assistant_message, write_config};
use serde_json::json;

use super::{job_mock, read_csv, report_call};
use crate::suite::exec::keel_exec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_mid_way_resumes_without_redoing_finished_rows() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let mut csv = String::from("name\n");
    for i in 1..=10 {
        csv.push_str(&format!("n{i}\n"));
    }
    std::fs::write(ws.path().join("rows.csv"), csv)?;
    // First run: rows from n5 on hang, so the process is killed with two of them running.
    let hang = Arc::new(AtomicBool::new(true));
    let hanging = hang.clone();
    let worker: super::WorkerScript = Arc::new(move |worker, request| {
        let n: u32 = worker.row["name"]
            .as_str()
            .and_then(|s| s.trim_start_matches('n').parse().ok())
            .unwrap_or_default();
        if n >= 5 && hanging.load(Ordering::SeqCst) {
            return (
                Turn::new([assistant_message("never")]).with_event_delay(Duration::from_secs(60)),
                false,
            );
        }
        if request.tool_output_call_ids().is_empty() {
            (report_call(worker, "1", json!({"n": n}), false), false)
        } else {
            (Turn::new([assistant_message("done")]), true)
        }
    });
    let calls = vec![(
        "job",
        "spawn_agents_on_csv",
        json!({"csv_path": "rows.csv", "instruction": "Do {name}", "max_concurrency": 2}),
    )];
    let (mock, stats) = job_mock(calls, worker).await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 4)])?;

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec", "run the job"])
        .current_dir(ws.path())
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    // The main request, n1..n4 (two requests each), and the first requests of n5 and n6.
    mock.wait_for_requests(11, Duration::from_secs(60)).await?;
    child.start_kill()?;
    tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    let started = stats.first_requests();
    assert_eq!(started.len(), 6, "{started:?}");

    hang.store(false, Ordering::SeqCst);
    let out = keel_exec(home.path(), ws.path(), &["run the job"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains(r#""completed":10"#), "{}", out.stdout);

    // Finished rows never ran again; the two cut short ran a second time.
    let started = stats.first_requests();
    for i in 1..=10 {
        let expected = if i == 5 || i == 6 { 2 } else { 1 };
        assert_eq!(
            started.get(&format!("row-{i}")).copied(),
            Some(expected),
            "row {i}: {started:?}"
        );
    }
    let (header, rows) = read_csv(&ws.path().join("rows.results.csv"))?;
    let status = header
        .iter()
        .position(|h| h == "status")
        .unwrap_or_default();
    let attempts = header
        .iter()
        .position(|h| h == "attempt_count")
        .unwrap_or_default();
    assert_eq!(rows.len(), 10);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[status], "completed", "{row:?}");
        let expected = if i == 4 || i == 5 { "2" } else { "1" };
        assert_eq!(row[attempts], expected, "{row:?}");
    }
    Ok(())
}
