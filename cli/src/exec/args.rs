//! The command line of `keel exec`: Codex 0.169's `codex exec` flags, plus Keel's own.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Exit codes and environment, shown at the end of `keel exec --help`.
pub const EXEC_AFTER_HELP: &str = "\
Exit codes:
  0    the turn completed
  1    the turn failed or was interrupted, or something broke while running
  2    bad usage or configuration (nothing was run)
  130  a second Ctrl-C (the first one interrupts the turn)

Environment:
  KEEL_HOME        where config.toml, sessions and skills live (default ~/.keel)
  CODEX_API_KEY    the API key of the OpenAI provider (before OPENAI_API_KEY), as in codex exec
  OPENAI_API_KEY   the API key of providers that read it (the default provider)
  CODEX_OSS_BASE_URL, CODEX_OSS_PORT   where --oss finds its local server";

/// The local servers `--local-provider` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LocalProvider {
    /// Ollama (or any server at `CODEX_OSS_BASE_URL`).
    Ollama,
    /// LM Studio's server on localhost:1234.
    Lmstudio,
}

/// When the readable stream on stderr is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Color {
    /// Always, even into a file or pipe.
    Always,
    /// Never.
    Never,
    /// When stderr is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
}

/// Arguments of `keel exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task. `-` (or nothing, when stdin is not a terminal) reads it from stdin; with a
    /// prompt given and stdin piped, stdin is appended as a `<stdin>` block.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// The model to use.
    #[arg(global = true, short = 'm', long)]
    pub model: Option<String>,

    /// Working directory of the task.
    #[arg(global = true, short = 'C', long = "cd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// A configuration override, `key.path=value` (value parsed as TOML). Repeatable.
    #[arg(global = true, short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub config_overrides: Vec<String>,

    /// Turn a feature on (as `-c features.NAME=true`). Repeatable.
    #[arg(global = true, long = "enable", value_name = "FEATURE")]
    pub enable: Vec<String>,

    /// Turn a feature off (as `-c features.NAME=false`). Repeatable.
    #[arg(global = true, long = "disable", value_name = "FEATURE")]
    pub disable: Vec<String>,

    /// Refuse to run when config.toml holds keys Keel does not know (they are only warned
    /// about otherwise).
    #[arg(global = true, long)]
    pub strict_config: bool,

    /// A profile from config.toml (`[profiles.NAME]`).
    #[arg(global = true, short = 'p', long)]
    pub profile: Option<String>,

    /// Sandbox for model commands.
    #[arg(global = true, short = 's', long, value_enum)]
    pub sandbox: Option<SandboxArg>,

    /// Low-friction automation: workspace-write sandbox, approvals only on request.
    #[arg(global = true, long)]
    pub full_auto: bool,

    /// Run every command without a sandbox and without asking. Only for environments that
    /// are sandboxed from outside (a container, a throwaway VM).
    #[arg(global = true, long, alias = "yolo", conflicts_with_all = ["full_auto", "sandbox"])]
    pub dangerously_bypass_approvals_and_sandbox: bool,

    /// Use a local open-source model server (Ollama at `CODEX_OSS_BASE_URL`, or localhost
    /// port `CODEX_OSS_PORT`, default 11434), with model `gpt-oss:20b` unless `-m` names
    /// another. The server is asked for the model before the run starts.
    #[arg(global = true, long)]
    pub oss: bool,

    /// Which local server `--oss` talks to: `ollama` (the default; `CODEX_OSS_BASE_URL`
    /// or `CODEX_OSS_PORT` move it) or `lmstudio` (localhost:1234, model
    /// `openai/gpt-oss-20b` unless `-m` names another). Implies `--oss`.
    #[arg(global = true, long, value_enum, value_name = "SERVER")]
    pub local_provider: Option<LocalProvider>,

    /// An image to attach to the prompt (PNG, JPEG, GIF or WebP). Repeatable; also
    /// `-i a.png,b.png`.
    #[arg(
        global = true,
        short = 'i',
        long = "image",
        value_name = "FILE",
        value_delimiter = ','
    )]
    pub images: Vec<PathBuf>,

    /// Another directory the model's commands and patches may write to, beside the working
    /// directory (under the workspace-write sandbox). Repeatable.
    #[arg(global = true, long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,

    /// Keep no record of the session on disk (it cannot be resumed).
    #[arg(global = true, long)]
    pub ephemeral: bool,

    /// A JSON Schema file the final answer must match (sent to the model as the response
    /// format), as Codex's `exec --output-schema`.
    #[arg(global = true, long = "output-schema", value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// Colour in the readable stream on stderr.
    #[arg(global = true, long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,

    /// Print the run as JSON Lines on stdout in `codex exec --json`'s format
    /// (`thread.started`, `turn.started`, `item.*`, `turn.completed`, `turn.failed`, `error`).
    #[arg(global = true, long, alias = "experimental-json")]
    pub json: bool,

    /// Print Keel's own event stream on stdout instead: every app-server notification of the
    /// thread (streaming deltas included) as one JSON line `{"method", "params"}`.
    #[arg(global = true, long, conflicts_with = "json")]
    pub app_server_events: bool,

    /// Also write the agent's last message to FILE when the turn completes (as `codex exec
    /// -o`); works with `--json` too.
    #[arg(
        global = true,
        short = 'o',
        long = "output-last-message",
        value_name = "FILE"
    )]
    pub output_last_message: Option<PathBuf>,

    /// How an MCP server's question (elicitation) is answered, with nobody to ask:
    /// `decline`, or `accept-defaults` — accept a form whose every required field has a
    /// default, answering with the defaults (else decline).
    #[arg(global = true, long, value_name = "POLICY", default_value = "decline")]
    pub mcp_elicitation: UnattendedElicitation,

    /// Run enabled hooks even when their definitions are not trusted (for automation whose
    /// hooks were vetted). Hooks of an untrusted project still do not load.
    #[arg(global = true, long)]
    pub dangerously_bypass_hook_trust: bool,

    /// Accepted for compatibility with `codex exec`: Keel does not require a git repository.
    #[arg(global = true, long)]
    pub skip_git_repo_check: bool,

    /// Accepted for compatibility with `codex exec` (an analytics label of the thread); Keel
    /// sends no analytics.
    #[arg(global = true, long, value_name = "SOURCE")]
    pub thread_source: Option<String>,

    /// Run the turn on an app-server elsewhere (`ws://host:port` or `wss://host:port`, as
    /// `keel app-server --listen` serves) instead of in this process; the server's
    /// configuration, providers and sandbox apply.
    #[arg(global = true, long, value_name = "URL")]
    pub remote: Option<String>,

    /// The environment variable holding the bearer token of `--remote` (a server started
    /// with `--ws-auth`); sent only over `wss://` or to this machine.
    #[arg(global = true, long, value_name = "ENV_VAR")]
    pub remote_auth_token_env: Option<String>,

    #[command(subcommand)]
    pub session: Option<SessionCommand>,
}

/// `--mcp-elicitation` values: what a headless run answers an MCP server's question.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum UnattendedElicitation {
    /// Refuse every question.
    #[default]
    Decline,
    /// Accept a form whose every required field has a default, with the defaults.
    AcceptDefaults,
}

/// `--sandbox` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SandboxArg {
    /// Commands may read everything and write nothing.
    ReadOnly,
    /// Commands may write in the working directory (and `--add-dir`s).
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

/// Continue from a recorded session instead of starting a new one.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Continue a recorded conversation (by id, thread name, or the most recent with
    /// `--last`).
    Resume(SessionArgs),
    /// Start a new conversation from a copy of a recorded one (by id, thread name, or the
    /// most recent with `--last`); the original is left as it was.
    Fork(SessionArgs),
}

/// Which recorded session, and the follow-up task.
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// The conversation id or thread name (with `--last`, the first word is the prompt).
    #[arg(value_name = "SESSION_ID")]
    pub id: Option<String>,
    /// The most recent conversation (of the working directory, unless `--all`).
    #[arg(long)]
    pub last: bool,
    /// With `--last`: the most recent of any working directory.
    #[arg(long)]
    pub all: bool,
    /// The follow-up task (`-` reads stdin).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
}
