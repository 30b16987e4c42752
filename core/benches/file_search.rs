//! What the `@` file picker (`fuzzyFileSearch`) costs on a large repository: a generated tree
//! shaped like a big monorepo (100,000 files in 5,000 directories, with a `.gitignore`d
//! build directory of another 50,000 files that must not be walked into). Not part of
//! `cargo test`; run with `cargo bench -p keel-core --bench file_search`.
//!
//! Figures, each the median (and range) of several runs: walking the tree once (what a
//! one-shot `fuzzyFileSearch` pays every time, and a session pays once), and matching typical
//! queries against the walked listing (what each keystroke of a session costs).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use keel_core::file_search::FileIndex;

const RUNS: usize = 7;
const DIRS: usize = 5_000;
const FILES_PER_DIR: usize = 20;

fn main() -> anyhow::Result<()> {
    let tree = tempfile::tempdir()?;
    build_tree(tree.path())?;
    let never = AtomicBool::new(false);

    let mut walks = Vec::new();
    let mut index = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        let walked = FileIndex::build(tree.path(), &never);
        walks.push(start.elapsed());
        index = Some(walked);
    }
    let index = index.ok_or_else(|| anyhow::anyhow!("no run"))?;
    println!(
        "walk ({} entries listed, build/ ignored): {}",
        index.len(),
        summary(&mut walks)
    );
    for query in ["main", "srcmod42util", "handler.rs", "x"] {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..RUNS {
            let start = Instant::now();
            found = index.search(query, 50, &never).len();
            times.push(start.elapsed());
        }
        println!("query {query:?} ({found} shown): {}", summary(&mut times));
    }
    Ok(())
}

/// `pkg{n}/src/mod{m}/...` sources, plus an ignored `build/` as large as half the tree.
fn build_tree(root: &Path) -> anyhow::Result<()> {
    std::fs::write(root.join(".gitignore"), "build/\n")?;
    for dir in 0..DIRS {
        let path = root.join(format!("pkg{}/src/mod{}", dir / 50, dir % 50));
        std::fs::create_dir_all(&path)?;
        for file in 0..FILES_PER_DIR {
            let name = match file {
                0 => "main.rs".to_string(),
                1 => "handler.rs".to_string(),
                n => format!("util_{n}.rs"),
            };
            std::fs::write(path.join(name), "")?;
        }
    }
    for dir in 0..DIRS / 2 {
        let path = root.join(format!("build/out{dir}"));
        std::fs::create_dir_all(&path)?;
        for file in 0..FILES_PER_DIR {
            std::fs::write(path.join(format!("obj_{file}.o")), "")?;
        }
    }
    Ok(())
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.1} ms (range {:.1}–{:.1} ms, {} runs)",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len()
    )
}
