//! Turning a review target into the reviewer's brief, after checking that it names something
//! that exists: a typo in a branch name is the client's error, not a puzzle for the model.

use std::path::{Path, PathBuf};

use keel_protocol::{ReviewRequest, ReviewTarget};

/// Why a review cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// The target needs git, and the working directory is not in a repository.
    #[error("{} is not in a git repository; review uncommitted changes, a branch or a commit from inside one", .0.display())]
    NotARepository(PathBuf),
    /// A custom review without instructions.
    #[error("the review instructions are empty")]
    EmptyInstructions,
    /// A base-branch review without a branch.
    #[error("the base branch is empty")]
    EmptyBranch,
    /// The base branch does not exist.
    #[error("branch '{0}' does not exist in this repository")]
    UnknownBranch(String),
    /// A commit review without a commit.
    #[error("the commit is empty")]
    EmptyCommit,
    /// The commit does not exist.
    #[error("commit '{0}' does not exist in this repository")]
    UnknownCommit(String),
    /// An uncommitted-changes review of a clean working tree.
    #[error("nothing to review: the working tree has no uncommitted changes")]
    NothingToReview,
    /// git itself failed.
    #[error("git failed: {0}")]
    Git(String),
}

/// A review ready to run: the reviewer's brief and the label people see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedReview {
    /// The user message the reviewer starts from.
    pub prompt: String,
    /// A short description ("changes against 'main'"), the request's own hint if it had one.
    pub label: String,
}

/// Checks `request` against the repository at `cwd` and writes the reviewer's brief.
pub async fn resolve_review(
    cwd: &Path,
    request: &ReviewRequest,
) -> Result<ResolvedReview, ReviewError> {
    let (prompt, label) = match &request.target {
        ReviewTarget::Custom { instructions } => {
            let instructions = instructions.trim();
            if instructions.is_empty() {
                return Err(ReviewError::EmptyInstructions);
            }
            (instructions.to_string(), instructions.to_string())
        }
        ReviewTarget::UncommittedChanges => {
            repository_root(cwd).await?;
            let status = git(cwd, &["status", "--porcelain", "--untracked-files=all"]).await?;
            if status.trim().is_empty() {
                return Err(ReviewError::NothingToReview);
            }
            (
                "Review the uncommitted changes of this repository: staged, unstaged and \
                 untracked files. See them with `git status`, `git diff HEAD` (or `git diff` \
                 and `git diff --cached` before the first commit) and by reading the \
                 untracked files."
                    .to_string(),
                "uncommitted changes".to_string(),
            )
        }
        ReviewTarget::BaseBranch { branch } => {
            let branch = branch.trim();
            if branch.is_empty() {
                return Err(ReviewError::EmptyBranch);
            }
            repository_root(cwd).await?;
            if git_commit(cwd, branch).await.is_none() {
                return Err(ReviewError::UnknownBranch(branch.to_string()));
            }
            let base = git(cwd, &["merge-base", "HEAD", branch]).await?;
            let base = base.trim();
            (
                format!(
                    "Review the changes of the current branch against the base branch \
                     '{branch}'. They start at the merge base {base}: `git diff {base}` shows \
                     all of them, uncommitted work included, and `git log {base}..HEAD` lists \
                     the commits."
                ),
                format!("changes against '{branch}'"),
            )
        }
        ReviewTarget::Commit { sha, title } => {
            let sha = sha.trim();
            if sha.is_empty() {
                return Err(ReviewError::EmptyCommit);
            }
            repository_root(cwd).await?;
            let Some(full) = git_commit(cwd, sha).await else {
                return Err(ReviewError::UnknownCommit(sha.to_string()));
            };
            let short: String = full.chars().take(7).collect();
            let named = match title.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                Some(title) => format!("commit {short}: {title}"),
                None => format!("commit {short}"),
            };
            (
                format!(
                    "Review the changes introduced by {named} (full id {full}). `git show \
                     {full}` shows them."
                ),
                named,
            )
        }
    };
    let label = request
        .user_facing_hint
        .as_deref()
        .map(str::trim)
        .filter(|hint| !hint.is_empty())
        .map_or(label, str::to_string);
    Ok(ResolvedReview { prompt, label })
}

async fn repository_root(cwd: &Path) -> Result<String, ReviewError> {
    git(cwd, &["rev-parse", "--show-toplevel"])
        .await
        .map_err(|_| ReviewError::NotARepository(cwd.to_path_buf()))
}

/// The full id of the commit `revision` names, if it names one.
async fn git_commit(cwd: &Path, revision: &str) -> Option<String> {
    if revision.starts_with('-') {
        return None;
    }
    let spec = format!("{revision}^{{commit}}");
    git(
        cwd,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .await
    .ok()
    .map(|out| out.trim().to_string())
    .filter(|id| !id.is_empty())
}

async fn git(cwd: &Path, args: &[&str]) -> Result<String, ReviewError> {
    let output = tokio::process::Command::new("git")
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|err| ReviewError::Git(format!("cannot run git: {err}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(ReviewError::Git(format!(
            "git {}: {}",
            args.join(" "),
            stderr.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
