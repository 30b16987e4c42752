//! The machine's process table, to prove that a run left no process behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

/// A program whose command line carries a unique name, so every process of a test's command
/// can be found in the process table after its owner is gone (even reparented to PID 1).
#[derive(Debug)]
pub struct MarkedSleeper {
    path: PathBuf,
}

impl MarkedSleeper {
    /// A link to `sleep` in `dir`, named after `marker` and this test process.
    pub fn new(dir: &Path, marker: &str) -> Result<Self> {
        let sleep = ["/bin/sleep", "/usr/bin/sleep"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .unwrap_or(Path::new("sleep"));
        let path = dir.join(format!("keel-sleeper-{marker}-{}", std::process::id()));
        std::os::unix::fs::symlink(sleep, &path).map_err(|source| Error::MarkedProgram {
            path: path.clone(),
            source,
        })?;
        Ok(Self { path })
    }

    /// A shell command that sleeps for `seconds` and leaves at least three processes
    /// sleeping the way a model starts a server: a background shell and its sleeper, plus
    /// two that leave the process group on purpose: a `setsid` sleeper and a double fork
    /// through `setsid` (a shell re-parented away from the command, and its sleeper).
    pub fn nested_command(&self, seconds: u32) -> String {
        format!(
            "{} {} {seconds}; :",
            self.escaping(seconds),
            self.path.display()
        )
    }

    /// A shell command that returns at once, leaving the same processes running in the
    /// background with their output redirected (how a model starts a dev server and moves on).
    pub fn background_command(&self, seconds: u32) -> String {
        format!("{} echo started", self.escaping(seconds))
    }

    /// Background sleepers, two of which escape the process group, each line ending in `&`.
    fn escaping(&self, seconds: u32) -> String {
        let sleeper = self.path.display();
        format!(
            "bash -c '{sleeper} {seconds}; :' >/dev/null 2>&1 & \
             setsid {sleeper} {seconds} >/dev/null 2>&1 & \
             (setsid bash -c '{sleeper} {seconds}; :' >/dev/null 2>&1 &) ; "
        )
    }

    /// The sleeper program (run it as `<path> SECONDS`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Live processes whose command line names this sleeper.
    pub fn live_processes(&self) -> Vec<i32> {
        processes_whose_cmdline_contains(&self.path.to_string_lossy())
    }

    /// Waits until no process names this sleeper (they may be dying asynchronously), or fails
    /// with the ones left after `timeout`. Kills the leftovers either way, so a failing test
    /// does not leak them.
    pub async fn wait_until_gone(&self, timeout: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let live = self.live_processes();
            if live.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                for pid in &live {
                    let _gone = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(*pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                return Err(Error::ProcessesLeft {
                    pids: live,
                    waited: timeout,
                });
            }
            // The process table has no change notification; look again shortly.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for MarkedSleeper {
    fn drop(&mut self) {
        for pid in self.live_processes() {
            let _gone = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _removed = std::fs::remove_file(&self.path);
    }
}

/// PIDs of live (not zombie) processes whose NUL-joined command line contains `needle`.
pub fn processes_whose_cmdline_contains(needle: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id() as i32;
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !zombie && String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect()
}
