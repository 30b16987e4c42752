//! The helper's part outside the command's PID namespace: fork the namespace's first
//! process, wait for it, pass its exit status on and remove the placeholders.
//!
//! It dies with its parent (the process supervisor, or whoever started the helper), and the
//! namespace's first process dies with it, which ends the namespace: a run whose owner is
//! killed, however abruptly, leaves nothing behind.

use nix::sys::signal::{SigHandler, Signal, signal};
use nix::sys::wait::waitpid;
use nix::unistd::{ForkResult, Pid, fork, getppid};

use super::mounts;
use super::placeholders::Placeholder;
use crate::SandboxError;

/// Signals a terminal or the supervisor sends to the whole process group: the command gets
/// them (from the terminal, or relayed by the supervisor) and ends the run by exiting; the
/// helper outlives it to clean up.
const PASSED_ON: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGQUIT,
];

/// Forks; the child runs `child` (which returns only when the command could not start) and
/// exits with its status, the parent waits for it and returns its status.
pub(super) fn fork_and_wait(
    placeholders: Vec<Placeholder>,
    child: impl FnOnce(Vec<Placeholder>) -> Result<u8, SandboxError>,
) -> Result<u8, SandboxError> {
    let parent = getppid();
    // SAFETY: the helper is single-threaded (it runs before `main` starts any thread), so the
    // child may do anything the parent could.
    #[expect(
        unsafe_code,
        reason = "fork is unsafe in nix; the helper is single-threaded, so the child is safe \
                  to continue as a normal program"
    )]
    let forked = unsafe { fork() }.map_err(|err| SandboxError::Namespace {
        step: "fork",
        source: err.into(),
    })?;
    match forked {
        ForkResult::Child => match child(placeholders) {
            Ok(code) => std::process::exit(i32::from(code)),
            Err(err) => {
                crate::setup_failure::report_setup_failure(&err);
                std::process::exit(i32::from(crate::setup_failure::SETUP_FAILED_EXIT));
            }
        },
        ForkResult::Parent { child } => {
            die_with(parent);
            for passed_on in PASSED_ON {
                ignore(passed_on);
            }
            let status = wait_for(child);
            for placeholder in placeholders {
                mounts::unmount(placeholder.path());
                placeholder.remove_if_unused();
            }
            Ok(status)
        }
    }
}

/// Ends this process with SIGKILL when `parent` goes.
fn die_with(parent: Pid) {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if getppid() != parent {
        std::process::exit(128 + Signal::SIGKILL as i32);
    }
}

#[expect(
    unsafe_code,
    reason = "changing a signal disposition is unsafe in nix; SIG_IGN runs no handler code"
)]
fn ignore(sig: Signal) {
    // SAFETY: SIG_IGN installs no handler, so no code runs in signal context.
    let _ = unsafe { signal(sig, SigHandler::SigIgn) };
}

/// The exit status of `child` as a shell reports it (`128 + N` when killed by signal N).
fn wait_for(child: Pid) -> u8 {
    loop {
        match waitpid(child, None) {
            Ok(status) => {
                if let Some(code) = super::status::shell_status(status, child) {
                    return code;
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return 1,
        }
    }
}
