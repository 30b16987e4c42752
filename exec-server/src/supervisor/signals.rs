//! The signals the supervisor handles itself, and how the server starts it with them blocked.

use nix::sys::signal::{SigSet, Signal};
use tokio::process::Command;

/// The signals the supervisor handles itself, read from a signalfd. The server starts the
/// supervisor with them already blocked, so one sent before it is ready waits for it.
pub(crate) fn handled_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
    ] {
        set.add(signal);
    }
    set
}

/// Starts the supervisor with the signals it handles blocked, so a terminate that arrives
/// before it is ready waits for it instead of killing it (which would leave no one to report
/// or clean up).
#[expect(
    unsafe_code,
    reason = "pre_exec is the only way to set the signal mask between fork and exec; the \
              closure calls only sigprocmask, which is async-signal-safe"
)]
pub(crate) fn block_supervisor_signals(command: &mut Command) {
    let blocked = handled_signals();
    // SAFETY: runs in the forked child before exec; sigprocmask is async-signal-safe and the
    // set was built before the fork.
    unsafe {
        command.pre_exec(move || {
            nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_BLOCK,
                Some(&blocked),
                None,
            )
            .map_err(std::io::Error::from)
        });
    }
}
