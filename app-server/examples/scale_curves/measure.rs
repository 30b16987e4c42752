//! What every curve reads off a process: its memory, and latency percentiles.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{AppServerProcess, CapturedRequest, MockModelServer, ProcessBuilder, Turn};
use tempfile::TempDir;

use crate::Engine;

/// A memory figure of `/proc/<pid>/status` (`VmRSS` now, `VmHWM` the peak), in KiB.
pub fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading the status of process {pid}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no {field} in the status of process {pid}"))
}

/// KiB as MiB, for tables and charts.
pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The `quantile` of sorted durations, in milliseconds.
pub fn percentile_ms(sorted: &[Duration], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 * quantile).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

/// What one measurement runs in: a mock model, a home whose config points at it, an empty
/// HOME (no login profile) and a workspace; all removed when dropped.
pub struct Scratch {
    /// The model the server talks to.
    pub mock: MockModelServer,
    /// The server's home (`KEEL_HOME` / `CODEX_HOME`).
    pub home: TempDir,
    /// HOME for the server and its commands.
    pub empty_home: TempDir,
    /// The threads' working directory.
    pub workspace: TempDir,
}

impl Scratch {
    /// A scratch world around a mock answering with `responder`.
    pub async fn new(
        responder: impl Fn(&CapturedRequest) -> Option<Turn> + Send + Sync + 'static,
    ) -> anyhow::Result<Self> {
        let mock = MockModelServer::builder()
            .responder(responder)
            .start()
            .await?;
        let home = tempfile::tempdir()?;
        keel_test_support::write_config(home.path(), &mock.uri(), Vec::<(&str, bool)>::new())?;
        Ok(Self {
            mock,
            home,
            empty_home: tempfile::tempdir()?,
            workspace: tempfile::tempdir()?,
        })
    }

    /// An app-server of `engine` in this world, `extra` arguments after `app-server`.
    pub fn app_server(&self, engine: &Engine, extra: &[&str]) -> anyhow::Result<AppServerProcess> {
        spawn_app_server(engine, self.home.path(), self.empty_home.path(), extra)
    }
}

/// An app-server of `engine` over stdio, its home a fresh copy of `home`'s config pointing at
/// the mock, HOME an empty directory (no login profile), extra arguments after `app-server`.
fn spawn_app_server(
    engine: &Engine,
    home: &Path,
    empty_home: &Path,
    extra: &[&str],
) -> anyhow::Result<AppServerProcess> {
    let builder = ProcessBuilder::new(&engine.program)
        .arg("app-server")
        .args(extra.iter().copied())
        .home_var(engine.home_env)
        .home_path(home)
        .env("HOME", empty_home)
        .env("OPENAI_API_KEY", "x")
        .env("RUST_LOG", "warn")
        .timeout(Duration::from_secs(600));
    Ok(AppServerProcess::spawn(builder)?)
}
