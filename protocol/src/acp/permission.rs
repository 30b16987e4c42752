//! `session/request_permission`: the agent asks the person whether a tool call may run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ToolCallUpdate;

/// Params of `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    /// The session.
    pub session_id: String,
    /// The tool call asking.
    pub tool_call: ToolCallUpdate,
    /// The answers the person may give.
    pub options: Vec<PermissionOption>,
}

/// An answer the person may give.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Its id, returned when chosen.
    pub option_id: String,
    /// What people see.
    pub name: String,
    /// What it means.
    pub kind: PermissionOptionKind,
}

/// What an answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    /// Run it this time.
    AllowOnce,
    /// Run it, and things like it, without asking again in this session.
    AllowAlways,
    /// Do not run it.
    RejectOnce,
    /// Do not run it, nor things like it.
    RejectAlways,
}

/// Result of `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionResponse {
    /// The person's answer.
    pub outcome: RequestPermissionOutcome,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RequestPermissionOutcome {
    /// The turn was cancelled before an answer.
    Cancelled,
    /// An option was chosen.
    #[serde(rename_all = "camelCase")]
    Selected {
        /// The option's id.
        option_id: String,
    },
}
