//! End-to-end tests: parse, plan and apply against temporary directories.

use super::*;
use crate::error::PlanError;
use crate::{ApplyPatchError, apply_patch_in_dir, parse_patch, plan_patch};
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;

/// Every file under `dir` (relative path → contents), including hidden leftovers.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.insert(format!("{relative}/"), String::new());
                walk(root, &path, out);
            } else {
                out.insert(relative, fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn files(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(path, contents)| (path.to_string(), contents.to_string()))
        .collect()
}

fn seed(dir: &Path, entries: &[(&str, &str)]) {
    for (path, contents) in entries {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }
}

const MIXED_PATCH: &str = "*** Begin Patch
*** Add File: nested/dir/new.txt
+fresh
*** Update File: a.txt
@@ fn main() {
-    old();
+    new();
*** Delete File: old.txt
*** Update File: src/lib.rs
*** Move to: src/renamed.rs
@@
-pub fn f() {}
+pub fn g() {}
*** End Patch
";

#[test]
fn adds_updates_moves_and_deletes_in_one_patch() {
    let dir = tempfile::tempdir().unwrap();
    seed(
        dir.path(),
        &[
            ("a.txt", "fn main() {\n    old();\n}\n"),
            ("old.txt", "gone\n"),
            ("src/lib.rs", "pub fn f() {}\n"),
        ],
    );
    let summary = apply_patch_in_dir(MIXED_PATCH, dir.path()).unwrap();
    assert_eq!(
        summary.to_string(),
        "Success. Updated the following files:\nA nested/dir/new.txt\nM a.txt\nM src/renamed.rs\nD old.txt\n"
    );
    assert_eq!(
        snapshot(dir.path()),
        files(&[
            ("a.txt", "fn main() {\n    new();\n}\n"),
            ("nested/", ""),
            ("nested/dir/", ""),
            ("nested/dir/new.txt", "fresh\n"),
            ("src/", ""),
            ("src/renamed.rs", "pub fn g() {}\n"),
        ])
    );
}

#[test]
fn failing_second_of_three_files_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let seeded = [("one.txt", "1\n"), ("two.txt", "2\n"), ("three.txt", "3\n")];
    seed(dir.path(), &seeded);
    let before = snapshot(dir.path());
    let patch = "*** Begin Patch\n*** Update File: one.txt\n-1\n+uno\n*** Update File: two.txt\n@@\n-two\n+dos\n*** Delete File: three.txt\n*** Add File: extra/new.txt\n+n\n*** End Patch";
    let err = apply_patch_in_dir(patch, dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to apply chunk 1 (patch line 6) to `{}`: could not find these lines:\ntwo",
            dir.path().join("two.txt").display()
        )
    );
    assert!(matches!(err, ApplyPatchError::Plan(_)));
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn failure_while_committing_rolls_everything_back() {
    let dir = tempfile::tempdir().unwrap();
    seed(
        dir.path(),
        &[
            ("a.txt", "fn main() {\n    old();\n}\n"),
            ("old.txt", "gone\n"),
            ("src/lib.rs", "pub fn f() {}\n"),
        ],
    );
    let before = snapshot(dir.path());
    let action = plan_patch(&parse_patch(MIXED_PATCH).unwrap(), dir.path()).unwrap();
    // Fail on the last file installed (the move's destination), after the add, the update
    // and the delete have been committed.
    let fault = dir.path().join("src/renamed.rs");
    let err = Transaction::default()
        .run(action.writes(), |_| Ok(()), Some(Fault::Install(&fault)))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to install `{}`: injected failure; no file was changed",
            fault.display()
        )
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn stale_plan_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b\n+B\n*** End Patch";
    let action = plan_patch(&parse_patch(patch).unwrap(), dir.path()).unwrap();
    fs::write(dir.path().join("b.txt"), "edited meanwhile\n").unwrap();
    let before = snapshot(dir.path());
    let err = apply(&action).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` changed on disk after the patch was checked; nothing was written",
            dir.path().join("b.txt").display()
        )
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn add_overwrites_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[("a.txt", "old\n")]);
    let summary = apply_patch_in_dir(
        "*** Begin Patch\n*** Add File: a.txt\n+new\n*** End Patch",
        dir.path(),
    )
    .unwrap();
    assert_eq!(summary.added, vec![PathBuf::from("a.txt")]);
    assert_eq!(snapshot(dir.path()), files(&[("a.txt", "new\n")]));
}

#[test]
fn move_overwrites_destination_and_fuzzy_context_applies() {
    let dir = tempfile::tempdir().unwrap();
    seed(
        dir.path(),
        &[
            ("src.md", "Title \u{2014} \u{201C}quoted\u{201D}   \nbody\n"),
            ("dst.md", "will be replaced\n"),
        ],
    );
    apply_patch_in_dir(
        "*** Begin Patch\n*** Update File: src.md\n*** Move to: dst.md\n@@\n-Title - \"quoted\"\n+Title\n body\n*** End of File\n*** End Patch",
        dir.path(),
    )
    .unwrap();
    assert_eq!(snapshot(dir.path()), files(&[("dst.md", "Title\nbody\n")]));
}

#[cfg(unix)]
#[test]
fn keeps_permissions_and_writes_through_symlinks() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[("run.sh", "echo hi\n"), ("real.txt", "x\n")]);
    let script = dir.path().join("run.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    symlink(dir.path().join("real.txt"), dir.path().join("link.txt")).unwrap();
    apply_patch_in_dir(
        "*** Begin Patch\n*** Update File: run.sh\n-echo hi\n+echo bye\n*** Update File: link.txt\n-x\n+y\n*** End Patch",
        dir.path(),
    )
    .unwrap();
    let mode = fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
    assert!(
        fs::symlink_metadata(dir.path().join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("real.txt")).unwrap(),
        "y\n"
    );
}

#[test]
fn summary_display_lists_warnings() {
    let summary = AppliedSummary {
        added: vec![PathBuf::from("new.txt")],
        modified: vec![PathBuf::from("a.txt")],
        deleted: vec![PathBuf::from("old.txt")],
        warnings: vec!["could not remove temporary file `x`".to_string()],
    };
    assert_eq!(
        summary.to_string(),
        "Success. Updated the following files:\nA new.txt\nM a.txt\nD old.txt\nwarning: could not remove temporary file `x`\n"
    );
}

#[test]
fn unreadable_target_fails_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    // `blocker` is a file, so nothing can live under `blocker/`.
    seed(dir.path(), &[("blocker", "file\n"), ("a.txt", "a\n")]);
    let before = snapshot(dir.path());
    let err = apply_patch_in_dir(
        "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Add File: deep/er/x.txt\n+x\n*** Add File: blocker/new.txt\n+n\n*** End Patch",
        dir.path(),
    )
    .unwrap_err();
    assert!(
        matches!(err, ApplyPatchError::Plan(PlanError::Read { .. })),
        "{err}"
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[cfg(unix)]
#[test]
fn stale_directory_layout_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[("a.txt", "a\n")]);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Add File: late/new.txt\n+n\n*** End Patch";
    let action = plan_patch(&parse_patch(patch).unwrap(), dir.path()).unwrap();
    // After planning, a file appears where a directory must be created.
    fs::write(dir.path().join("late"), "in the way\n").unwrap();
    let before = snapshot(dir.path());
    let err = apply(&action).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to resolve `{}`: Not a directory (os error 20); no file was changed",
            dir.path().join("late/new.txt").display()
        )
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn staging_failure_removes_temp_files_and_created_dirs() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[("a.txt", "a\n")]);
    let before = snapshot(dir.path());
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Add File: deep/er/x.txt\n+x\n*** Add File: z.txt\n+z\n*** End Patch";
    let action = plan_patch(&parse_patch(patch).unwrap(), dir.path()).unwrap();
    let fault = dir.path().join("z.txt");
    let err = Transaction::default()
        .run(action.writes(), |_| Ok(()), Some(Fault::Stage(&fault)))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to write a temporary file for `{}`: injected failure; no file was changed",
            fault.display()
        )
    );
    assert_eq!(snapshot(dir.path()), before);
}

/// A process beside the agent swaps a checked directory for a link to somewhere else after
/// the check and before the write: the write fails instead of following the link.
#[cfg(unix)]
#[test]
fn a_link_planted_after_the_check_fails_the_patch() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    seed(&ws, &[("sub/a.txt", "a\n")]);
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("a.txt"), "a\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: sub/a.txt\n-a\n+pwned\n*** Add File: sub/new.txt\n+pwned\n*** End Patch";
    let action = plan_patch(&parse_patch(patch).unwrap(), &ws).unwrap();
    let mut checked = Vec::new();
    let err = apply_checked(&action, |resolved| {
        checked.push(resolved.real.clone());
        if checked.len() == action.writes().len() {
            // Every place was accepted; now the attacker moves the directory away and plants
            // a link with its name.
            fs::rename(ws.join("sub"), dir.path().join("moved")).unwrap();
            symlink(&outside, ws.join("sub")).unwrap();
        }
        Ok(())
    })
    .unwrap_err();
    assert!(matches!(err, ApplyError::Redirected { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` was redirected by a symlink that appeared at `{}` after the patch was checked; no file was changed",
            ws.join("sub/a.txt").display(),
            ws.join("sub").display()
        )
    );
    assert_eq!(checked, vec![ws.join("sub/a.txt"), ws.join("sub/new.txt")]);
    assert_eq!(snapshot(&outside), files(&[("a.txt", "a\n")]));
    assert_eq!(
        snapshot(&dir.path().join("moved")),
        files(&[("a.txt", "a\n")])
    );
}

/// The caller's check sees where a write through a link really lands and can refuse it;
/// nothing is written then.
#[cfg(unix)]
#[test]
fn a_refused_place_writes_nothing() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    seed(&ws, &[("a.txt", "a\n")]);
    seed(&outside, &[("b.txt", "b\n")]);
    symlink(&outside, ws.join("out")).unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+x\n*** Update File: out/b.txt\n-b\n+pwned\n*** End Patch";
    let action = plan_patch(&parse_patch(patch).unwrap(), &ws).unwrap();
    let err = apply_checked(&action, |resolved| match &resolved.link {
        Some(hop) if !resolved.real.starts_with(&ws) => {
            Err(format!("through `{}`", hop.link.display()))
        }
        _ => Ok(()),
    })
    .unwrap_err();
    assert!(matches!(err, ApplyError::Refused { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("through `{}`", ws.join("out").display())
    );
    assert_eq!(snapshot(&outside), files(&[("b.txt", "b\n")]));
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n");
}

/// A hard link to a file elsewhere is replaced, never written through; deleting a symlink
/// removes the link, not what it points to.
#[cfg(unix)]
#[test]
fn hard_links_are_replaced_and_deleted_links_leave_their_targets() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    fs::create_dir(&ws).unwrap();
    seed(
        &outside,
        &[("secret.txt", "keep\n"), ("kept.txt", "kept\n")],
    );
    fs::hard_link(outside.join("secret.txt"), ws.join("hard.txt")).unwrap();
    symlink(outside.join("kept.txt"), ws.join("soft.txt")).unwrap();
    apply_patch_in_dir(
        "*** Begin Patch\n*** Update File: hard.txt\n-keep\n+changed\n*** Delete File: soft.txt\n*** End Patch",
        &ws,
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(ws.join("hard.txt")).unwrap(),
        "changed\n"
    );
    assert_eq!(
        snapshot(&outside),
        files(&[("kept.txt", "kept\n"), ("secret.txt", "keep\n")])
    );
    assert!(fs::symlink_metadata(ws.join("soft.txt")).is_err());
}
