//! Checks a parsed patch against the files on disk and computes every new file in memory.
//!
//! Planning reads but never writes: if any operation cannot be applied, the caller gets an
//! error and the disk is untouched. The result, [`ApplyPatchAction`], carries the
//! [`FileChange`]s to show the user (for approval and events) and the writes that
//! [`super::apply`] performs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use keel_protocol::FileChange;
use similar::TextDiff;

use super::applied_summary::AppliedSummary;
use super::error::PlanError;
use super::lexical::resolve;
use super::parser::{Hunk, Patch};
use super::regular_file::{MAX_PATCHED_FILE_BYTES, read_regular_text};
use super::update::apply_chunks;

/// Lines of unchanged context around each hunk of the unified diffs in [`FileChange::Update`].
const DIFF_CONTEXT_LINES: usize = 3;

/// A patch checked against the disk, with every file's new contents computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyPatchAction {
    cwd: PathBuf,
    changes: BTreeMap<PathBuf, FileChange>,
    writes: Vec<PlannedWrite>,
    summary: AppliedSummary,
}

/// One file's transition from its planned-against contents to its new contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    /// Absolute (if the cwd is), lexically normalised path.
    pub path: PathBuf,
    /// The contents when the patch was planned; `None` if the file did not exist.
    pub before: Option<String>,
    /// The contents to write; `None` removes the file.
    pub after: Option<String>,
    /// For a move's destination: the source, whose permissions the new file keeps.
    pub permissions_from: Option<PathBuf>,
}

impl ApplyPatchAction {
    /// The directory relative patch paths were resolved against.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The changes keyed by resolved path; a move is an `Update` keyed by its source.
    pub fn changes(&self) -> &BTreeMap<PathBuf, FileChange> {
        &self.changes
    }

    /// Consumes the action, returning its changes.
    pub fn into_changes(self) -> BTreeMap<PathBuf, FileChange> {
        self.changes
    }

    /// The writes [`super::apply`] performs, in order.
    pub fn writes(&self) -> &[PlannedWrite] {
        &self.writes
    }

    /// What a successful apply reports, with paths as the patch wrote them.
    pub fn summary(&self) -> &AppliedSummary {
        &self.summary
    }
}

/// Resolves `patch` against `cwd` and the current files, computing all new contents.
///
/// Relative paths are joined to `cwd`, absolute ones are kept; `.` and `..` are resolved
/// lexically. `*** Add File:` overwrites an existing file (as Codex does). A file may be
/// touched by only one operation (counting a move's destination).
pub fn plan_patch(patch: &Patch, cwd: &Path) -> Result<ApplyPatchAction, PlanError> {
    plan_patch_over(patch, cwd, &BTreeMap::new())
}

/// [`plan_patch`] against the disk with `open` laid over it: the text of each file it names
/// (an editor's buffer, unsaved changes included) stands for that file's contents on disk.
/// A file in `open` exists whatever the disk says.
pub fn plan_patch_over(
    patch: &Patch,
    cwd: &Path,
    open: &BTreeMap<PathBuf, String>,
) -> Result<ApplyPatchAction, PlanError> {
    let mut planner = Planner {
        cwd,
        open,
        touched: BTreeSet::new(),
        action: ApplyPatchAction {
            cwd: cwd.to_path_buf(),
            changes: BTreeMap::new(),
            writes: Vec::new(),
            summary: AppliedSummary::default(),
        },
    };
    for hunk in &patch.hunks {
        planner.hunk(hunk)?;
    }
    Ok(planner.action)
}

/// Every file `patch` reads or writes (a move's destination included), resolved against
/// `cwd` as [`plan_patch`] resolves them, in patch order.
pub fn touched_paths(patch: &Patch, cwd: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for hunk in &patch.hunks {
        paths.push(resolve(cwd, hunk.path()));
        if let Hunk::Update {
            move_path: Some(target),
            ..
        } = hunk
        {
            paths.push(resolve(cwd, target));
        }
    }
    paths
}

struct Planner<'a> {
    cwd: &'a Path,
    open: &'a BTreeMap<PathBuf, String>,
    touched: BTreeSet<PathBuf>,
    action: ApplyPatchAction,
}

impl Planner<'_> {
    fn hunk(&mut self, hunk: &Hunk) -> Result<(), PlanError> {
        match hunk {
            Hunk::Add { path, contents } => {
                let resolved = self.claim(path)?;
                let before = self.read_existing(&resolved, "add")?;
                self.action.writes.push(PlannedWrite {
                    path: resolved.clone(),
                    before,
                    after: Some(contents.clone()),
                    permissions_from: None,
                });
                self.action.changes.insert(
                    resolved,
                    FileChange::Add {
                        content: contents.clone(),
                    },
                );
                self.action.summary.added.push(path.clone());
            }
            Hunk::Delete { path } => {
                let resolved = self.claim(path)?;
                let content = self.read_required(&resolved, "delete")?;
                self.action.writes.push(PlannedWrite {
                    path: resolved.clone(),
                    before: Some(content.clone()),
                    after: None,
                    permissions_from: None,
                });
                self.action
                    .changes
                    .insert(resolved, FileChange::Delete { content });
                self.action.summary.deleted.push(path.clone());
            }
            Hunk::Update {
                path,
                move_path,
                chunks,
            } => {
                let resolved = self.claim(path)?;
                let before = self.read_required(&resolved, "update")?;
                let after = apply_chunks(&before, chunks, &resolved)?;
                let unified_diff = TextDiff::from_lines(&before, &after)
                    .unified_diff()
                    .context_radius(DIFF_CONTEXT_LINES)
                    .to_string();
                let destination = move_path
                    .as_ref()
                    .map(|target| (target, resolve(self.cwd, target)))
                    .filter(|(_, resolved_target)| *resolved_target != resolved);
                match destination {
                    Some((target, resolved_target)) => {
                        self.claim_resolved(&resolved_target)?;
                        let target_before = self.read_existing(&resolved_target, "move to")?;
                        self.action.writes.push(PlannedWrite {
                            path: resolved_target.clone(),
                            before: target_before,
                            after: Some(after),
                            permissions_from: Some(resolved.clone()),
                        });
                        self.action.writes.push(PlannedWrite {
                            path: resolved.clone(),
                            before: Some(before),
                            after: None,
                            permissions_from: None,
                        });
                        self.action.changes.insert(
                            resolved,
                            FileChange::Update {
                                unified_diff,
                                move_path: Some(resolved_target),
                            },
                        );
                        self.action.summary.modified.push(target.clone());
                    }
                    None => {
                        self.action.writes.push(PlannedWrite {
                            path: resolved.clone(),
                            before: Some(before),
                            after: Some(after),
                            permissions_from: None,
                        });
                        self.action.changes.insert(
                            resolved,
                            FileChange::Update {
                                unified_diff,
                                move_path: None,
                            },
                        );
                        self.action.summary.modified.push(path.clone());
                    }
                }
            }
        }
        Ok(())
    }

    /// The file's text: the open one when there is one, else the disk's.
    fn read_existing(
        &self,
        path: &Path,
        action: &'static str,
    ) -> Result<Option<String>, PlanError> {
        match self.open.get(path) {
            Some(text) => Ok(Some(text.clone())),
            None => read_existing(path, action),
        }
    }

    fn read_required(&self, path: &Path, action: &'static str) -> Result<String, PlanError> {
        self.read_existing(path, action)?
            .ok_or_else(|| PlanError::FileNotFound {
                path: path.to_path_buf(),
                action,
            })
    }

    fn claim(&mut self, path: &Path) -> Result<PathBuf, PlanError> {
        let resolved = resolve(self.cwd, path);
        self.claim_resolved(&resolved)?;
        Ok(resolved)
    }

    fn claim_resolved(&mut self, resolved: &Path) -> Result<(), PlanError> {
        if self.touched.insert(resolved.to_path_buf()) {
            Ok(())
        } else {
            Err(PlanError::PathTouchedTwice {
                path: resolved.to_path_buf(),
            })
        }
    }
}

/// Reads a file that may be absent; a directory, FIFO, device or socket in its place is an
/// error, and so is a file over [`MAX_PATCHED_FILE_BYTES`].
fn read_existing(path: &Path, action: &'static str) -> Result<Option<String>, PlanError> {
    match fs::metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PlanError::Read {
            path: path.to_path_buf(),
            source,
        }),
        Ok(metadata) if metadata.is_dir() => Err(PlanError::IsADirectory {
            path: path.to_path_buf(),
            action,
        }),
        Ok(_) => {
            read_regular_text(path, MAX_PATCHED_FILE_BYTES).map_err(|source| PlanError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_patch;
    use pretty_assertions::assert_eq;

    fn plan(text: &str, cwd: &Path) -> Result<ApplyPatchAction, PlanError> {
        plan_patch(&parse_patch(text).unwrap(), cwd)
    }

    /// Rebuilds the new text from the old text and a header-less unified diff.
    fn apply_unified_diff(old: &str, diff: &str) -> String {
        let old_lines: Vec<&str> = old.lines().collect();
        let mut out = Vec::new();
        let mut next_old = 0;
        for line in diff.lines() {
            if let Some(header) = line.strip_prefix("@@ -") {
                let start: usize = header
                    .split([',', ' '])
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap();
                let start = start.saturating_sub(1).max(next_old);
                out.extend_from_slice(&old_lines[next_old..start]);
                next_old = start;
            } else if let Some(text) = line.strip_prefix('+') {
                out.push(text);
            } else if line.starts_with('-') {
                next_old += 1;
            } else if let Some(text) = line.strip_prefix(' ') {
                out.push(text);
                next_old += 1;
            }
        }
        out.extend_from_slice(&old_lines[next_old..]);
        out.iter().map(|line| format!("{line}\n")).collect()
    }

    #[test]
    fn plans_all_operations_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        fs::write(cwd.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        fs::write(cwd.join("old.txt"), "bye\n").unwrap();
        fs::write(cwd.join("m.txt"), "m\n").unwrap();
        let action = plan(
            "*** Begin Patch\n*** Add File: sub/new.txt\n+hi\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** Delete File: old.txt\n*** Update File: m.txt\n*** Move to: moved/m.txt\n@@\n-m\n+M\n*** End Patch",
            cwd,
        )
        .unwrap();
        let expected: BTreeMap<PathBuf, FileChange> = [
            (
                cwd.join("sub/new.txt"),
                FileChange::Add {
                    content: "hi\n".to_string(),
                },
            ),
            (
                cwd.join("a.txt"),
                FileChange::Update {
                    unified_diff: "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n".to_string(),
                    move_path: None,
                },
            ),
            (
                cwd.join("old.txt"),
                FileChange::Delete {
                    content: "bye\n".to_string(),
                },
            ),
            (
                cwd.join("m.txt"),
                FileChange::Update {
                    unified_diff: "@@ -1 +1 @@\n-m\n+M\n".to_string(),
                    move_path: Some(cwd.join("moved/m.txt")),
                },
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(action.changes(), &expected);
        assert_eq!(
            action.summary(),
            &AppliedSummary {
                added: vec![PathBuf::from("sub/new.txt")],
                modified: vec![PathBuf::from("a.txt"), PathBuf::from("moved/m.txt")],
                deleted: vec![PathBuf::from("old.txt")],
                warnings: Vec::new(),
            }
        );
        assert_eq!(action.writes().len(), 5);
        assert!(!cwd.join("sub").exists());
        assert_eq!(
            fs::read_to_string(cwd.join("a.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
        assert!(cwd.join("old.txt").exists());
    }

    #[test]
    fn open_text_stands_for_the_disk_and_touched_paths_name_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        fs::write(cwd.join("a.txt"), "one\ntwo\n").unwrap();
        fs::write(cwd.join("m.txt"), "m\n").unwrap();
        let patch = parse_patch(
            "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two (unsaved)\n+2\n*** Update File: m.txt\n*** Move to: sub/../n.txt\n@@\n-m\n+M\n*** Add File: new.txt\n+x\n*** End Patch",
        )
        .unwrap();
        assert_eq!(
            touched_paths(&patch, cwd),
            vec![
                cwd.join("a.txt"),
                cwd.join("m.txt"),
                cwd.join("n.txt"),
                cwd.join("new.txt")
            ]
        );
        // Against the disk the hunk's context is not there; against the open text it is.
        assert!(matches!(
            plan_patch(&patch, cwd),
            Err(PlanError::ContextNotFound { .. })
        ));
        let open: BTreeMap<PathBuf, String> =
            [(cwd.join("a.txt"), "one\ntwo (unsaved)\n".to_string())].into();
        let action = plan_patch_over(&patch, cwd, &open).unwrap();
        let write = action
            .writes()
            .iter()
            .find(|w| w.path == cwd.join("a.txt"))
            .unwrap();
        assert_eq!(write.before.as_deref(), Some("one\ntwo (unsaved)\n"));
        assert_eq!(write.after.as_deref(), Some("one\n2\n"));
        assert_eq!(fs::read_to_string(cwd.join("a.txt")).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn file_change_map_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let old: String = (1..=40).map(|n| format!("line {n}\n")).collect();
        fs::write(cwd.join("big.txt"), &old).unwrap();
        let action = plan(
            "*** Begin Patch\n*** Update File: big.txt\n@@\n line 4\n-line 5\n+five\n@@ line 30\n-line 31\n+thirty-one\n+extra\n*** Add File: n.txt\n+x\n*** End Patch",
            cwd,
        )
        .unwrap();
        let json = serde_json::to_string(action.changes()).unwrap();
        let back: BTreeMap<PathBuf, FileChange> = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, action.changes());

        let Some(FileChange::Update { unified_diff, .. }) = back.get(&cwd.join("big.txt")) else {
            panic!("missing update: {back:?}");
        };
        assert!(
            unified_diff.starts_with("@@ -2,7 +2,7 @@\n"),
            "{unified_diff}"
        );
        let expected = old
            .replace("line 5\n", "five\n")
            .replace("line 31\n", "thirty-one\nextra\n");
        assert_eq!(apply_unified_diff(&old, unified_diff), expected);
        let write = action
            .writes()
            .iter()
            .find(|w| w.path == cwd.join("big.txt"))
            .unwrap();
        assert_eq!(write.after.as_deref(), Some(expected.as_str()));
    }

    #[test]
    fn resolves_relative_absolute_and_dotted_paths() {
        let cwd = Path::new("/work/project");
        assert_eq!(
            resolve(cwd, Path::new("a/./b.txt")),
            PathBuf::from("/work/project/a/b.txt")
        );
        assert_eq!(
            resolve(cwd, Path::new("../x.txt")),
            PathBuf::from("/work/x.txt")
        );
        assert_eq!(
            resolve(cwd, Path::new("/etc/../tmp/y")),
            PathBuf::from("/tmp/y")
        );
        assert_eq!(resolve(cwd, Path::new("/../../z")), PathBuf::from("/z"));
        assert_eq!(
            resolve(Path::new("rel"), Path::new("../../q")),
            PathBuf::from("../q")
        );
    }

    #[test]
    fn absolute_paths_and_overwrite_on_add() {
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("exists.txt");
        fs::write(&existing, "old\n").unwrap();
        let text = format!(
            "*** Begin Patch\n*** Add File: {}\n+new\n*** End Patch",
            existing.display()
        );
        let action = plan(&text, Path::new("/nonexistent-cwd")).unwrap();
        assert_eq!(
            action.writes(),
            &[PlannedWrite {
                path: existing.clone(),
                before: Some("old\n".to_string()),
                after: Some("new\n".to_string()),
                permissions_from: None,
            }]
        );
    }

    #[test]
    fn plan_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        fs::create_dir(cwd.join("d")).unwrap();
        fs::write(cwd.join("a.txt"), "a\n").unwrap();
        let err = |text: &str| plan(text, cwd).unwrap_err().to_string();
        let shown = |name: &str| cwd.join(name).display().to_string();
        assert_eq!(
            err("*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n*** End Patch"),
            format!(
                "cannot update `{}`: the file does not exist",
                shown("nope.txt")
            )
        );
        assert_eq!(
            err("*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch"),
            format!(
                "cannot delete `{}`: the file does not exist",
                shown("nope.txt")
            )
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: d\n+x\n*** End Patch"),
            format!("cannot add `{}`: it is a directory", shown("d"))
        );
        assert_eq!(
            err(
                "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: ./a.txt\n+x\n*** End Patch"
            ),
            format!(
                "`{}` is changed by more than one operation in this patch; put all its changes in one `*** Update File:` block",
                shown("a.txt")
            )
        );
    }

    #[test]
    fn move_onto_itself_is_a_plain_update() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        let action = plan(
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ./a.txt\n@@\n-a\n+b\n*** End Patch",
            dir.path(),
        )
        .unwrap();
        assert_eq!(
            action.changes().get(&dir.path().join("a.txt")),
            Some(&FileChange::Update {
                unified_diff: "@@ -1 +1 @@\n-a\n+b\n".to_string(),
                move_path: None,
            })
        );
    }
}
