//! The supervisor's `main`: start the command, wait, and leave nothing behind.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid};

use super::PROCESS_SUPERVISOR_ARG0;
use super::signals::handled_signals;
use super::tree::descendants;

/// How often the supervisor checks that its parent is still there.
const PARENT_CHECK: Duration = Duration::from_millis(250);
/// How long the final clean-up may take before the supervisor gives up on stragglers (a
/// process stuck in the kernel cannot be reaped until it returns).
const CLEANUP_LIMIT: Duration = Duration::from_secs(5);
/// Exit status when the supervisor's own command line is wrong.
const BAD_USAGE_EXIT: u8 = 125;

/// The supervisor's `main` (see the module documentation): runs the command given after
/// `--`, waits for it, kills whatever it left, and exits with its status.
///
/// Call it first thing in `main`, before any thread starts: the signal mask it sets up
/// applies to the calling thread only.
pub fn run_process_supervisor_main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(Parsed { owner, arg0, argv }) = parse(args) else {
        eprintln!(
            "usage: {PROCESS_SUPERVISOR_ARG0} [--owner PID] [--arg0 NAME] -- PROGRAM [ARGS...]"
        );
        return ExitCode::from(BAD_USAGE_EXIT);
    };
    match Supervisor::start(owner, arg0, argv) {
        Ok(supervisor) => ExitCode::from(supervisor.run()),
        Err(code) => ExitCode::from(code),
    }
}

/// The supervisor's command line.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    /// The process that started the supervisor, which must still be its parent.
    owner: Option<i32>,
    /// The command's own `argv[0]`.
    arg0: Option<OsString>,
    /// The command.
    argv: Vec<OsString>,
}

/// `[--owner PID] [--arg0 NAME] -- PROGRAM [ARGS...]`.
fn parse(args: Vec<OsString>) -> Option<Parsed> {
    let mut args = args.into_iter();
    let mut arg0 = None;
    let mut owner = None;
    loop {
        match args.next()?.to_str() {
            Some("--") => break,
            Some("--arg0") => arg0 = Some(args.next()?),
            Some("--owner") => owner = Some(args.next()?.to_str()?.parse().ok()?),
            _ => return None,
        }
    }
    let argv: Vec<OsString> = args.collect();
    (!argv.is_empty()).then_some(Parsed { owner, arg0, argv })
}

/// The running supervisor.
struct Supervisor {
    signals: SignalFd,
    parent: Pid,
    me: i32,
    group: i32,
    command: Pid,
}

impl Supervisor {
    /// Becomes a subreaper, takes over the signals and starts the command; on failure, the
    /// exit status to end with (127: not found, 126: not executable, as a shell says).
    fn start(owner: Option<i32>, arg0: Option<OsString>, argv: Vec<OsString>) -> Result<Self, u8> {
        let parent = getppid();
        if owner.is_some_and(|owner| owner != parent.as_raw()) {
            // The owner died before this process could watch it: nothing may start.
            return Err(128 + Signal::SIGKILL as u8);
        }
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            // Still useful: the process group is killed as before.
            eprintln!("{PROCESS_SUPERVISOR_ARG0}: cannot become a subreaper: {err}");
        }
        // On a terminal the supervisor shares the command's process group, so Ctrl-Z and
        // background reads would stop it too; a stopped supervisor could not clean up.
        for signal in JOB_CONTROL_SIGNALS {
            let _ = ignore(signal);
        }
        let mask = handled_signals();
        if let Err(err) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None) {
            eprintln!("{PROCESS_SUPERVISOR_ARG0}: cannot block signals: {err}");
            return Err(BAD_USAGE_EXIT);
        }
        let signals =
            match SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
                Ok(signals) => signals,
                Err(err) => {
                    eprintln!("{PROCESS_SUPERVISOR_ARG0}: cannot read signals: {err}");
                    return Err(BAD_USAGE_EXIT);
                }
            };
        // Told at once when the parent goes (checked against `parent`, since the signal also
        // comes when merely the parent's thread that started us ends).
        let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGUSR2);
        // Asked to stop before the command even started: it never starts.
        while let Ok(Some(info)) = signals.read_signal() {
            match Signal::try_from(info.ssi_signo.cast_signed()) {
                Ok(Signal::SIGUSR1) => return Err(128 + Signal::SIGKILL as u8),
                Ok(signal @ (Signal::SIGTERM | Signal::SIGHUP)) => return Err(128 + signal as u8),
                _ => {}
            }
        }
        if getppid() != parent {
            return Err(128 + Signal::SIGKILL as u8);
        }
        let Some((program, rest)) = argv.split_first() else {
            return Err(BAD_USAGE_EXIT);
        };
        let mut command = std::process::Command::new(program);
        command.args(rest);
        if let Some(arg0) = arg0 {
            command.arg0(arg0);
        }
        restore_signal_mask(&mut command);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(err) => {
                eprintln!(
                    "{PROCESS_SUPERVISOR_ARG0}: cannot run `{}`: {err}",
                    program.to_string_lossy()
                );
                return Err(if err.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                });
            }
        };
        // The command holds the output pipes or terminal now; the supervisor lets go of its
        // copies so that the server sees end-of-file as soon as the command's tree is gone.
        release_stdio();
        let supervisor = Self {
            signals,
            parent,
            me: getpid().as_raw(),
            group: getpgrp().as_raw(),
            command: Pid::from_raw(child.id().cast_signed()),
        };
        supervisor.pass_on_early_signals();
        Ok(supervisor)
    }

    /// A SIGTERM or SIGHUP sent to the group after the check above but before the command
    /// was forked reached only the supervisor: the command gets it now. (One sent just after
    /// the fork reaches the command twice, which a process that stops on it cannot tell.)
    fn pass_on_early_signals(&self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            match Signal::try_from(info.ssi_signo.cast_signed()) {
                Ok(signal @ (Signal::SIGTERM | Signal::SIGHUP)) => {
                    let _ = kill(self.command, signal);
                    self.relay(signal);
                }
                Ok(Signal::SIGUSR1) => self.kill_tree(),
                _ => {}
            }
        }
    }

    /// Waits for the command, handling signals; then cleans up and returns the exit status.
    fn run(mut self) -> u8 {
        // The SIGCHLD of a command that ended at once may have been read at start.
        let mut status = self.reap();
        let mut parent_gone = false;
        while status.is_none() && !parent_gone {
            self.wait_for_signal(PARENT_CHECK);
            while let Ok(Some(info)) = self.signals.read_signal() {
                match Signal::try_from(info.ssi_signo.cast_signed()) {
                    Ok(Signal::SIGTERM) => self.relay(Signal::SIGTERM),
                    Ok(Signal::SIGHUP) => self.relay(Signal::SIGHUP),
                    Ok(Signal::SIGUSR1) => self.kill_tree(),
                    // SIGCHLD: reaped below. SIGINT and SIGQUIT come from the terminal, which
                    // sent them to the command's group already. SIGUSR2: checked below.
                    _ => {}
                }
            }
            status = self.reap().or(status);
            parent_gone = getppid() != self.parent;
        }
        if parent_gone && status.is_none() {
            self.kill_tree();
            status = Some(128 + Signal::SIGKILL as i32);
        }
        self.clean_up();
        u8::try_from(status.unwrap_or(1).clamp(0, 255)).unwrap_or(1)
    }

    /// Blocks until a signal arrives or `timeout` passes.
    fn wait_for_signal(&self, timeout: Duration) {
        let millis = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(millis)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(err) => {
                eprintln!("{PROCESS_SUPERVISOR_ARG0}: poll failed: {err}");
                std::thread::sleep(timeout);
            }
        }
    }

    /// Reaps every child that has exited; returns the command's status if it was one.
    fn reap(&self) -> Option<i32> {
        let mut status = None;
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == self.command => status = Some(code),
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == self.command => {
                    status = Some(128 + signal as i32);
                }
                Ok(WaitStatus::StillAlive) | Err(_) => return status,
                Ok(_) => {}
            }
        }
    }

    /// Passes `signal` to the descendants that left the supervisor's process group (the
    /// server signalled the group, which reached the rest).
    fn relay(&self, signal: Signal) {
        for process in descendants(self.me) {
            if process.pgid != self.group {
                let _ = kill(Pid::from_raw(process.pid), signal);
            }
        }
    }

    /// Sends SIGKILL to every descendant, the command included.
    fn kill_tree(&self) {
        for process in descendants(self.me) {
            let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
        }
    }

    /// Kills and reaps every descendant left, until none is (or the limit passes).
    fn clean_up(&mut self) {
        let deadline = Instant::now() + CLEANUP_LIMIT;
        loop {
            // Every live descendant is a child of ours or below one (orphans are re-parented
            // here), so with no child left there is nothing to look for.
            if matches!(
                waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)),
                Err(Errno::ECHILD)
            ) {
                return;
            }
            let left = descendants(self.me);
            if left.is_empty() {
                self.reap();
                return;
            }
            for process in &left {
                let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
            }
            self.reap();
            if Instant::now() > deadline {
                eprintln!(
                    "{PROCESS_SUPERVISOR_ARG0}: {} process(es) would not die; leaving them",
                    left.len()
                );
                return;
            }
            // A killed process is reaped once it has died: wait for the SIGCHLD.
            self.wait_for_signal(Duration::from_millis(50));
            while let Ok(Some(_)) = self.signals.read_signal() {}
        }
    }
}

/// Terminal job-control signals the supervisor ignores (and the command gets back).
const JOB_CONTROL_SIGNALS: [Signal; 3] = [Signal::SIGTSTP, Signal::SIGTTIN, Signal::SIGTTOU];

/// Ignores `signal` in this process.
#[expect(
    unsafe_code,
    reason = "changing a signal disposition is unsafe in nix; SIG_IGN runs no handler code"
)]
fn ignore(signal: Signal) -> nix::Result<()> {
    // SAFETY: SIG_IGN installs no handler, so no code runs in signal context.
    unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn) }.map(|_| ())
}

/// The command starts with no signal blocked and the job-control signals at their default,
/// whatever the supervisor blocks or ignores.
#[expect(
    unsafe_code,
    reason = "pre_exec is the only way to reset signals between fork and exec; the closure \
              calls only signal and sigprocmask, which are async-signal-safe, and allocates \
              nothing"
)]
fn restore_signal_mask(command: &mut std::process::Command) {
    // SAFETY: runs in the forked child before exec; signal and sigprocmask are
    // async-signal-safe and the closure touches no memory shared with the parent.
    unsafe {
        command.pre_exec(|| {
            for signal in JOB_CONTROL_SIGNALS {
                nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigDfl)
                    .map_err(std::io::Error::from)?;
            }
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
                .map_err(std::io::Error::from)
        });
    }
}

/// Points the supervisor's own stdin, stdout and stderr at `/dev/null`.
fn release_stdio() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    let _ = nix::unistd::dup2_stdin(&null);
    let _ = nix::unistd::dup2_stdout(&null);
    let _ = nix::unistd::dup2_stderr(&null);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_owner_and_arg0_come_before_the_command() {
        let args = ["--owner", "42", "--arg0", "-bash", "--", "/bin/bash", "-l"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(
            parse(args),
            Some(Parsed {
                owner: Some(42),
                arg0: Some(OsString::from("-bash")),
                argv: ["/bin/bash", "-l"].map(OsString::from).to_vec(),
            })
        );
        assert_eq!(
            parse(["--owner", "x", "--", "true"].map(OsString::from).to_vec()),
            None
        );
        assert_eq!(parse(["--"].map(OsString::from).to_vec()), None);
    }
}
