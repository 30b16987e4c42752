//! Linux enforcement, run by the helper. For a model's command it enters a private mount
//! namespace and a PID namespace ([`namespaces`]), makes the protected folders read-only
//! ([`mounts`], [`placeholders`]) and forks the namespace's first process ([`pid_one`]),
//! which mounts a `/proc` of its own and forks the command; the command confines itself
//! with Landlock ([`filesystem`]) and a seccomp filter ([`network`]) and `exec`s. The helper
//! waits outside ([`outer`]), passes the exit status on and removes the placeholders.
//!
//! None of it can be lifted by the command: Landlock forbids mount changes and `ptrace` of
//! processes outside it, `no_new_privs` keeps set-uid programs from gaining privileges, the
//! first process of a PID namespace ignores signals from inside it, and when it exits the
//! kernel kills everything left in the namespace. Where namespaces are unavailable the
//! command runs confined as before, in the helper's place (see `docs/sandbox.md`).

mod confine;
mod filesystem;
mod mounts;
mod namespaces;
mod network;
mod outer;
mod pid_one;
mod placeholders;
mod status;

use std::ffi::OsString;

use crate::run_options::RunOptions;
use crate::{ResolvedPolicy, SandboxError};
use confine::{Report, exec_confined};
use namespaces::Entered;

/// Runs `argv` confined to `policy`; returns the command's exit status (or the helper's when
/// the command could not start), or why the sandbox could not be set up.
pub(super) fn run(
    policy: &ResolvedPolicy,
    options: RunOptions,
    argv: &[OsString],
) -> Result<u8, SandboxError> {
    let isolate = !options.user_command;
    let needs_mounts = !policy.read_only_subpaths.is_empty();
    let entered = if isolate || needs_mounts {
        namespaces::enter(isolate)
    } else {
        Entered::default()
    };
    let placeholders = if entered.mount {
        mounts::protect(&policy.read_only_subpaths)?
    } else {
        if let Some(path) = policy
            .read_only_subpaths
            .iter()
            .find(|path| path.symlink_metadata().is_ok())
        {
            return Err(SandboxError::ReadOnlySubpath {
                path: path.clone(),
                step: "enter a mount namespace",
                source: std::io::Error::other(entered.missing.clone().unwrap_or_default()),
            });
        }
        Vec::new()
    };
    let report = Report {
        namespaces: entered.clone(),
        ..Report::default()
    };
    if !entered.mount && !entered.pid {
        return exec_confined(policy, options, argv, report);
    }
    outer::fork_and_wait(placeholders, |placeholders| {
        // The child shares the placeholders' locks: dropping them here would release them for
        // the helper too.
        std::mem::forget(placeholders);
        if entered.pid {
            pid_one::run(policy, options, argv, report)
        } else {
            exec_confined(policy, options, argv, report)
        }
    })
}

/// Checks that the kernel supports the Landlock ABI the policy needs, without restricting
/// this process (a ruleset is created and dropped, never applied).
pub(super) fn probe_landlock() -> Result<(), SandboxError> {
    filesystem::probe()
}
