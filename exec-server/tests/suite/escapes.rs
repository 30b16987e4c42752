//! Nothing a process starts outlives it, not even descendants that left its process group on
//! purpose (`setsid`, a double fork through `setsid`): they die when the process exits, when
//! it is terminated, when its connection closes and when the server is killed. Each test runs
//! a uniquely named `sleep` and looks for it in the process table.

use std::path::{Path, PathBuf};
use std::time::Duration;

use keel_protocol::exec_server::{TerminateMode, TerminateParams};
use pretty_assertions::assert_eq;

use super::harness::{
    DEADLINE, Server, Transport, both_transports, collect, output_until, pipes, tty,
};

/// A link to `sleep` whose name only this test uses, so its processes can be counted.
struct Sleeper {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Sleeper {
    fn new(marker: &str) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let sleep = ["/bin/sleep", "/usr/bin/sleep"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .ok_or_else(|| anyhow::anyhow!("no sleep binary"))?;
        let path = dir
            .path()
            .join(format!("escape-{marker}-{}", std::process::id()));
        std::os::unix::fs::symlink(sleep, &path)?;
        Ok(Self { _dir: dir, path })
    }

    /// Starts a background sleeper, a `setsid` one and a double-forked `setsid` shell with
    /// its sleeper, then runs `tail` (e.g. `echo started` or a sleeper of its own).
    fn script(&self, tail: &str) -> String {
        let s = self.path.display();
        format!(
            "{s} 60 >/dev/null 2>&1 & \
             setsid {s} 60 >/dev/null 2>&1 & \
             (setsid sh -c '{s} 60; :' >/dev/null 2>&1 &) ; {tail}"
        )
    }

    /// Live (not zombie) processes running the sleeper.
    fn live(&self) -> Vec<i32> {
        let needle = self.path.to_string_lossy().into_owned();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let zombie = stat
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                !zombie && String::from_utf8_lossy(&cmdline).contains(&needle)
            })
            .collect()
    }

    /// Waits until at least `count` sleepers run. The process table has no change
    /// notification, so it is read again every few milliseconds, up to the deadline.
    async fn wait_for(&self, count: usize) -> anyhow::Result<()> {
        tokio::time::timeout(DEADLINE, async {
            while self.live().len() < count {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .map_err(|_| anyhow::anyhow!("only {:?} of {count} sleepers started", self.live()))
    }

    /// Waits until none is left (killed processes may take a moment to die).
    async fn wait_until_gone(&self) -> anyhow::Result<()> {
        let gone = tokio::time::timeout(DEADLINE, async {
            while !self.live().is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        let left = self.live();
        anyhow::ensure!(gone.is_ok(), "processes left: {left:?}");
        Ok(())
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        for pid in self.live() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A process that returns at once: what it left is gone by the time its exit is reported.
async fn leftovers_die_when_the_process_exits(transport: Transport) -> anyhow::Result<()> {
    let sleeper = Sleeper::new(&format!("exit-{transport:?}"))?;
    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    let mut events = client.subscribe();
    for params in [
        pipes(&["sh", "-c", &sleeper.script("echo started")]),
        tty(&["sh", "-c", &sleeper.script("echo started")]),
    ] {
        let session = client.exec(params).await?.session_id;
        let collected = collect(&mut events, &session).await?;
        assert_eq!(collected.exit_code, Some(0));
        assert!(collected.stdout_text().contains("started"));
        assert_eq!(sleeper.live(), Vec::<i32>::new());
    }
    Ok(())
}

/// `command/exec/terminate`, graceful (SIGTERM reaches the escaped ones too) and forced.
async fn terminate_takes_the_whole_tree(transport: Transport) -> anyhow::Result<()> {
    let sleeper = Sleeper::new(&format!("terminate-{transport:?}"))?;
    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    let mut events = client.subscribe();
    let tail = format!("{} 60", sleeper.path.display());
    for (params, mode, code) in [
        (
            pipes(&["sh", "-c", &sleeper.script(&tail)]),
            TerminateMode::Graceful { timeout_ms: 10_000 },
            143,
        ),
        (
            tty(&["sh", "-c", &sleeper.script(&tail)]),
            TerminateMode::Force,
            137,
        ),
    ] {
        let session = client.exec(params).await?.session_id;
        sleeper.wait_for(4).await?;
        client
            .terminate(TerminateParams {
                session_id: session.clone(),
                mode: Some(mode),
            })
            .await?;
        let collected = collect(&mut events, &session).await?;
        assert_eq!(collected.exit_code, Some(code));
        assert_eq!(sleeper.live(), Vec::<i32>::new());
    }
    Ok(())
}

/// Closing the connection, and `kill -9` of the server itself.
async fn the_owner_going_away_takes_the_whole_tree(transport: Transport) -> anyhow::Result<()> {
    let sleeper = Sleeper::new(&format!("owner-{transport:?}"))?;
    let tail = format!("{} 60", sleeper.path.display());
    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    client
        .exec(pipes(&["sh", "-c", &sleeper.script(&tail)]))
        .await?;
    sleeper.wait_for(4).await?;
    drop(client);
    sleeper.wait_until_gone().await?;

    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    client
        .exec(tty(&["sh", "-c", &sleeper.script(&tail)]))
        .await?;
    sleeper.wait_for(4).await?;
    server.child.start_kill()?;
    server.child.wait().await?;
    sleeper.wait_until_gone().await?;
    Ok(())
}

/// A stop signal sent to the command's process group (`kill -TSTP 0`, as job control does)
/// stops the command, not the supervisor that shares the group: a forced terminate still
/// ends the session.
async fn a_stop_signal_stops_the_command_not_its_supervisor(
    transport: Transport,
) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    let mut events = client.subscribe();
    let session = client
        .exec(pipes(&[
            "sh",
            "-c",
            "echo stopping; kill -TSTP 0; echo resumed",
        ]))
        .await?
        .session_id;
    output_until(&mut events, &session, "stopping").await?;
    client
        .terminate(TerminateParams {
            session_id: session.clone(),
            mode: Some(TerminateMode::Force),
        })
        .await?;
    let collected = collect(&mut events, &session).await?;
    assert_eq!(collected.exit_code, Some(137));
    assert!(!collected.stdout_text().contains("resumed"));
    Ok(())
}

/// The supervisors among the processes running `sleeper` (their `argv[0]` names them).
fn supervisors_of(sleeper: &Sleeper) -> Vec<i32> {
    sleeper
        .live()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.starts_with(b"keel-process-supervisor\0"))
        })
        .collect()
}

/// A supervisor stopped by someone (`kill -STOP`) still honours a forced terminate: the server
/// wakes it along with the request, so the session ends and nothing is left.
async fn a_stopped_supervisor_still_honours_a_forced_terminate(
    transport: Transport,
) -> anyhow::Result<()> {
    let sleeper = Sleeper::new(&format!("stopped-{transport:?}"))?;
    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    let mut events = client.subscribe();
    let tail = format!("{} 60", sleeper.path.display());
    let session = client
        .exec(pipes(&["sh", "-c", &sleeper.script(&tail)]))
        .await?
        .session_id;
    sleeper.wait_for(4).await?;
    let supervisors = supervisors_of(&sleeper);
    assert_eq!(supervisors.len(), 1, "{supervisors:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisors[0]),
        nix::sys::signal::Signal::SIGSTOP,
    )?;
    client
        .terminate(TerminateParams {
            session_id: session.clone(),
            mode: Some(TerminateMode::Force),
        })
        .await?;
    let collected = collect(&mut events, &session).await?;
    assert_eq!(collected.exit_code, Some(137));
    sleeper.wait_until_gone().await?;
    Ok(())
}

both_transports!(
    a_stopped_supervisor_still_honours_a_forced_terminate,
    leftovers_die_when_the_process_exits,
    terminate_takes_the_whole_tree,
    the_owner_going_away_takes_the_whole_tree,
    a_stop_signal_stops_the_command_not_its_supervisor,
);
