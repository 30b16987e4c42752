//! What the agent may do without asking, and where: approval policy, sandbox policy, and the
//! user's answer to an approval request.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When the engine asks the user before running a command or applying a patch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AskForApproval {
    /// Ask for anything not on the known-safe, read-only list.
    #[serde(rename = "untrusted")]
    UnlessTrusted,
    /// Run in the sandbox; ask only to retry a failed command without it.
    OnFailure,
    /// The model decides when to ask (it may request escalation up front).
    #[default]
    OnRequest,
    /// Never ask; failures go straight back to the model.
    Never,
}

/// The sandbox mode named in configuration; [`SandboxPolicy`] adds its parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read anything, write nothing, no network.
    #[default]
    ReadOnly,
    /// Read anything, write under the workspace and writable roots.
    WorkspaceWrite,
    /// No restrictions at all.
    DangerFullAccess,
}

/// The restrictions applied to commands the model runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum SandboxPolicy {
    /// No restrictions at all.
    DangerFullAccess,
    /// Read anything, write nothing, no network.
    ReadOnly,
    /// Read anything, write under the cwd, the writable roots and the temp dir.
    WorkspaceWrite {
        /// Extra directories the command may write to.
        #[serde(default)]
        writable_roots: Vec<PathBuf>,
        /// Whether outbound network access is allowed.
        #[serde(default)]
        network_access: bool,
        /// Do not add `$TMPDIR` to the writable roots.
        #[serde(default)]
        exclude_tmpdir_env_var: bool,
        /// Do not add `/tmp` to the writable roots.
        #[serde(default)]
        exclude_slash_tmp: bool,
    },
}

impl SandboxPolicy {
    /// The default `workspace-write` policy: no extra roots, no network.
    pub fn new_workspace_write() -> Self {
        Self::WorkspaceWrite {
            writable_roots: Vec::new(),
            network_access: false,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: false,
        }
    }

    /// The mode this policy is an instance of.
    pub fn mode(&self) -> SandboxMode {
        match self {
            Self::DangerFullAccess => SandboxMode::DangerFullAccess,
            Self::ReadOnly => SandboxMode::ReadOnly,
            Self::WorkspaceWrite { .. } => SandboxMode::WorkspaceWrite,
        }
    }
}

/// The user's answer to an exec or patch approval request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewDecision {
    /// Run it this once.
    Approved,
    /// Run it, and do not ask again for the same command in this conversation.
    ApprovedForSession,
    /// Do not run it; the model is told and continues.
    #[default]
    Denied,
    /// Do not run it, and end the turn.
    Abort,
}

/// How the agent works with the user: doing the task, or only planning it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollaborationModeKind {
    /// Do the task.
    #[default]
    Default,
    /// Explore read-only and propose a plan; change nothing.
    Plan,
}
