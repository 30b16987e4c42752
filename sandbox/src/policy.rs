//! A [`SandboxPolicy`] made concrete for one command: which paths it may write, which stay
//! read-only inside them, and whether it may use the network.

use std::path::{Path, PathBuf};

use keel_protocol::SandboxPolicy;

/// Device files every sandboxed command may write (they hold no data).
pub(crate) const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// The policy for one command, with every root spelled out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    /// Directories the command may write anywhere beneath (an empty list: read-only).
    pub writable_roots: Vec<PathBuf>,
    /// Existing paths beneath writable roots that stay read-only (each root's `.git`).
    pub read_only_subpaths: Vec<PathBuf>,
    /// Whether the command may create network sockets.
    pub network: bool,
}

impl ResolvedPolicy {
    /// Resolves `policy` for a conversation whose workspace is `cwd`, with the command's
    /// `$TMPDIR`; `None` for `danger-full-access`, which is not sandboxed at all.
    ///
    /// `workspace-write` may write under `cwd`, the configured roots (relative ones against
    /// `cwd`), `$TMPDIR` and `/tmp` plus `/dev/shm` (each unless excluded); the `.git` (a
    /// directory or a file) directly inside each root stays read-only unless
    /// `allow_git_writes`.
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
                if !exclude_tmpdir_env_var && let Some(tmpdir) = tmpdir {
                    roots.push(cwd.join(tmpdir));
                }
                if !exclude_slash_tmp {
                    roots.push(PathBuf::from("/tmp"));
                    roots.push(PathBuf::from("/dev/shm"));
                }
                let mut unique: Vec<PathBuf> = Vec::new();
                for root in roots {
                    if !unique.contains(&root) {
                        unique.push(root);
                    }
                }
                let read_only_subpaths = if allow_git_writes {
                    Vec::new()
                } else {
                    unique
                        .iter()
                        .map(|root| root.join(".git"))
                        .filter(|git| git.symlink_metadata().is_ok())
                        .collect()
                };
                Some(Self {
                    writable_roots: unique,
                    read_only_subpaths,
                    network: *network_access,
                })
            }
        }
    }
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
        // A `.git` in /tmp itself (some machines have one) is protected like the workspace's.
        let mut read_only_subpaths = vec![ws.path().join(".git")];
        if Path::new("/tmp/.git").exists() {
            read_only_subpaths.push(PathBuf::from("/tmp/.git"));
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
        let allowed = ResolvedPolicy::resolve(&policy, ws.path(), None, true);
        assert_eq!(allowed.map(|p| p.read_only_subpaths), Some(Vec::new()));
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
