//! Process groups this program started, killed when the program goes away, however it goes.
//!
//! Commands run in process groups of their own so they can be stopped as a whole. Stopping them
//! when their owner ends cleanly is easy; a `kill -9`, a panic that aborts, or a signal whose
//! default action ends the process run no destructor. So the first registration starts a
//! *watchdog*: a small `/bin/sh` loop in its own process group that ignores the usual
//! termination signals and reads, on a pipe only this program holds, which groups are live.
//! When this program ends for any reason the kernel closes that pipe; the watchdog reads
//! end-of-file and sends SIGKILL to every group still registered, then exits.
//!
//! A group is deregistered only after it has been killed, and a process group id cannot be
//! reused while any member of the group lives, so the watchdog never signals a stranger.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The watchdog: keeps the registered groups in its positional parameters, kills them all at
/// end of input. Lines are `+PGID` (register) and `-PGID` (deregister).
const WATCHDOG_SCRIPT: &str = r#"trap '' HUP INT TERM QUIT PIPE
set --
while IFS= read -r line; do
  case $line in
    +*) set -- "$@" "${line#+}" ;;
    -*) drop=${line#-}; n=$#
        while [ "$n" -gt 0 ]; do
          g=$1; shift; n=$((n - 1))
          [ "$g" = "$drop" ] || set -- "$@" "$g"
        done ;;
  esac
done
for g in "$@"; do kill -9 -"$g" 2>/dev/null; done
"#;

/// The watchdog's input, or why there is none (then groups are still killed on drop, just not
/// after an abrupt end).
static WATCHDOG: OnceLock<Mutex<Option<ChildStdin>>> = OnceLock::new();

fn watchdog() -> &'static Mutex<Option<ChildStdin>> {
    WATCHDOG.get_or_init(|| {
        let started = Command::new("/bin/sh")
            .args(["-c", WATCHDOG_SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        match started {
            Ok(mut child) => Mutex::new(child.stdin.take()),
            Err(err) => {
                tracing::warn!(
                    %err,
                    "could not start the process-group watchdog; commands may outlive an \
                     abruptly killed owner"
                );
                Mutex::new(None)
            }
        }
    })
}

fn tell_watchdog(line: &str) {
    let Ok(mut input) = watchdog().lock() else {
        return;
    };
    if let Some(stdin) = input.as_mut()
        && let Err(err) = stdin.write_all(line.as_bytes())
    {
        tracing::warn!(%err, "the process-group watchdog is gone");
        *input = None;
    }
}

/// A process group this program started: SIGKILLed when dropped, and by the watchdog if this
/// program ends before that.
///
/// A group led by the process supervisor ([`crate::supervisor`]) is killed through the
/// supervisor instead (SIGUSR1: it kills every descendant, those that left the group
/// included, then exits), and needs no watchdog: the supervisor notices its owner's death
/// itself.
#[derive(Debug)]
pub struct OwnedProcessGroup {
    pgid: i32,
    /// Set for a group led by the supervisor.
    supervised: bool,
    /// Set once the leader was reaped: a supervisor leaves nothing behind, so there is
    /// nothing left to kill (and its pid may already belong to someone else).
    leader_reaped: std::sync::atomic::AtomicBool,
}

impl OwnedProcessGroup {
    /// Takes ownership of the group led by `pgid` (a child spawned as a group or session
    /// leader).
    pub fn register(pgid: i32) -> Self {
        tell_watchdog(&format!("+{pgid}\n"));
        Self {
            pgid,
            supervised: false,
            leader_reaped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Takes ownership of the group led by the supervisor `pid`.
    pub(crate) fn supervised(pid: i32) -> Self {
        Self {
            pgid: pid,
            supervised: true,
            leader_reaped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Records that the group's leader was reaped.
    pub(crate) fn leader_reaped(&self) {
        self.leader_reaped
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The group's id.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Sends `signal` to every process of the group; a group already gone is not an error.
    /// For a supervised group, SIGKILL asks the supervisor to kill the whole tree.
    pub fn signal(&self, signal: Signal) {
        if self.supervised {
            if self
                .leader_reaped
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                return;
            }
            if signal == Signal::SIGKILL {
                // SIGCONT after it: a stopped supervisor wakes up to the request.
                for request in [Signal::SIGUSR1, Signal::SIGCONT] {
                    match nix::sys::signal::kill(Pid::from_raw(self.pgid), request) {
                        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                        Err(err) => {
                            tracing::warn!(pid = self.pgid, %err, "signalling the supervisor failed")
                        }
                    }
                }
                return;
            }
        }
        match killpg(Pid::from_raw(self.pgid), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(err) => tracing::warn!(pgid = self.pgid, %err, "killpg failed"),
        }
    }
}

impl Drop for OwnedProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        if !self.supervised {
            tell_watchdog(&format!("-{}\n", self.pgid));
        }
    }
}
