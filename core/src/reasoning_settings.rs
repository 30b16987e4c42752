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

/// The processing tier asked of the provider (`service_tier`), as Codex 0.169 sends it:
/// `flex` (slower, cheaper) and `priority` (`fast` is another name for it) are sent;
/// `default` and `auto` send nothing, leaving the account's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceTier {
    /// Slower and cheaper, when capacity allows.
    Flex,
    /// Faster, at a higher price.
    Priority,
    /// The same as `priority`.
    Fast,
    /// The account's default (nothing is sent).
    Default,
    /// The provider decides (nothing is sent).
    Auto,
}

impl ServiceTier {
    /// The value sent as `service_tier`, if any.
    pub fn wire_value(self) -> Option<&'static str> {
        match self {
            Self::Flex => Some("flex"),
            Self::Priority | Self::Fast => Some("priority"),
            Self::Default | Self::Auto => None,
        }
    }
}
