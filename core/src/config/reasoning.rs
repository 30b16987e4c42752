//! How reasoning models are asked to reason and to talk: Codex's
//! `model_reasoning_summary` and `model_verbosity` values.

use serde::{Deserialize, Serialize};

/// How much of its reasoning a model summarises for the user (`model_reasoning_summary`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummaryMode {
    /// The model decides.
    #[default]
    Auto,
    /// Short summaries.
    Concise,
    /// Long summaries.
    Detailed,
    /// No summaries (none are streamed to clients).
    None,
}

/// How long the model's answers are (`model_verbosity`), for models that take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    /// Terse.
    Low,
    /// The default.
    Medium,
    /// Thorough.
    High,
}
