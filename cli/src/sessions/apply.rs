//! `keel apply`: the file changes of a session's last turn that changed files, as one patch
//! applied to the current directory with `git apply` (or printed). For carrying a session's
//! work from where it ran (another checkout, a worktree, a container's copy) to here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use anyhow::Context;
use clap::Args;
use keel_protocol::app_server::{
    FileUpdateChange, PatchApplyStatus, PatchChangeKind, ThreadItem, ThreadListCwdFilter,
    ThreadListParams, ThreadReadParams, client_request,
};

use super::{local_client, lookup};
use crate::failure::usage;

/// Arguments of `keel apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Session id or thread name (default: the newest session of the current directory).
    #[arg(value_name = "SESSION")]
    session: Option<String>,
    /// Print the patch instead of applying it.
    #[arg(long)]
    print: bool,
}

/// `keel apply`.
pub async fn apply(args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let (client, home) = local_client().await?;
    let here = std::env::current_dir().context("reading the current directory")?;
    let thread_id = match &args.session {
        Some(session) => lookup::thread_id(&client, session, false).await?,
        None => client
            .request::<client_request::ThreadList>(ThreadListParams {
                limit: Some(1),
                cwd: Some(ThreadListCwdFilter::One(here.clone())),
                source_kinds: super::lookup::top_level_kinds(),
                ..ThreadListParams::default()
            })
            .await?
            .data
            .into_iter()
            .next()
            .map(|thread| thread.id)
            .ok_or_else(|| {
                usage(format!(
                    "no recorded sessions under {} for {}: name one (`keel sessions --all` \
                     lists them)",
                    home.display(),
                    here.display()
                ))
            })?,
    };
    let thread = client
        .request::<client_request::ThreadRead>(ThreadReadParams {
            thread_id: thread_id.clone(),
            include_turns: true,
        })
        .await?
        .thread;
    let changes: Vec<FileUpdateChange> = thread
        .turns
        .iter()
        .rev()
        .map(|turn| {
            turn.items
                .iter()
                .filter_map(|item| match item {
                    ThreadItem::FileChange {
                        changes,
                        status: PatchApplyStatus::Completed,
                        ..
                    } => Some(changes.clone()),
                    _ => None,
                })
                .flatten()
                .collect::<Vec<_>>()
        })
        .find(|changes| !changes.is_empty())
        .ok_or_else(|| usage(format!("session {thread_id} changed no files")))?;
    let patch = git_patch(&changes, &thread.cwd)?;
    if args.print {
        print!("{patch}");
        return Ok(ExitCode::SUCCESS);
    }
    git_apply(&patch, &here)?;
    println!(
        "applied the last changes of session {thread_id} ({} file change(s)) to {}",
        changes.len(),
        here.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs `git apply` on `patch` in `dir`; git's own message when it refuses.
fn git_apply(patch: &str, dir: &Path) -> anyhow::Result<()> {
    let mut child = std::process::Command::new("git")
        .args(["apply", "--whitespace=nowarn", "-"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .context("running git (is it installed?)")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(patch.as_bytes())
            .context("writing the patch to git")?;
    }
    let output = child.wait_with_output().context("waiting for git apply")?;
    if !output.status.success() {
        anyhow::bail!(
            "git apply refused the patch (nothing was changed): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The changes as one patch `git apply` reads, with paths relative to `cwd`.
fn git_patch(changes: &[FileUpdateChange], cwd: &Path) -> anyhow::Result<String> {
    let relative = |path: &Path| -> anyhow::Result<String> {
        let path: PathBuf = if path.is_absolute() {
            path.strip_prefix(cwd).map(Path::to_path_buf).map_err(|_| {
                usage(format!(
                    "the session changed {}, outside its working directory {}",
                    path.display(),
                    cwd.display()
                ))
            })?
        } else {
            path.to_path_buf()
        };
        Ok(path.display().to_string())
    };
    let mut patch = String::new();
    for change in changes {
        let path = relative(&change.path)?;
        match &change.kind {
            PatchChangeKind::Add => {
                patch.push_str(&format!(
                    "diff --git a/{path} b/{path}\nnew file mode 100644\n"
                ));
                if !change.diff.is_empty() {
                    patch.push_str(&format!("--- /dev/null\n+++ b/{path}\n"));
                    patch.push_str(&whole_file_hunk(&change.diff, '+'));
                }
            }
            PatchChangeKind::Delete => {
                patch.push_str(&format!(
                    "diff --git a/{path} b/{path}\ndeleted file mode 100644\n"
                ));
                if !change.diff.is_empty() {
                    patch.push_str(&format!("--- a/{path}\n+++ /dev/null\n"));
                    patch.push_str(&whole_file_hunk(&change.diff, '-'));
                }
            }
            PatchChangeKind::Update { move_path } => {
                let to = match move_path {
                    Some(target) => relative(target)?,
                    None => path.clone(),
                };
                patch.push_str(&format!("diff --git a/{path} b/{to}\n"));
                if to != path {
                    if change.diff.is_empty() {
                        patch.push_str("similarity index 100%\n");
                    }
                    patch.push_str(&format!("rename from {path}\nrename to {to}\n"));
                }
                if !change.diff.is_empty() {
                    patch.push_str(&format!("--- a/{path}\n+++ b/{to}\n"));
                    patch.push_str(&change.diff);
                    if !change.diff.ends_with('\n') {
                        patch.push('\n');
                    }
                }
            }
        }
    }
    Ok(patch)
}

/// A hunk that adds (`+`) or removes (`-`) all of `content`.
fn whole_file_hunk(content: &str, sign: char) -> String {
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let range = format!("1,{}", lines.len());
    let mut hunk = if sign == '+' {
        format!("@@ -0,0 +{range} @@\n")
    } else {
        format!("@@ -{range} +0,0 @@\n")
    };
    for line in lines {
        hunk.push(sign);
        hunk.push_str(line);
        if !line.ends_with('\n') {
            hunk.push_str("\n\\ No newline at end of file\n");
        }
    }
    hunk
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn whole_file_hunks_count_lines_and_mark_a_missing_newline() {
        assert_eq!(whole_file_hunk("a\nb\n", '+'), "@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!(
            whole_file_hunk("a\nb", '-'),
            "@@ -1,2 +0,0 @@\n-a\n-b\n\\ No newline at end of file\n"
        );
    }
}
