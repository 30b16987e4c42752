//! The crate's error type.

use std::path::PathBuf;
use std::time::Duration;

use crate::mock::Violation;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while scripting the mock or driving a child process.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The mock server could not bind its listening socket.
    #[error("mock model server could not bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A JSON script file could not be read.
    #[error("could not read script {path}: {source}")]
    ReadScript {
        /// The script file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A JSON script did not match the documented format.
    #[error("invalid script{}: {source}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    ParseScript {
        /// The script file, when the script came from one.
        path: Option<PathBuf>,
        /// The serde error, with line and column.
        source: serde_json::Error,
    },

    /// The mock saw requests that broke a protocol invariant.
    #[error("mock model saw {} protocol violation(s):\n{}", .0.len(), format_violations(.0))]
    Violations(Vec<Violation>),

    /// Waiting for something (a request, a message, an exit) took longer than allowed.
    #[error("timed out after {timeout:?} waiting for {what}{context}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long we waited.
        timeout: Duration,
        /// Diagnostics: the command, recent output and stderr of the process, if any.
        context: String,
    },

    /// A binary the harness was asked to run could not be found.
    #[error(
        "binary `{name}` not found (looked in: {searched}); build it with `cargo build --bin {name}`"
    )]
    BinaryNotFound {
        /// The binary's name.
        name: String,
        /// The places searched, comma separated.
        searched: String,
    },

    /// A throwaway PostgreSQL cluster could not be set up or started.
    #[error("throwaway PostgreSQL: {0}")]
    Postgres(String),

    /// The test load balancer could not be started.
    #[error("HAProxy: {0}")]
    Haproxy(String),

    /// A throwaway desktop keyring (D-Bus session and GNOME Keyring) could not be started.
    #[error("throwaway keyring: {0}")]
    SecretService(String),

    /// The child process could not be started.
    #[error("could not spawn {command}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The I/O error.
        source: std::io::Error,
    },

    /// Writing to or waiting on the child process failed.
    #[error("I/O with {command} failed: {source}{context}")]
    ProcessIo {
        /// The command line.
        command: String,
        /// The I/O error.
        source: std::io::Error,
        /// Diagnostics: recent output and stderr of the process.
        context: String,
    },

    /// The child closed its stdout before the awaited message arrived.
    #[error("{command} closed stdout while waiting for {what}{context}")]
    ProcessExited {
        /// The command line.
        command: String,
        /// What was awaited.
        what: String,
        /// Diagnostics: exit status, recent output and stderr of the process.
        context: String,
    },

    /// The child wrote a stdout line that is not JSON.
    #[error("{command} wrote a stdout line that is not JSON: {line:?}{context}")]
    NotJson {
        /// The command line.
        command: String,
        /// The offending line.
        line: String,
        /// Diagnostics: recent output and stderr of the process.
        context: String,
    },

    /// The child answered a request with a JSON-RPC error.
    #[error("request {id} failed: {error}")]
    JsonRpc {
        /// The request id.
        id: serde_json::Value,
        /// The `error` member of the response.
        error: serde_json::Value,
    },

    /// A message did not match the type its method's table gives it.
    #[error("{what} does not match its type: {source}; the message: {message}")]
    Shape {
        /// Which message (the method and whether it is a result or params).
        what: String,
        /// The serde error, naming the field.
        source: serde_json::Error,
        /// The message as received.
        message: serde_json::Value,
    },

    /// A message could not be serialized.
    #[error("could not serialize message: {0}")]
    Serialize(#[from] serde_json::Error),

    /// Writing a config file failed.
    #[error("could not write {path}: {source}")]
    WriteConfig {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A config override could not be applied to the generated TOML.
    #[error("config override `{key}` conflicts with a non-table value at `{at}`")]
    ConfigOverride {
        /// The dotted key of the override.
        key: String,
        /// The prefix that already holds a non-table value.
        at: String,
    },

    /// The generated config could not be rendered as TOML.
    #[error("could not render config.toml: {0}")]
    RenderConfig(#[from] toml::ser::Error),

    /// A message lacked a member the harness needed.
    #[error("expected `{what}` in {message}")]
    UnexpectedMessage {
        /// The JSON pointer that was missing.
        what: String,
        /// The message.
        message: serde_json::Value,
    },

    /// A marked program for the process-table checks could not be set up.
    #[error("could not link {path} for the process-table check: {source}")]
    MarkedProgram {
        /// The link that was to be created.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// Processes a test started were still running after their owner was gone.
    #[error("{} process(es) outlived their owner after {waited:?}: {pids:?}", pids.len())]
    ProcessesLeft {
        /// Their PIDs (they have been killed since).
        pids: Vec<i32>,
        /// How long the check waited for them to go.
        waited: Duration,
    },

    /// A fuzzed server stopped answering, wrote something that is not protocol, or failed.
    #[error("fuzzing: {0}")]
    Fuzz(String),

    /// A temporary directory could not be created.
    #[error("could not create a temporary home directory: {0}")]
    TempDir(std::io::Error),
}

fn format_violations(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("  - {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}
