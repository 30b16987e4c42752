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

mod filesystem;
mod mounts;
mod namespaces;
mod network;
mod outer;
mod pid_one;
mod placeholders;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use super::helper::RunOptions;
use super::{LINUX_SANDBOX_ARG0, ResolvedPolicy, SandboxError};
use filesystem::Scopes;
use namespaces::Entered;

/// What the run got, for `--report-isolation` (`keel doctor`).
#[derive(Debug, Clone, Default)]
struct Report {
    namespaces: Entered,
    own_proc: bool,
    scoped: bool,
}

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

/// Confines this process (Landlock, then seccomp) and replaces it with the command; returns
/// only on failure: `Ok` with 127 (not found) or 126 (not executable), or the setup error.
fn exec_confined(
    policy: &ResolvedPolicy,
    options: RunOptions,
    argv: &[OsString],
    mut report: Report,
) -> Result<u8, SandboxError> {
    let isolate = !options.user_command;
    let scopes = Scopes {
        signals: isolate,
        abstract_sockets: isolate && !policy.network,
    };
    report.scoped = filesystem::restrict(policy, scopes)?;
    if !policy.network {
        network::deny_sockets(!isolate)?;
    }
    if options.report {
        report_isolation(&report, options.user_command || policy.network);
    }
    let Some((program, rest)) = argv.split_first() else {
        return Err(SandboxError::InvalidArguments("no command given".into()));
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "{LINUX_SANDBOX_ARG0}: cannot run `{}`: {err}",
        program.to_string_lossy()
    );
    Ok(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// The status a shell reports for `status` of `child` (`128 + N` when killed by signal N);
/// `None` for any other process or event.
fn shell_status(status: nix::sys::wait::WaitStatus, child: nix::unistd::Pid) -> Option<u8> {
    use nix::sys::wait::WaitStatus;
    match status {
        WaitStatus::Exited(pid, code) if pid == child => Some(u8::try_from(code).unwrap_or(1)),
        WaitStatus::Signaled(pid, sig, _) if pid == child => {
            Some(u8::try_from(128 + sig as i32).unwrap_or(1))
        }
        _ => None,
    }
}

/// One line on stderr saying what isolation the command gets.
fn report_isolation(report: &Report, sockets_reachable: bool) {
    let yes_no = |value: bool| if value { "yes" } else { "no" };
    let mut line = format!(
        "{LINUX_SANDBOX_ARG0}: isolation: pid-namespace={} own-proc={} protected-folders={} \
         landlock-scopes={} unix-sockets={}",
        yes_no(report.namespaces.pid),
        yes_no(report.own_proc),
        yes_no(report.namespaces.mount),
        yes_no(report.scoped),
        if sockets_reachable {
            "reachable"
        } else {
            "own-only"
        },
    );
    if let Some(missing) = &report.namespaces.missing {
        line.push_str(&format!(" ({missing})"));
    }
    eprintln!("{line}");
}

/// Checks that the kernel supports the Landlock ABI the policy needs, without restricting
/// this process (a ruleset is created and dropped, never applied).
pub(super) fn probe_landlock() -> Result<(), SandboxError> {
    filesystem::probe()
}
