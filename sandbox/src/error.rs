//! Why a command cannot be sandboxed: the crate's one error type.

use std::path::PathBuf;

use crate::locate::LINUX_SANDBOX_ARG0;

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
