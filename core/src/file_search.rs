//! Fuzzy search over a workspace's file and directory names, for clients' `@` mentions:
//! the tree is walked once (honouring `.gitignore`, `.ignore` and git's global excludes, and
//! skipping `.git`), then every query is matched against the listing in memory.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use nucleo_matcher::pattern::{AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// One file or directory that matched a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatch {
    /// The root it was found under.
    pub root: PathBuf,
    /// Its path relative to `root`, `/`-separated.
    pub path: String,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Higher is better; only comparable within one query.
    pub score: u32,
    /// Positions of `path` that matched the query, ascending (the matcher's units: characters
    /// for ASCII and most text, grapheme clusters where Unicode combines them).
    pub indices: Vec<u32>,
}

impl FileMatch {
    /// The last component of `path`.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// The listing of one root: every entry not ignored, walked once and searched many times.
#[derive(Debug, Clone)]
pub struct FileIndex {
    root: PathBuf,
    entries: Vec<(String, bool)>,
}

/// Checked this often while walking or matching, so a cancelled search stops promptly.
const CANCEL_CHECK_EVERY: usize = 1024;

impl FileIndex {
    /// Walks `root` on all cores; stops early (with what it has) once `cancelled` is set.
    pub fn build(root: &Path, cancelled: &AtomicBool) -> Self {
        let found = Mutex::new(Vec::new());
        let mut visitors = Visitors {
            root,
            cancelled,
            found: &found,
        };
        ignore::WalkBuilder::new(root)
            .hidden(false)
            .require_git(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .build_parallel()
            .visit(&mut visitors);
        let mut entries = found.into_inner().unwrap_or_else(|err| err.into_inner());
        entries.sort_unstable();
        Self {
            root: root.to_path_buf(),
            entries,
        }
    }

    /// How many entries the walk found.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the walk found nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The best `limit` matches of `query`, best first (ties by path); none for an empty
    /// query or once `cancelled` is set.
    pub fn search(&self, query: &str, limit: usize, cancelled: &AtomicBool) -> Vec<FileMatch> {
        search_indexes(std::slice::from_ref(self), query, limit, cancelled)
    }
}

/// The best `limit` matches of `query` over several roots' listings, best first.
pub fn search_indexes(
    indexes: &[FileIndex],
    query: &str,
    limit: usize,
    cancelled: &AtomicBool,
) -> Vec<FileMatch> {
    if query.trim().is_empty() || limit == 0 {
        return Vec::new();
    }
    // Typed text is matched as it is: no fzf syntax (`!`, `^`, `$`, `'` are characters).
    let pattern = Pattern::new(
        query,
        CaseMatching::Smart,
        Normalization::Smart,
        AtomKind::Fuzzy,
    );
    if pattern.atoms.is_empty() {
        return Vec::new();
    }
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut buffer = Vec::new();
    let mut scored: Vec<(u32, usize, usize)> = Vec::new();
    for (which, index) in indexes.iter().enumerate() {
        for (at, (path, _)) in index.entries.iter().enumerate() {
            if at % CANCEL_CHECK_EVERY == 0 && cancelled.load(Ordering::Relaxed) {
                return Vec::new();
            }
            if let Some(score) = pattern.score(Utf32Str::new(path, &mut buffer), &mut matcher) {
                scored.push((score, which, at));
            }
        }
    }
    scored.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0).then_with(|| {
            indexes[a.1].entries[a.2]
                .0
                .cmp(&indexes[b.1].entries[b.2].0)
        })
    });
    scored.truncate(limit);
    scored
        .into_iter()
        .map(|(score, which, at)| {
            let index = &indexes[which];
            let (path, is_dir) = &index.entries[at];
            let mut indices = Vec::new();
            pattern.indices(Utf32Str::new(path, &mut buffer), &mut matcher, &mut indices);
            indices.sort_unstable();
            indices.dedup();
            FileMatch {
                root: index.root.clone(),
                path: path.clone(),
                is_dir: *is_dir,
                score,
                indices,
            }
        })
        .collect()
}

/// Makes one collector per walking thread.
struct Visitors<'a> {
    root: &'a Path,
    cancelled: &'a AtomicBool,
    found: &'a Mutex<Vec<(String, bool)>>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for Visitors<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Collector {
            root: self.root,
            cancelled: self.cancelled,
            found: self.found,
            local: Vec::new(),
        })
    }
}

/// One walking thread's entries, handed over in batches and when the thread finishes.
struct Collector<'a> {
    root: &'a Path,
    cancelled: &'a AtomicBool,
    found: &'a Mutex<Vec<(String, bool)>>,
    local: Vec<(String, bool)>,
}

impl ignore::ParallelVisitor for Collector<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        if self.cancelled.load(Ordering::Relaxed) {
            return ignore::WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return ignore::WalkState::Continue;
        };
        if entry.depth() == 0 {
            return ignore::WalkState::Continue;
        }
        let relative = entry.path().strip_prefix(self.root).unwrap_or(entry.path());
        let path = relative.to_string_lossy().replace('\\', "/");
        let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
        self.local.push((path, is_dir));
        if self.local.len() >= CANCEL_CHECK_EVERY {
            lock(self.found).append(&mut self.local);
        }
        ignore::WalkState::Continue
    }
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        lock(self.found).append(&mut self.local);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
