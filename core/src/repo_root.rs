//! Where a project's repository starts: the nearest folder at or above a directory whose
//! `.git` is a git directory or a pointer file. An empty `.git` folder does not count: git
//! itself passes over one, and the sandbox leaves one in place (a read-only placeholder) while
//! a command runs in a workspace that has no repository.

use std::path::Path;

/// The repository root for `dir`, if any.
pub(crate) fn repo_root(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|ancestor| has_git(ancestor))
}

/// Whether `dir` holds a `.git` that git would take: a pointer file, or a folder with
/// something in it.
fn has_git(dir: &Path) -> bool {
    let dot_git = dir.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Err(_) => false,
        Ok(metadata) if metadata.is_dir() => {
            std::fs::read_dir(&dot_git).is_ok_and(|mut entries| entries.next().is_some())
        }
        // A file (worktrees, `--separate-git-dir`) or a link to a git directory.
        Ok(_) => dot_git.exists(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_git_folder_is_passed_over() -> std::io::Result<()> {
        let outer = tempfile::tempdir()?;
        let inner = outer.path().join("project");
        std::fs::create_dir_all(inner.join(".git"))?;
        assert_eq!(repo_root(&inner), None);
        std::fs::write(outer.path().join(".git"), "gitdir: elsewhere\n")?;
        assert_eq!(repo_root(&inner), Some(outer.path()));
        std::fs::write(inner.join(".git/HEAD"), "ref: refs/heads/main\n")?;
        assert_eq!(repo_root(&inner), Some(inner.as_path()));
        Ok(())
    }
}
