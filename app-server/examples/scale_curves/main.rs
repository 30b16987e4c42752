//! Scale curves: how the servers' cost grows with the work they hold, measured on real
//! processes against the mock model and drawn as SVG charts into `docs/scale/`.
//!
//! Curves (each `--curves` name), with the workload each point stands for:
//! - `idle`: one app-server over stdio, `thread/start` N times (no turn), the server's RSS
//!   after the Nth thread.
//! - `websocket`: one app-server listening on `ws://127.0.0.1:0`; N clients connect at once,
//!   each on its own websocket, and runs one turn whose model asks for `bash -lc "echo ..."`
//!   (empty HOME), then answers. Turn latency p50/p99 (from `turn/start` to `turn/completed`)
//!   and the server's peak RSS.
//! - `resume`: a recorded thread of N items (a quarter each user message, `shell` call, its
//!   output and answer) resumed on a fresh server: wall time of `thread/resume` and the
//!   server's peak RSS.
//! - `fanout`: `keel exec` running one `spawn_agents_on_csv` job of N rows (64 at once)
//!   against `keel-mock-model --agent-job`: wall time, peak RSS, the job database's size.
//!
//! `--codex` runs the same work on the reference Codex where it can (idle threads and
//! websocket clients: the app-server takes the same messages); the resume and fan-out curves
//! for Codex are in `docs/benchmarks.md`'s older sections (its own rollout format, and a fan-out
//! that takes minutes per hundred rows).
//!
//! ```sh
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel-app-server --example scale_curves
//! B=/work/target-bench/release
//! $B/examples/scale_curves --keel $B/keel --mock $B/keel-mock-model --codex "$CODEX_0169" \
//!     --out docs/scale
//! ```
//!
//! Every point prints a markdown table row on stdout; each curve's chart (both axes
//! logarithmic, the growth exponent in the legend) is written to `<out>/<curve>.svg`.

mod fanout;
mod idle;
mod measure;
mod resume;
mod websocket;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use keel_test_support::plot::{ScaleChart, Series, growth_exponent};

#[derive(Debug, Parser)]
#[command(about = "Measure how the servers' cost grows and plot it")]
struct Args {
    /// The `keel` binary (release build).
    #[arg(long)]
    keel: PathBuf,
    /// The `keel-mock-model` binary, for the fan-out curve.
    #[arg(long)]
    mock: Option<PathBuf>,
    /// The reference `codex` binary, measured beside Keel where it can run the same work.
    #[arg(long)]
    codex: Option<PathBuf>,
    /// Where the SVG charts go.
    #[arg(long, default_value = "docs/scale")]
    out: PathBuf,
    /// Which curves to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "idle,websocket,resume,fanout"
    )]
    curves: Vec<String>,
    /// Loaded idle threads, per point.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    idle_threads: Vec<usize>,
    /// Concurrent websocket clients, per point.
    #[arg(long, value_delimiter = ',', default_value = "1,20,200")]
    clients: Vec<usize>,
    /// Items in the resumed thread, per point.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    resume_items: Vec<usize>,
    /// Rows of the fan-out job, per point.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    fanout_rows: Vec<usize>,
}

/// Which server a curve runs on.
#[derive(Debug, Clone)]
pub struct Engine {
    /// Its name in tables and legends.
    pub label: String,
    /// Its binary.
    pub program: PathBuf,
    /// The variable naming its home directory.
    pub home_env: &'static str,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut engines = vec![Engine {
        label: "Keel".into(),
        program: args.keel.clone(),
        home_env: "KEEL_HOME",
    }];
    if let Some(codex) = &args.codex {
        engines.push(Engine {
            label: "Codex".into(),
            program: codex.clone(),
            home_env: "CODEX_HOME",
        });
    }
    for curve in &args.curves {
        let charts = match curve.as_str() {
            "idle" => idle::run(&engines, &args.idle_threads).await?,
            "websocket" => websocket::run(&engines, &args.clients).await?,
            "resume" => resume::run(&engines[0], &args.resume_items).await?,
            "fanout" => {
                let mock = args
                    .mock
                    .as_deref()
                    .context("the fanout curve needs --mock (keel-mock-model)")?;
                fanout::run(&engines[0], mock, &args.fanout_rows).await?
            }
            other => anyhow::bail!("unknown curve `{other}` (idle, websocket, resume, fanout)"),
        };
        for (name, chart) in charts {
            let path = args.out.join(format!("{name}.svg"));
            chart.write_svg(&path)?;
            for series in &chart.series {
                let exponent = growth_exponent(&series.points)
                    .map_or_else(|| "-".to_string(), |k| format!("{k:.2}"));
                eprintln!(
                    "{}: {} grows as N^{exponent} ({})",
                    chart.title,
                    series.label,
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// A chart of one measure over the sizes of a curve, one line per engine.
pub fn chart(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> ScaleChart {
    ScaleChart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        series,
    }
}
