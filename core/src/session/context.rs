//! The settings a turn runs with; replaced as a whole when the client overrides them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use keel_protocol::{AskForApproval, SandboxPolicy};

use crate::client::ModelClient;

/// Everything a turn needs to know about how to run.
#[derive(Debug, Clone)]
pub(crate) struct TurnContext {
    pub cwd: PathBuf,
    pub approval_policy: AskForApproval,
    pub sandbox_policy: SandboxPolicy,
    pub client: ModelClient,
    pub model_context_window: Option<u64>,
    pub base_instructions: String,
    pub developer_instructions: Option<String>,
    /// `AGENTS.md` project docs, already read.
    pub user_instructions: Option<String>,
    /// The environment commands run with.
    pub shell_env: BTreeMap<String, String>,
    pub request_max_retries: u64,
    pub stream_max_retries: u64,
}
