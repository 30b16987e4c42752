//! RSS of one app-server holding N loaded idle threads.

use keel_test_support::plot::{ScaleChart, Series};
use keel_test_support::{Turn, assistant_message};
use serde_json::json;

use crate::measure::{Scratch, mib, status_kib};
use crate::{Engine, chart};

/// Measures every engine at every thread count; one chart.
pub async fn run(
    engines: &[Engine],
    counts: &[usize],
) -> anyhow::Result<Vec<(&'static str, ScaleChart)>> {
    println!("\n| engine | loaded idle threads | server RSS | RSS per thread since the first |");
    println!("| --- | ---: | ---: | ---: |");
    let mut series = Vec::new();
    for engine in engines {
        let points = measure(engine, counts).await?;
        let (first_n, first_kib) = points.first().copied().unwrap_or_default();
        for &(n, kib) in &points {
            let per_thread = if n > first_n {
                format!(
                    "{:.1} KiB",
                    (kib as f64 - first_kib as f64) / (n - first_n) as f64
                )
            } else {
                "-".into()
            };
            println!(
                "| {} | {n} | {:.1} MiB | {per_thread} |",
                engine.label,
                mib(kib)
            );
        }
        series.push(Series {
            label: engine.label.clone(),
            points: points
                .iter()
                .map(|&(n, kib)| (n as f64, mib(kib)))
                .collect(),
        });
    }
    Ok(vec![(
        "idle-threads",
        chart(
            "app-server RSS with N loaded idle threads",
            "loaded idle threads",
            "RSS (MiB)",
            series,
        ),
    )])
}

/// The server's RSS (KiB) after each count of `thread/start`s, on one server.
async fn measure(engine: &Engine, counts: &[usize]) -> anyhow::Result<Vec<(usize, u64)>> {
    let scratch = Scratch::new(|_| Some(Turn::new([assistant_message("idle")]))).await?;
    let workspace = &scratch.workspace;
    let mut server = scratch.app_server(engine, &[])?;
    server.initialize().await?;
    let pid = server
        .pid()
        .ok_or_else(|| anyhow::anyhow!("the server has no pid"))?;
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    let mut points = Vec::new();
    let mut started = 0;
    for &count in &sorted {
        while started < count {
            server
                .start_thread(json!({"cwd": workspace.path()}))
                .await?;
            started += 1;
        }
        // What the server holds, not what starting them touched once.
        points.push((count, status_kib(pid, "VmRSS")?));
        eprintln!("idle: {} holds {count} threads", engine.label);
    }
    Ok(points)
}
