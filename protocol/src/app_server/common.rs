//! Shapes shared by several app-server messages.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ReasoningEffort, TokenUsage, TokenUsageInfo};

/// The sandbox as app-server v2 spells it (camelCase tags and members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicyV2 {
    /// No restrictions.
    DangerFullAccess,
    /// Read anything, write nothing.
    #[serde(rename_all = "camelCase")]
    ReadOnly {
        /// Whether outbound network access is allowed.
        #[serde(default)]
        network_access: bool,
    },
    /// Write under the cwd and the writable roots.
    #[serde(rename_all = "camelCase")]
    WorkspaceWrite {
        /// Extra writable directories.
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

impl From<crate::SandboxPolicy> for SandboxPolicyV2 {
    fn from(policy: crate::SandboxPolicy) -> Self {
        match policy {
            crate::SandboxPolicy::DangerFullAccess => Self::DangerFullAccess,
            crate::SandboxPolicy::ReadOnly => Self::ReadOnly {
                network_access: false,
            },
            crate::SandboxPolicy::WorkspaceWrite {
                writable_roots,
                network_access,
                exclude_tmpdir_env_var,
                exclude_slash_tmp,
            } => Self::WorkspaceWrite {
                writable_roots,
                network_access,
                exclude_tmpdir_env_var,
                exclude_slash_tmp,
            },
        }
    }
}

impl From<SandboxPolicyV2> for crate::SandboxPolicy {
    fn from(policy: SandboxPolicyV2) -> Self {
        match policy {
            SandboxPolicyV2::DangerFullAccess => Self::DangerFullAccess,
            SandboxPolicyV2::ReadOnly { .. } => Self::ReadOnly,
            SandboxPolicyV2::WorkspaceWrite {
                writable_roots,
                network_access,
                exclude_tmpdir_env_var,
                exclude_slash_tmp,
            } => Self::WorkspaceWrite {
                writable_roots,
                network_access,
                exclude_tmpdir_env_var,
                exclude_slash_tmp,
            },
        }
    }
}

/// Who reviews approval requests; Keel always asks the user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalsReviewer {
    /// The client's user.
    #[default]
    User,
}

/// Token counts in app-server spelling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Prompt tokens served from cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Completion tokens spent reasoning.
    pub reasoning_output_tokens: u64,
    /// All tokens.
    pub total_tokens: u64,
}

impl From<TokenUsage> for TokenUsageBreakdown {
    fn from(usage: TokenUsage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            output_tokens: usage.output_tokens,
            reasoning_output_tokens: usage.reasoning_output_tokens,
            total_tokens: usage.total_tokens,
        }
    }
}

/// A thread's token usage: the latest response and the running total.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// Sum over the thread.
    pub total: TokenUsageBreakdown,
    /// The latest response.
    pub last: TokenUsageBreakdown,
    /// The model's context window, when known.
    pub model_context_window: Option<u64>,
}

impl From<TokenUsageInfo> for ThreadTokenUsage {
    fn from(info: TokenUsageInfo) -> Self {
        Self {
            total: info.total_token_usage.into(),
            last: info.last_token_usage.into(),
            model_context_window: info.model_context_window,
        }
    }
}

/// Settings a thread runs with, returned by start, resume and fork.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSettings {
    /// The model.
    pub model: String,
    /// The provider id.
    pub model_provider: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// The approval policy.
    pub approval_policy: crate::AskForApproval,
    /// Who reviews approvals.
    pub approvals_reviewer: ApprovalsReviewer,
    /// The sandbox.
    pub sandbox: SandboxPolicyV2,
    /// Reasoning effort, when set.
    pub reasoning_effort: Option<ReasoningEffort>,
}
