//! Git marketplaces: sources Codex accepts (`owner/repo[@ref]` on GitHub, https, http, ssh and
//! `git@host:path` URLs), cloned with the system's `git` into a staging directory and moved
//! into place only once complete. Git never prompts (a private repository without
//! credentials fails with git's message instead of hanging).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::PluginError;

/// A git location and the ref it names, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitSource {
    pub url: String,
    pub ref_name: Option<String>,
}

/// Reads a marketplace source as a git location; `None` when it is not one.
pub(crate) fn git_source(source: &str) -> Option<GitSource> {
    let is_url = ["https://", "http://", "ssh://", "git://"]
        .iter()
        .any(|scheme| source.starts_with(scheme))
        || (source.starts_with("git@") && source.contains(':'));
    if is_url {
        let (url, ref_name) = match source.rsplit_once('#') {
            Some((url, reference)) if !reference.is_empty() => (url, Some(reference.to_string())),
            _ => (source, None),
        };
        return Some(GitSource {
            url: url.to_string(),
            ref_name,
        });
    }
    // `owner/repo[@ref]`: exactly two path segments of plain names.
    let (path, ref_name) = match source.split_once('@') {
        Some((path, reference)) if !reference.is_empty() => (path, Some(reference.to_string())),
        Some(_) => return None,
        None => (source, None),
    };
    let mut parts = path.split('/');
    let (Some(owner), Some(repo), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    let plain = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (plain(owner) && plain(repo)).then(|| GitSource {
        url: format!("https://github.com/{owner}/{repo}.git"),
        ref_name,
    })
}

fn git(args: &[&str], dir: Option<&Path>) -> Result<String, PluginError> {
    let mut command = Command::new("git");
    command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = command
        .output()
        .map_err(|err| PluginError::Git(format!("cannot run git: {err}")))?;
    if !output.status.success() {
        return Err(PluginError::Git(format!(
            "git {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Clones `source` (sparsely when `sparse` names paths) into a new directory under
/// `staging_parent`, and returns it.
pub(crate) fn clone_into_staging(
    source: &GitSource,
    sparse: &[String],
    staging_parent: &Path,
) -> Result<PathBuf, PluginError> {
    std::fs::create_dir_all(staging_parent).map_err(|err| PluginError::io(staging_parent, err))?;
    let staging = tempfile::Builder::new()
        .prefix("marketplace-")
        .tempdir_in(staging_parent)
        .map_err(|err| PluginError::io(staging_parent, err))?
        .keep();
    let checkout = staging.join("checkout");
    let checkout_text = checkout.display().to_string();
    let mut args = vec!["clone", "--quiet"];
    if !sparse.is_empty() {
        args.extend(["--no-checkout", "--filter=blob:none"]);
    }
    args.extend([source.url.as_str(), checkout_text.as_str()]);
    let cloned = git(&args, None).and_then(|_| {
        if !sparse.is_empty() {
            let mut sparse_args = vec!["sparse-checkout", "set", "--no-cone"];
            sparse_args.extend(sparse.iter().map(String::as_str));
            git(&sparse_args, Some(&checkout))?;
        }
        match &source.ref_name {
            Some(reference) => git(&["checkout", "--quiet", reference], Some(&checkout)),
            None if !sparse.is_empty() => git(&["checkout", "--quiet"], Some(&checkout)),
            None => Ok(String::new()),
        }
    });
    if let Err(err) = cloned {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(err);
    }
    Ok(checkout)
}

/// The commit checked out in `dir`.
pub(crate) fn revision(dir: &Path) -> Result<String, PluginError> {
    git(&["rev-parse", "HEAD"], Some(dir))
}

/// Fetches `reference` (the remote's default branch when `None`) into the clone at `dir`
/// and checks it out; returns the revisions before and after.
pub(crate) fn update(dir: &Path, reference: Option<&str>) -> Result<(String, String), PluginError> {
    let before = revision(dir)?;
    git(
        &["fetch", "--quiet", "origin", reference.unwrap_or("HEAD")],
        Some(dir),
    )?;
    git(
        &["checkout", "--quiet", "--detach", "FETCH_HEAD"],
        Some(dir),
    )?;
    let after = revision(dir)?;
    Ok((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_read_as_codex_reads_them() {
        assert_eq!(
            git_source("owner/repo@dev"),
            Some(GitSource {
                url: "https://github.com/owner/repo.git".into(),
                ref_name: Some("dev".into())
            })
        );
        assert_eq!(
            git_source("https://example.com/m.git").map(|s| s.url),
            Some("https://example.com/m.git".into())
        );
        assert!(git_source("git@example.com:o/r.git").is_some());
        for not_git in [
            "file:///tmp/x",
            "owner",
            "owner/repo/extra",
            "./local",
            "/abs/dir",
        ] {
            assert_eq!(git_source(not_git), None, "{not_git}");
        }
    }
}
