//! What can go wrong starting an MCP server or calling one of its tools.

use std::time::Duration;

/// Why a server did not start or a call has no result. The display text is what users and
/// the model see, so it names the server.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// The server's program could not be started.
    #[error("MCP server `{server}`: could not start `{command}`: {reason}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program that was run.
        command: String,
        /// The operating system's reason.
        reason: String,
    },
    /// Starting (initialising and listing tools) took longer than `startup_timeout_sec`.
    #[error(
        "MCP server `{server}`: did not start within {} s (raise `startup_timeout_sec`){}",
        timeout.as_secs_f64(),
        describe_stderr(stderr.as_deref())
    )]
    StartupTimeout {
        /// The server's name.
        server: String,
        /// The bound that passed.
        timeout: Duration,
        /// The last line the server wrote to stderr, if any.
        stderr: Option<String>,
    },
    /// The server failed during start-up (it exited, or refused to initialise).
    #[error("MCP server `{server}`: failed to start: {reason}{}", describe_stderr(stderr.as_deref()))]
    Startup {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: String,
        /// The last line the server wrote to stderr, if any.
        stderr: Option<String>,
    },
    /// The server asks for OAuth and no login is stored for it.
    #[error("MCP server `{server}` needs a login: run `keel mcp login {server}`")]
    NeedsLogin {
        /// The server's name.
        server: String,
    },
    /// The server refused a call for want of scope (step-up): a new login must grant more.
    #[error(
        "MCP server `{server}` needs more access (scope `{scope}`): run `keel mcp login {server}` to grant it, then try again"
    )]
    NeedsScope {
        /// The server's name.
        server: String,
        /// The scopes the server asked for.
        scope: String,
    },
    /// A setting needed to reach it is missing (an unset `bearer_token_env_var`, say).
    #[error("MCP server `{server}`: {reason}")]
    Setup {
        /// The server's name.
        server: String,
        /// What is missing.
        reason: String,
    },
    /// The call took longer than `tool_timeout_sec`; the server was told to cancel it.
    #[error(
        "MCP tool `{tool}` of server `{server}` did not answer within {} s (raise `tool_timeout_sec`)",
        timeout.as_secs_f64()
    )]
    CallTimeout {
        /// The server's name.
        server: String,
        /// The tool's name.
        tool: String,
        /// The bound that passed.
        timeout: Duration,
    },
    /// The call was interrupted; the server was told to cancel it.
    #[error("MCP tool `{tool}` of server `{server}` was cancelled")]
    Cancelled {
        /// The server's name.
        server: String,
        /// The tool's name.
        tool: String,
    },
    /// The server answered with an error, or went away mid-call.
    #[error("MCP tool `{tool}` of server `{server}` failed: {reason}")]
    Call {
        /// The server's name.
        server: String,
        /// The tool's name.
        tool: String,
        /// What went wrong.
        reason: String,
    },
}

fn describe_stderr(line: Option<&str>) -> String {
    line.map(|line| format!(" (stderr: {line})"))
        .unwrap_or_default()
}
