//! Commands run in the client's terminals.

use std::collections::BTreeMap;
use std::path::PathBuf;

use futures::future::BoxFuture;
use keel_protocol::{CallId, ConversationId};

use super::ClientBackendError;

/// A one-shot command, ready to run: approved, and wrapped in Keel's sandbox helper when the
/// turn is sandboxed (run it exactly as given, or the sandbox does not hold).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCommand {
    /// The tool call it belongs to (the client shows the terminal in that call).
    pub call_id: CallId,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// The name the program must see as `argv[0]` when it differs from `argv[0]`: the
    /// sandbox helper only confines when started under its own name. A client that cannot
    /// set it runs the program through a link of that name.
    pub arg0: Option<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// Its whole environment.
    pub env: BTreeMap<String, String>,
    /// Bytes of output worth keeping (the rest is cut from the start).
    pub output_byte_limit: u64,
}

/// How a command in a client's terminal ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalExit {
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<String>,
}

/// What a client's terminal printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalOutput {
    /// Standard output and error as the terminal showed them.
    pub output: String,
    /// Whether the start was cut to keep within the limit.
    pub truncated: bool,
}

/// Terminals of the client (an editor's), where the user watches the model's commands live.
/// Keel waits for the exit, kills the command at its timeout or when the turn is cancelled,
/// and reads the output for the model.
pub trait ClientTerminals: Send + Sync {
    /// Whether this client runs the commands of `conversation` (default: every one).
    fn serves(&self, conversation: ConversationId) -> bool {
        let _ = conversation;
        true
    }

    /// Starts `command` in a new terminal.
    fn start(
        &self,
        conversation: ConversationId,
        command: ClientCommand,
    ) -> BoxFuture<'_, Result<Box<dyn ClientTerminal>, ClientBackendError>>;
}

/// One command running in a client's terminal.
pub trait ClientTerminal: Send + Sync {
    /// Waits until the command ends.
    fn wait_for_exit(&self) -> BoxFuture<'_, Result<TerminalExit, ClientBackendError>>;

    /// What it printed so far.
    fn output(&self) -> BoxFuture<'_, Result<TerminalOutput, ClientBackendError>>;

    /// Stops the command and everything it started; the terminal stays readable.
    fn kill(&self) -> BoxFuture<'_, Result<(), ClientBackendError>>;

    /// Lets the client free the terminal (it may keep showing it); called once, last.
    fn release(&self) -> BoxFuture<'_, Result<(), ClientBackendError>>;
}
