//! A [`SandboxPolicy`] made concrete for one command: which paths it may write, which stay
//! read-only inside them (the protected folders), and whether it may use the network.

use std::path::{Path, PathBuf};

use keel_protocol::SandboxPolicy;

/// Device files every sandboxed command may write (they hold no data).
pub(crate) const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Folders directly inside a writable root that model commands and patches may not change:
/// git's (its hooks and config run outside the sandbox), Keel's and Codex's project config and
/// hooks, skills, and AWS credentials.
pub const PROTECTED_FOLDERS: &[&str] = &[".git", ".codex", ".agents", ".aws"];

/// Folders protected like [`PROTECTED_FOLDERS`] when they exist: Keel's own default home
/// (`~/.keel`, whose `config.toml` holds hook trust and the sandbox mode) when a workspace is
/// the home directory.
pub const PROTECTED_IF_PRESENT: &[&str] = &[".keel"];

/// The policy for one command, with every root spelled out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    /// Directories the command may write anywhere beneath (an empty list: read-only).
    pub writable_roots: Vec<PathBuf>,
    /// Paths beneath writable roots that stay read-only: each root's protected folders
    /// ([`PROTECTED_FOLDERS`]) and the git directory a `.git` pointer file names. A missing
    /// one is listed too (it may not be created), except in the temporary roots.
    pub read_only_subpaths: Vec<PathBuf>,
    /// Whether the command may create network sockets.
    pub network: bool,
}

impl ResolvedPolicy {
    /// Resolves `policy` for a conversation whose workspace is `cwd`, with the command's
    /// `$TMPDIR`; `None` for `danger-full-access`, which is not sandboxed at all.
    ///
    /// `workspace-write` may write under `cwd`, the configured roots (relative ones against
    /// `cwd`), `$TMPDIR` and `/tmp` plus `/dev/shm` (each unless excluded). The protected
    /// folders directly inside each root stay read-only (`.git`, with the git directory its
    /// pointer file names, unless `allow_git_writes`); in `$TMPDIR`, `/tmp` and `/dev/shm`
    /// only those that exist.
    pub fn resolve(
        policy: &SandboxPolicy,
        cwd: &Path,
        tmpdir: Option<&Path>,
        allow_git_writes: bool,
    ) -> Option<Self> {
        match policy {
            SandboxPolicy::DangerFullAccess => None,
            SandboxPolicy::ReadOnly => Some(Self {
                writable_roots: Vec::new(),
                read_only_subpaths: Vec::new(),
                network: false,
            }),
            SandboxPolicy::WorkspaceWrite {
                writable_roots,
                network_access,
                exclude_tmpdir_env_var,
                exclude_slash_tmp,
            } => {
                let mut roots = vec![cwd.to_path_buf()];
                roots.extend(writable_roots.iter().map(|root| cwd.join(root)));
                let mut temporary = Vec::new();
                if !exclude_tmpdir_env_var && let Some(tmpdir) = tmpdir {
                    temporary.push(cwd.join(tmpdir));
                }
                if !exclude_slash_tmp {
                    temporary.push(PathBuf::from("/tmp"));
                    temporary.push(PathBuf::from("/dev/shm"));
                }
                let mut unique: Vec<PathBuf> = Vec::new();
                for root in roots.iter().chain(&temporary) {
                    if !unique.contains(root) {
                        unique.push(root.clone());
                    }
                }
                let mut read_only_subpaths: Vec<PathBuf> = Vec::new();
                for root in &unique {
                    // A temporary root is no project: only what already exists is protected,
                    // so no run leaves empty folders in /tmp.
                    let is_temporary = temporary.contains(root) && !roots.contains(root);
                    for name in PROTECTED_FOLDERS {
                        if *name == ".git" && allow_git_writes {
                            continue;
                        }
                        let path = root.join(name);
                        let exists = path.symlink_metadata().is_ok();
                        if exists || !is_temporary {
                            push_unique(&mut read_only_subpaths, path.clone());
                        }
                        if *name == ".git" {
                            for git_dir in git_dirs_named_by(&path) {
                                if unique.iter().any(|root| git_dir.starts_with(root)) {
                                    push_unique(&mut read_only_subpaths, git_dir);
                                }
                            }
                        }
                    }
                    for name in PROTECTED_IF_PRESENT {
                        let path = root.join(name);
                        if path.symlink_metadata().is_ok() {
                            push_unique(&mut read_only_subpaths, path);
                        }
                    }
                }
                Some(Self {
                    writable_roots: unique,
                    read_only_subpaths,
                    network: *network_access,
                })
            }
        }
    }
}

fn push_unique(paths: &mut Vec<PathBuf>, path: PathBuf) {
    if !paths.contains(&path) {
        paths.push(path);
    }
}

/// The git directories a `.git` pointer file (`gitdir: PATH`, written by `git worktree` and
/// `git init --separate-git-dir`) leads to: the one it names and, for a worktree, the common
/// directory that holds the hooks and config. Nothing for a `.git` folder or no `.git`.
fn git_dirs_named_by(dot_git: &Path) -> Vec<PathBuf> {
    let Ok(metadata) = dot_git.symlink_metadata() else {
        return Vec::new();
    };
    if !metadata.is_file() {
        return Vec::new();
    }
    let Some(base) = dot_git.parent() else {
        return Vec::new();
    };
    let Some(git_dir) = read_pointer(dot_git, "gitdir:").map(|target| base.join(target)) else {
        return Vec::new();
    };
    let mut dirs = vec![normalize(&git_dir)];
    if let Some(common) = read_pointer(&git_dir.join("commondir"), "") {
        dirs.push(normalize(&git_dir.join(common)));
    }
    dirs
}

/// The first line of a small pointer file after `prefix`, trimmed; `None` when it does not
/// start so (or cannot be read).
fn read_pointer(file: &Path, prefix: &str) -> Option<PathBuf> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.strip_prefix(prefix)?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// `path` with `.` and `..` taken out lexically (git writes `commondir` as `../..`).
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn read_only_and_full_access() {
        let cwd = Path::new("/w");
        assert_eq!(
            ResolvedPolicy::resolve(&SandboxPolicy::DangerFullAccess, cwd, None, false),
            None
        );
        assert_eq!(
            ResolvedPolicy::resolve(&SandboxPolicy::ReadOnly, cwd, Some(Path::new("/t")), false),
            Some(ResolvedPolicy {
                writable_roots: Vec::new(),
                read_only_subpaths: Vec::new(),
                network: false,
            })
        );
    }

    #[test]
    fn workspace_write_roots_and_git() -> std::io::Result<()> {
        let ws = tempfile::tempdir()?;
        std::fs::create_dir(ws.path().join(".git"))?;
        let policy = SandboxPolicy::WorkspaceWrite {
            writable_roots: vec![PathBuf::from("extra")],
            network_access: true,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: false,
        };
        let resolved = ResolvedPolicy::resolve(&policy, ws.path(), Some(Path::new("/tmp")), false);
        // Every protected folder of the workspace and of `extra`, present or not; in the
        // temporary roots only those that exist (some machines have a `/tmp/.git`).
        let mut read_only_subpaths: Vec<PathBuf> =
            [ws.path().to_path_buf(), ws.path().join("extra")]
                .iter()
                .flat_map(|root| PROTECTED_FOLDERS.iter().map(|name| root.join(name)))
                .collect();
        for root in ["/tmp", "/dev/shm"] {
            for name in PROTECTED_FOLDERS.iter().chain(PROTECTED_IF_PRESENT) {
                let path = Path::new(root).join(name);
                if path.symlink_metadata().is_ok() {
                    read_only_subpaths.push(path);
                }
            }
        }
        assert_eq!(
            resolved,
            Some(ResolvedPolicy {
                writable_roots: vec![
                    ws.path().to_path_buf(),
                    ws.path().join("extra"),
                    PathBuf::from("/tmp"),
                    PathBuf::from("/dev/shm"),
                ],
                read_only_subpaths,
                network: true,
            })
        );
        let allowed = ResolvedPolicy::resolve(&policy, ws.path(), None, true)
            .map(|p| p.read_only_subpaths)
            .unwrap_or_default();
        assert!(
            !allowed.iter().any(|path| path.ends_with(".git")),
            "{allowed:?}"
        );
        assert!(allowed.contains(&ws.path().join(".codex")), "{allowed:?}");
        Ok(())
    }

    #[test]
    fn a_git_pointer_file_protects_the_git_directory_it_names() -> std::io::Result<()> {
        let ws = tempfile::tempdir()?;
        let work = ws.path().join("work");
        let real = ws.path().join("store/repo.git");
        std::fs::create_dir_all(&work)?;
        std::fs::create_dir_all(real.join("worktrees/w"))?;
        std::fs::write(work.join(".git"), "gitdir: ../store/repo.git/worktrees/w\n")?;
        std::fs::write(real.join("worktrees/w/commondir"), "../..\n")?;
        let policy = SandboxPolicy::WorkspaceWrite {
            writable_roots: vec![ws.path().to_path_buf()],
            network_access: false,
            exclude_tmpdir_env_var: true,
            exclude_slash_tmp: true,
        };
        let resolved = ResolvedPolicy::resolve(&policy, &work, None, false)
            .map(|p| p.read_only_subpaths)
            .unwrap_or_default();
        assert!(resolved.contains(&work.join(".git")), "{resolved:?}");
        assert!(resolved.contains(&real.join("worktrees/w")), "{resolved:?}");
        assert!(resolved.contains(&real), "{resolved:?}");
        // Outside every writable root, Landlock keeps it read-only already.
        let narrow = SandboxPolicy::WorkspaceWrite {
            writable_roots: Vec::new(),
            network_access: false,
            exclude_tmpdir_env_var: true,
            exclude_slash_tmp: true,
        };
        let resolved = ResolvedPolicy::resolve(&narrow, &work, None, false)
            .map(|p| p.read_only_subpaths)
            .unwrap_or_default();
        assert!(!resolved.contains(&real), "{resolved:?}");
        Ok(())
    }

    #[test]
    fn workspace_write_exclusions() {
        let policy = SandboxPolicy::WorkspaceWrite {
            writable_roots: Vec::new(),
            network_access: false,
            exclude_tmpdir_env_var: true,
            exclude_slash_tmp: true,
        };
        let resolved =
            ResolvedPolicy::resolve(&policy, Path::new("/w"), Some(Path::new("/t")), false);
        assert_eq!(
            resolved.map(|p| p.writable_roots),
            Some(vec![PathBuf::from("/w")])
        );
    }
}
