//! The first process of the command's PID namespace. The kernel shields it from every signal
//! sent from inside the namespace (`kill -9 $PPID` and `kill -STOP $PPID` do nothing), and
//! kills every other process of the namespace when it exits, so no process the command starts
//! outlives the command, whatever it does with `setsid` or double forks.
//!
//! It mounts the namespace's own `/proc`, forks the command into a process group of its own
//! (the command's `kill 0` reaches only its own group, never the supervisor's), reaps every
//! orphan until the command exits, and exits with the command's status.

use std::ffi::OsString;

use nix::sys::signal::{SigHandler, Signal, signal};
use nix::sys::wait::waitpid;
use nix::unistd::{ForkResult, Pid, fork, getpid, isatty, setpgid, tcsetpgrp};

use super::confine::{Report, exec_confined};
use super::mounts;
use crate::run_options::RunOptions;
use crate::{ResolvedPolicy, SandboxError};

/// Runs as the namespace's first process; returns only when the command could not start.
pub(super) fn run(
    policy: &ResolvedPolicy,
    options: RunOptions,
    argv: &[OsString],
    mut report: Report,
) -> Result<u8, SandboxError> {
    // The helper outside is this process's parent; if it is gone, so is the namespace.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    report.own_proc = mounts::mount_own_proc().is_ok();
    // SAFETY: this process is single-threaded (a fork of the single-threaded helper).
    #[expect(
        unsafe_code,
        reason = "fork is unsafe in nix; this process is single-threaded, so the child is safe \
                  to continue as a normal program"
    )]
    let forked = unsafe { fork() }.map_err(|err| SandboxError::Namespace {
        step: "fork the command",
        source: err.into(),
    })?;
    match forked {
        ForkResult::Child => {
            take_own_group();
            exec_confined(policy, options, argv, report)
        }
        ForkResult::Parent { child } => {
            // Also here, so the group exists whichever of the two runs first.
            let _ = setpgid(child, child);
            Ok(reap_until(child))
        }
    }
}

/// Puts the command in a process group of its own, in the terminal's foreground if it has
/// one (so Ctrl-C and an interactive shell's job control work as outside).
fn take_own_group() {
    let me = getpid();
    let _ = setpgid(me, me);
    let stdin = std::io::stdin();
    if isatty(&stdin).unwrap_or(false) {
        // A background group may take the terminal only while it ignores SIGTTOU.
        set_disposition(Signal::SIGTTOU, SigHandler::SigIgn);
        let _ = tcsetpgrp(&stdin, me);
        set_disposition(Signal::SIGTTOU, SigHandler::SigDfl);
    }
}

#[expect(
    unsafe_code,
    reason = "changing a signal disposition is unsafe in nix; SIG_IGN and SIG_DFL run no \
              handler code"
)]
fn set_disposition(sig: Signal, handler: SigHandler) {
    // SAFETY: SIG_IGN and SIG_DFL install no handler, so no code runs in signal context.
    let _ = unsafe { signal(sig, handler) };
}

/// Reaps every process re-parented here until `command` exits; its status as a shell says it.
fn reap_until(command: Pid) -> u8 {
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(status) => {
                if let Some(code) = super::status::shell_status(status, command) {
                    return code;
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return 1,
        }
    }
}
