//! Collaboration modes (`default`, `plan`) as a client chooses them for a turn or a thread.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ReasoningEffort;

/// A collaboration mode and the settings it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationMode {
    /// The mode's id: `default`, or `plan` (explore read-only and propose a plan).
    pub mode: String,
    /// Its settings.
    pub settings: CollaborationModeSettings,
}

/// The settings of a collaboration mode (snake_case members, as Codex spells them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationModeSettings {
    /// The model.
    pub model: String,
    /// The reasoning effort.
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Instructions the mode adds (the client's wording; Keel has its own for `plan`).
    #[serde(default)]
    pub developer_instructions: Option<String>,
}

impl CollaborationMode {
    /// The engine's operation for this mode; an unknown mode is an error naming it.
    pub fn to_op(&self) -> Result<crate::Op, String> {
        let mode = match self.mode.as_str() {
            "default" => crate::CollaborationModeKind::Default,
            "plan" => crate::CollaborationModeKind::Plan,
            other => {
                return Err(format!(
                    "unknown collaboration mode `{other}`; Keel has `default` and `plan`"
                ));
            }
        };
        Ok(crate::Op::SetCollaborationMode {
            mode,
            developer_instructions: self.settings.developer_instructions.clone(),
        })
    }
}
