//! Fan-out: one `spawn_agents_on_csv` job of N rows through `keel exec`, against
//! `keel-mock-model --agent-job` (every worker: two model requests and one result, no command).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use keel_test_support::plot::{ScaleChart, Series};

use crate::measure::mib;
use crate::{Engine, chart};

/// Workers at once, as in the agent-job benchmark of `docs/benchmarks.md`.
const AT_ONCE: usize = 64;

/// Measures Keel at every row count; charts of time, RSS and database size.
pub async fn run(
    engine: &Engine,
    mock: &Path,
    counts: &[usize],
) -> anyhow::Result<Vec<(&'static str, ScaleChart)>> {
    println!("\n| engine | rows | at once | wall | peak RSS | job database |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let (mut walls, mut rsses, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for &rows in counts {
        let point = tokio::task::spawn_blocking({
            let (engine, mock) = (engine.clone(), mock.to_path_buf());
            move || measure(&engine, &mock, rows)
        })
        .await??;
        println!(
            "| {} | {rows} | {AT_ONCE} | {:.2} s | {:.1} MiB | {:.1} MiB |",
            engine.label,
            point.wall_s,
            mib(point.peak_kib),
            point.database_bytes as f64 / (1024.0 * 1024.0)
        );
        walls.push((rows as f64, point.wall_s));
        rsses.push((rows as f64, mib(point.peak_kib)));
        sizes.push((rows as f64, point.database_bytes as f64 / (1024.0 * 1024.0)));
    }
    let label = engine.label.clone();
    let one = |points| {
        vec![Series {
            label: label.clone(),
            points,
        }]
    };
    Ok(vec![
        (
            "fanout-time",
            chart(
                "agent job of N rows: wall time",
                "rows",
                "wall (s)",
                one(walls),
            ),
        ),
        (
            "fanout-rss",
            chart(
                "agent job of N rows: peak RSS",
                "rows",
                "peak RSS (MiB)",
                one(rsses),
            ),
        ),
        (
            "fanout-database",
            chart(
                "agent job of N rows: job database size",
                "rows",
                "SQLite files (MiB)",
                one(sizes),
            ),
        ),
    ])
}

struct Point {
    wall_s: f64,
    peak_kib: u64,
    database_bytes: u64,
}

fn measure(engine: &Engine, mock: &Path, rows: usize) -> anyhow::Result<Point> {
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    let csv = workspace.path().join("rows.csv");
    let results = workspace.path().join("results.csv");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&csv)?);
    writeln!(file, "id,name")?;
    for row in 1..=rows {
        writeln!(file, "id{row},name {row}")?;
    }
    file.flush()?;
    let job = home.path().join("job.json");
    std::fs::write(
        &job,
        serde_json::json!({
            "csv_path": csv, "instruction": "Check the row of {name}", "id_column": "id",
            "output_csv_path": results, "max_concurrency": AT_ONCE,
        })
        .to_string(),
    )?;
    let mut mock_process = KillOnDrop(
        Command::new(mock)
            .arg("--agent-job")
            .arg(&job)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", mock.display()))?,
    );
    let mut uri = String::new();
    BufReader::new(mock_process.0.stdout.take().context("the mock's stdout")?)
        .read_line(&mut uri)?;
    let config = keel_test_support::config_toml(
        uri.trim(),
        [
            ("agents.max_threads", toml::Value::from(AT_ONCE as i64)),
            ("features.enable_fanout", toml::Value::from(true)),
        ],
    )?;
    std::fs::write(home.path().join("config.toml"), config)?;
    let timing = home.path().join("time");
    let start = Instant::now();
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o"])
        .arg(&timing)
        .arg(&engine.program)
        .args(["exec", "run the job on rows.csv"])
        .current_dir(workspace.path())
        .env(engine.home_env, home.path())
        .env("OPENAI_API_KEY", "x")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running /usr/bin/time (GNU time)")?;
    let wall_s = start.elapsed().as_secs_f64();
    drop(mock_process);
    if !status.success() {
        bail!("{} exec failed the {rows}-row job: {status}", engine.label);
    }
    let mut reader = csv::Reader::from_path(&results)
        .with_context(|| format!("reading {}", results.display()))?;
    let status = reader
        .headers()?
        .iter()
        .position(|name| name == "status")
        .context("the results CSV has no status column")?;
    let mut completed = 0;
    for record in reader.records() {
        completed += usize::from(record?.get(status) == Some("completed"));
    }
    if completed != rows {
        bail!("{completed} of {rows} rows completed");
    }
    let peak_kib = std::fs::read_to_string(&timing)?
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .context("GNU time wrote no peak RSS")?;
    let database_bytes = sqlite_bytes(home.path(), "agent_jobs.sqlite3")?;
    eprintln!("fanout: {rows} rows done");
    Ok(Point {
        wall_s,
        peak_kib,
        database_bytes,
    })
}

/// A child process killed when dropped, so an early return never leaves the mock running.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The size of a SQLite database and its journal files anywhere under `dir`.
fn sqlite_bytes(dir: &Path, name: &str) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            total += sqlite_bytes(&path, name)?;
        } else if entry.file_name().to_string_lossy().starts_with(name) {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}
