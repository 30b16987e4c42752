//! Server configuration shared by every connection.

use std::path::PathBuf;
use std::time::Duration;

/// Limits and timings of an exec-server; one value serves every connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecServerConfig {
    /// Output bytes retained per process for `command/exec/snapshot` (head and tail kept,
    /// middle dropped). Live streaming is not affected by this cap.
    pub retained_output_bytes: usize,
    /// Processes one connection may run at once; `command/exec` beyond it fails with -32600.
    pub max_processes: usize,
    /// Between SIGTERM and SIGKILL when a connection closes, the server stops, or a
    /// `command/exec/terminate` names no mode.
    pub shutdown_grace: Duration,
    /// After a process exits, how long its output pipes may stay silent before the server
    /// stops waiting for end-of-file (a background grandchild may hold them open forever).
    pub output_drain_timeout: Duration,
    /// The program that supervises each process, so that nothing it starts outlives it
    /// (see [`crate::supervisor`]); `None` runs processes unsupervised, relying on their
    /// process group alone. By default the running Keel binary, or a `keel` beside the
    /// running program.
    pub supervisor: Option<PathBuf>,
}

impl Default for ExecServerConfig {
    fn default() -> Self {
        Self {
            retained_output_bytes: 1024 * 1024,
            max_processes: 1024,
            shutdown_grace: Duration::from_secs(2),
            output_drain_timeout: Duration::from_secs(1),
            supervisor: crate::supervisor::default_process_supervisor(),
        }
    }
}
