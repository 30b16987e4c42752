//! Configuring and spawning a child process for [`JsonLinesProcess`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::harness::binary::cargo_bin;
use crate::harness::output::{Diagnostics, LINE_CHANNEL_CAPACITY, drain_stderr, read_stdout};
use crate::harness::process::{Home, JsonLinesProcess, ProcessParts};

/// The default bound on every wait; generous because CI runs on two busy cores.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Configures a child process: program, arguments, environment, home directory, timeouts.
#[derive(Debug)]
#[must_use]
pub struct ProcessBuilder {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    home_vars: Vec<String>,
    home: Option<Home>,
    cwd: Option<PathBuf>,
    timeout: Duration,
    jsonrpc_field: bool,
}

impl ProcessBuilder {
    /// A builder running `program`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            home_vars: Vec::new(),
            home: None,
            cwd: None,
            timeout: DEFAULT_TIMEOUT,
            jsonrpc_field: true,
        }
    }

    /// A builder running the cargo binary `name`, found by [`cargo_bin`].
    pub fn cargo_bin(name: &str) -> Result<Self> {
        Ok(Self::new(cargo_bin(name)?))
    }

    /// Appends an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child (the test's own environment is untouched).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// Removes an inherited environment variable from the child's environment.
    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    /// Also points environment variable `var` (e.g. `CODEX_HOME`) at the home directory;
    /// `HOME` always is.
    pub fn home_var(mut self, var: impl Into<String>) -> Self {
        self.home_vars.push(var.into());
        self
    }

    /// Uses `dir` as the home directory (kept alive, and deleted, with the process) instead
    /// of a fresh temporary one.
    pub fn home(mut self, dir: TempDir) -> Self {
        self.home = Some(Home::Temp(dir));
        self
    }

    /// Uses an existing directory as the home directory; it is not deleted.
    pub fn home_path(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(Home::Path(dir.into()));
        self
    }

    /// Runs the child in `dir` (default: the home directory).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Bounds every wait by `timeout` (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Leaves `"jsonrpc": "2.0"` out of messages the harness builds, as Codex's app-server
    /// protocol does.
    pub fn without_jsonrpc_field(mut self) -> Self {
        self.jsonrpc_field = false;
        self
    }

    /// The command line, for messages.
    fn describe(&self) -> String {
        let mut line = self.program.display().to_string();
        for arg in &self.args {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }

    /// Spawns the child with piped stdio, a drained stderr and `kill_on_drop`.
    ///
    /// Must be called inside a tokio runtime: the output drain tasks are spawned on it.
    pub fn spawn(mut self) -> Result<JsonLinesProcess> {
        let home = match self.home.take() {
            Some(home) => home,
            None => Home::Temp(
                tempfile::Builder::new()
                    .prefix("keel-home-")
                    .tempdir()
                    .map_err(Error::TempDir)?,
            ),
        };
        let command_line = self.describe();
        let cwd = self.cwd.clone().unwrap_or_else(|| home.path().to_owned());
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&cwd)
            .env("HOME", home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in &self.home_vars {
            command.env(var, home.path());
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            command: command_line.clone(),
            source,
        })?;
        let missing_pipe = |name: &str| Error::Spawn {
            command: command_line.clone(),
            source: std::io::Error::other(format!("child has no {name} pipe")),
        };
        let stdin = child.stdin.take().ok_or_else(|| missing_pipe("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing_pipe("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing_pipe("stderr"))?;

        let diagnostics = Arc::new(Diagnostics::default());
        let (lines_tx, lines_rx) = mpsc::channel(LINE_CHANNEL_CAPACITY);
        let stdout_task = tokio::spawn(read_stdout(stdout, lines_tx, Arc::clone(&diagnostics)));
        let stderr_task = tokio::spawn(drain_stderr(stderr, Arc::clone(&diagnostics)));
        Ok(JsonLinesProcess::from_parts(ProcessParts {
            child,
            stdin,
            lines: lines_rx,
            diagnostics,
            tasks: vec![stdout_task, stderr_task],
            home,
            command_line,
            cwd,
            timeout: self.timeout,
            jsonrpc_field: self.jsonrpc_field,
        }))
    }
}

impl Home {
    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Self::Temp(dir) => dir.path(),
            Self::Path(path) => path,
        }
    }
}
