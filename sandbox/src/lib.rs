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

mod error;
mod helper;
#[cfg(target_os = "linux")]
mod linux;
mod locate;
mod policy;
mod run_options;
mod setup_failure;

pub use error::SandboxError;
pub use helper::{SandboxCommand, invoked_as_sandbox_helper, run_linux_sandbox_main};
pub use locate::{LINUX_SANDBOX_ARG0, default_sandbox_executable, find_sandbox_executable};
pub use policy::{PROTECTED_FOLDERS, PROTECTED_IF_PRESENT, ResolvedPolicy};
pub use setup_failure::setup_failure;

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
