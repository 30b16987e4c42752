//! The sandbox for commands the model runs.
//!
//! The engine never restricts its own process. For a sandboxed command it spawns a helper
//! program instead of the command: `keel-linux-sandbox --sandbox-policy JSON
//! --sandbox-policy-cwd DIR [--allow-git-writes] [--user-command] -- CMD...`. The helper
//! (single-threaded, so it may allocate freely) resolves the policy ([`ResolvedPolicy`]),
//! enters a mount and a PID namespace, makes the protected folders read-only, and starts the
//! command as the namespace's second process, confined by Landlock and a seccomp filter; every
//! restriction is inherited by the command's children, and none outlives the run.
//! `docs/sandbox.md` explains the choices and limits.
//!
//! The helper is found by [`find_sandbox_executable`]: a `keel-linux-sandbox` next to the
//! running program, else the `keel` binary itself, which dispatches on `argv[0]`.

mod helper;
#[cfg(target_os = "linux")]
mod linux;
mod policy;

use std::path::{Path, PathBuf};

pub use helper::setup_failure;
pub use helper::{SandboxCommand, invoked_as_sandbox_helper, run_linux_sandbox_main};
pub use policy::{PROTECTED_FOLDERS, PROTECTED_IF_PRESENT, ResolvedPolicy};

/// The `argv[0]` under which a program runs as the sandbox helper.
pub const LINUX_SANDBOX_ARG0: &str = "keel-linux-sandbox";

/// Why a command cannot be sandboxed as its policy asks.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This platform has no sandbox implementation.
    #[error("command sandboxing is only implemented on Linux")]
    UnsupportedPlatform,
    /// No helper program was found.
    #[error("the sandbox helper `{LINUX_SANDBOX_ARG0}` was not found next to the running program")]
    HelperNotFound,
    /// The kernel lacks Landlock, or a Landlock ABI older than the one the policy needs.
    #[error(
        "the kernel cannot enforce the filesystem policy (Landlock ABI 3 or newer needed): {0}"
    )]
    LandlockUnavailable(String),
    /// Landlock was available but building or applying the ruleset failed.
    #[error("cannot apply the Landlock ruleset: {0}")]
    Landlock(String),
    /// The seccomp network filter could not be built or installed.
    #[error("cannot install the seccomp network filter: {0}")]
    Seccomp(String),
    /// A namespace or mount step of the read-only `.git` protection failed.
    #[error(
        "cannot make {path} read-only ({step}: {source}); protected folders need mount \
         namespaces (see `keel doctor`); for `.git`, `[sandbox_workspace_write] \
         allow_git_writes = true` runs without its protection"
    )]
    ReadOnlySubpath {
        /// The path that was to be protected.
        path: PathBuf,
        /// The step that failed.
        step: &'static str,
        /// The system error.
        source: std::io::Error,
    },
    /// A process step of the isolation (a fork) failed.
    #[error("cannot start the sandboxed command ({step}: {source})")]
    Namespace {
        /// The step that failed.
        step: &'static str,
        /// The system error.
        source: std::io::Error,
    },
    /// The helper's own command line was malformed.
    #[error("invalid sandbox helper arguments: {0}")]
    InvalidArguments(String),
}

/// The helper program to use, given the path of the running executable: the executable
/// itself when it is `keel` (which runs the helper when started with `argv[0]` =
/// [`LINUX_SANDBOX_ARG0`]) or the helper, else a `keel-linux-sandbox` beside it; `None`
/// otherwise.
pub fn find_sandbox_executable(current_exe: &Path) -> Option<PathBuf> {
    let name = current_exe.file_name().and_then(|name| name.to_str());
    if matches!(name, Some("keel" | LINUX_SANDBOX_ARG0)) {
        return Some(current_exe.to_path_buf());
    }
    let sibling = current_exe.with_file_name(LINUX_SANDBOX_ARG0);
    sibling.is_file().then_some(sibling)
}

/// [`find_sandbox_executable`] for this process.
pub fn default_sandbox_executable() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    find_sandbox_executable(&exe)
}

/// Checks, without restricting this process, that the kernel can enforce a policy.
pub fn probe_kernel() -> Result<(), SandboxError> {
    #[cfg(target_os = "linux")]
    {
        linux::probe_landlock()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(SandboxError::UnsupportedPlatform)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn finds_keel_itself_then_sibling_helper() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let keel = dir.path().join("keel");
        let other = dir.path().join("embedder");
        let helper = dir.path().join(LINUX_SANDBOX_ARG0);
        assert_eq!(find_sandbox_executable(&keel), Some(keel.clone()));
        assert_eq!(find_sandbox_executable(&other), None);
        std::fs::write(&helper, "")?;
        assert_eq!(find_sandbox_executable(&keel), Some(keel.clone()));
        assert_eq!(find_sandbox_executable(&other), Some(helper.clone()));
        assert_eq!(find_sandbox_executable(&helper), Some(helper));
        Ok(())
    }
}
