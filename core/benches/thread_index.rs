//! How `thread/list` and `thread/search` scale with the number of recorded threads, with and
//! without the thread index. Workload: N rollouts of a short session each (a user question,
//! a command, an answer), spread over days as a heavy user's home would hold them (about 270
//! a day); one thread in a thousand mentions a rare word, every thread a common one. Not part
//! of `cargo test`; run with `cargo bench -p keel-core --bench thread_index` (`KEEL_BENCH_SIZES`
//! = comma-separated counts, default `100,10000,100000`).
//!
//! For each size: building the index from nothing (once), then the median of 15 queries with
//! a warm index (each query first checks the directories and noted files for changes, as the
//! app-server does), the index's size on disk, and the linear scan it replaced (first page of
//! the listing; a search that reads every rollout).
//!
//! With `KEEL_BENCH_PLOT=FILE.svg` the curves are also drawn (both axes logarithmic, each
//! line's growth exponent in the legend); `docs/scale/thread-index.svg` is made that way.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use keel_core::{ListSort, ThreadFilter, ThreadIndex, first_message_match, list_conversations_in};
use keel_protocol::app_server::ThreadSourceKind;
use keel_test_support::plot::{ScaleChart, Series};

const RUNS: usize = 15;
const PER_DAY: usize = 270;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let sizes: Vec<usize> = std::env::var("KEEL_BENCH_SIZES")
        .unwrap_or_else(|_| "100,10000,100000".to_string())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let mut curves: Vec<Series> = [
        "thread/list, index",
        "thread/search rare word, index",
        "thread/search common word, index",
        "thread/list, no index (scan)",
        "thread/search, no index (scan)",
    ]
    .iter()
    .map(|label| Series {
        label: label.to_string(),
        points: Vec::new(),
    })
    .collect();
    for size in sizes {
        let n = size as f64;
        let home = tempfile::tempdir()?;
        let started = Instant::now();
        write_rollouts(home.path(), size)?;
        println!(
            "\n## {size} rollouts (written in {:.1} s)",
            started.elapsed().as_secs_f64()
        );

        let started = Instant::now();
        let index = ThreadIndex::open(home.path())?;
        index.refresh()?;
        println!(
            "build the index from nothing: {:.2} s",
            started.elapsed().as_secs_f64()
        );
        let bytes: u64 = ["thread-index.sqlite", "thread-index.sqlite-wal"]
            .iter()
            .filter_map(|name| std::fs::metadata(home.path().join(name)).ok())
            .map(|meta| meta.len())
            .sum();
        println!("index size: {:.1} MiB", bytes as f64 / (1024.0 * 1024.0));

        // A directory changed in the last 2 s is read again at each query (its time may not
        // have ticked for a change right after); the figures below are for a home whose
        // directories settled, as all but today's have: they are dated an hour back, and the
        // index reads them once more. `after a new rollout` is the other case.
        backdate_dirs(&home.path().join("sessions"))?;
        index.refresh()?;
        let page = ThreadFilter {
            limit: 25,
            ..ThreadFilter::default()
        };
        let p50 = report("thread/list first page (25)", || {
            index.list(&page).map(|p| p.items.len())
        })?;
        curves[0].points.push((n, p50));
        // What the Codex 0.171 TUI asks: interactive threads only (its default), a
        // thread's sub-agents (after every turn), and the most recently changed first.
        let interactive = ThreadFilter {
            source_kinds: ThreadSourceKind::INTERACTIVE.to_vec(),
            ..page.clone()
        };
        report("thread/list interactive only (the default)", || {
            index.list(&interactive).map(|p| p.items.len())
        })?;
        let parent: keel_protocol::ConversationId =
            format!("01a21a7b-0000-7000-8000-{:012}", ((size / 2) & !3) + 2).parse()?;
        let agents = ThreadFilter {
            ancestor: Some(parent),
            source_kinds: vec![ThreadSourceKind::SubAgentThreadSpawn],
            ..page.clone()
        };
        report(
            "thread/list one thread's sub-agents (ancestorThreadId)",
            || index.list(&agents).map(|p| p.items.len()),
        )?;
        let recent = ThreadFilter {
            sort: ListSort::Updated,
            ..interactive.clone()
        };
        report("thread/list by updated_at", || {
            index.list(&recent).map(|p| p.items.len())
        })?;
        for (what, term, curve) in [
            (
                "thread/search rare word (1 in 1000 threads)",
                "needle",
                Some(1),
            ),
            (
                "thread/search common word (every thread)",
                "deploy",
                Some(2),
            ),
            ("thread/search two letters (rare, no trigram)", "qz", None),
        ] {
            let p50 = report(what, || {
                index.search(term, false, None, 25).map(|p| p.items.len())
            })?;
            if let Some(curve) = curve {
                curves[curve].points.push((n, p50));
            }
        }

        let middle: keel_protocol::ConversationId =
            format!("01a21a7b-0000-7000-8000-{:012}", size / 2).parse()?;
        report("find one thread by id (thread/read, thread/resume)", || {
            index
                .find(middle, false)
                .map(|found| usize::from(found.is_some()))
        })?;

        // A new rollout appears (its day directory changes): the next listing picks it up.
        append_one(home.path(), size)?;
        let started = Instant::now();
        let first = index.list(&page)?;
        println!(
            "thread/list after a new rollout appeared: {:.1} ms (newest listed first: {})",
            ms(started.elapsed()),
            first
                .items
                .first()
                .is_some_and(|s| s.preview.contains("brand new"))
        );

        // Without the index: `find_rollout_path` would use the index file if it were there.
        drop(index);
        for name in [
            "thread-index.sqlite",
            "thread-index.sqlite-wal",
            "thread-index.sqlite-shm",
        ] {
            let _ = std::fs::remove_file(home.path().join(name));
        }
        let root = home.path().join("sessions");
        let started = Instant::now();
        let listed = runtime.block_on(list_conversations_in(&root, 25, None))?;
        let elapsed = ms(started.elapsed());
        curves[3].points.push((n, elapsed));
        println!(
            "without the index, thread/list first page: {elapsed:.1} ms ({} threads)",
            listed.items.len()
        );
        let started = Instant::now();
        let walked = runtime.block_on(keel_core::find_rollout_path(home.path(), middle))?;
        println!(
            "without the index, find one thread by id: {:.1} ms (found: {})",
            ms(started.elapsed()),
            walked.is_some()
        );
        let started = Instant::now();
        let all = runtime.block_on(list_conversations_in(&root, usize::MAX, None))?;
        let matched = all
            .items
            .iter()
            .filter(|summary| first_message_match(&summary.path, "needle").is_some())
            .count();
        let elapsed = ms(started.elapsed());
        curves[4].points.push((n, elapsed));
        println!(
            "without the index, a search that reads every rollout: {elapsed:.1} ms ({matched} found)"
        );
    }
    for series in &curves {
        if let Some(k) = keel_test_support::plot::growth_exponent(&series.points) {
            println!("{}: grows as N^{k:.2}", series.label);
        }
    }
    if let Some(plot) = std::env::var_os("KEEL_BENCH_PLOT") {
        let plot = std::path::PathBuf::from(plot);
        let chart = ScaleChart {
            title: "thread/list and thread/search by rollouts on disk".into(),
            x_label: "rollouts".into(),
            y_label: "ms (index: p50 of 15; scan: one run)".into(),
            series: curves,
        };
        chart.write_svg(&plot)?;
        println!("chart: {}", plot.display());
    }
    Ok(())
}

/// Runs a query [`RUNS`] times, prints its p50 and max, and returns the p50 in ms.
fn report(
    what: &str,
    mut run: impl FnMut() -> Result<usize, keel_core::ThreadIndexError>,
) -> anyhow::Result<f64> {
    let mut times = Vec::with_capacity(RUNS);
    let mut found = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        found = run()?;
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "{what}: p50 {:.2} ms, max {:.2} ms ({found} shown)",
        ms(times[RUNS / 2]),
        ms(times[RUNS - 1])
    );
    Ok(ms(times[RUNS / 2]))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The rollout of thread `n`, dated `day` days after 2024-01-01.
fn rollout(n: usize, day: usize, preview: &str) -> (String, String) {
    let date = chrono::NaiveDate::from_ymd_opt(2024, 1, 1)
        .and_then(|d| d.checked_add_days(chrono::Days::new(day as u64)))
        .unwrap_or_default();
    let (seconds, rest) = (n % 86_400, n / 86_400);
    let time = format!(
        "{:02}-{:02}-{:02}",
        seconds / 3600,
        (seconds / 60) % 60,
        seconds % 60 + rest
    );
    let id = format!("01a21a7b-0000-7000-8000-{n:012}");
    let stamp = format!("{}T00:00:00.000Z", date.format("%Y-%m-%d"));
    let rare = if n.is_multiple_of(1000) {
        " a needle and qz"
    } else {
        ""
    };
    let question = format!("{preview} thread {n}: deploy the service{rare}");
    // One thread in four is a sub-agent of the thread before it, as a session that spawns
    // agents leaves them.
    let source = if n % 4 == 3 {
        format!(
            r#"{{"subAgent":{{"thread_spawn":{{"parent_thread_id":"01a21a7b-0000-7000-8000-{:012}","depth":1}}}}}}"#,
            n - 1
        )
    } else {
        r#""vscode""#.to_string()
    };
    let lines = [
        format!(
            r#"{{"timestamp":"{stamp}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{stamp}","cwd":"/work/project","model":"gpt-5","originator":"keel","cli_version":"0.1.0","source":{source},"model_provider":"openai"}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"event_msg","payload":{{"type":"task_started","turn_id":"t{n}","model_context_window":null}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{question}"}}]}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"event_msg","payload":{{"type":"user_message","message":"{question}","images":[]}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"response_item","payload":{{"type":"function_call","name":"shell","arguments":"{{\"command\":[\"bash\",\"-lc\",\"cargo build\"]}}","call_id":"c{n}"}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"response_item","payload":{{"type":"function_call_output","call_id":"c{n}","output":"Finished release profile"}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"event_msg","payload":{{"type":"agent_message","message":"Built and deployed; the service answers on port 8080."}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{stamp}","type":"event_msg","payload":{{"type":"task_complete","turn_id":"t{n}","last_agent_message":null}}}}"#
        ),
    ];
    let name = format!(
        "{}/rollout-{}T{time}-{id}.jsonl",
        date.format("%Y/%m/%d"),
        date.format("%Y-%m-%d")
    );
    (name, lines.join("\n") + "\n")
}

/// Dates every directory under `root` an hour back, as if written earlier.
fn backdate_dirs(root: &Path) -> anyhow::Result<()> {
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            }
        }
        std::fs::File::open(&dir)?.set_modified(past)?;
    }
    Ok(())
}

fn write_rollouts(home: &Path, count: usize) -> anyhow::Result<()> {
    for n in 0..count {
        let (name, text) = rollout(n, n / PER_DAY, "question");
        write(home, &name, &text)?;
    }
    Ok(())
}

fn append_one(home: &Path, count: usize) -> anyhow::Result<()> {
    let (name, text) = rollout(count, count / PER_DAY + 1, "brand new");
    write(home, &name, &text)
}

fn write(home: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    let path = home.join("sessions").join(name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::File::create(path)?.write_all(text.as_bytes())?;
    Ok(())
}
