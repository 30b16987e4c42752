//! What Keel knows about model families without being told, in one table: the published
//! context window, whether the model reasons (and so takes `reasoning` and returns encrypted
//! reasoning to send back), whether it takes `text.verbosity`, which `apply_patch` form it
//! was trained on, and which command tools it gets by default. Configuration (`model_context_window`, `model_supports_reasoning_summaries`)
//! wins over this table.

use keel_protocol::ReasoningEffort;

/// The facts of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelFamily {
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Takes `reasoning` and returns reasoning items (with `encrypted_content` on request).
    pub reasoning: bool,
    /// The effort sent when the configuration names none.
    pub default_effort: Option<ReasoningEffort>,
    /// Takes `text.verbosity`.
    pub verbosity: bool,
    /// Trained on the freeform (custom tool) `apply_patch`.
    pub freeform_apply_patch: bool,
    /// The command tools offered by default: `exec_command`/`write_stdin` when true, `shell`
    /// when false (`features.unified_exec` overrides).
    pub unified_exec: bool,
}

const UNKNOWN: ModelFamily = ModelFamily {
    context_window: None,
    reasoning: false,
    default_effort: None,
    verbosity: false,
    freeform_apply_patch: false,
    unified_exec: true,
};

/// Families by model-name prefix; the first match wins, so longer prefixes come first.
const FAMILIES: &[(&str, ModelFamily)] = &[
    (
        "gpt-5-codex",
        ModelFamily {
            context_window: Some(272_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::Medium),
            verbosity: false,
            freeform_apply_patch: true,
            unified_exec: true,
        },
    ),
    (
        "gpt-5",
        ModelFamily {
            context_window: Some(272_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::Medium),
            verbosity: true,
            freeform_apply_patch: true,
            unified_exec: true,
        },
    ),
    (
        "codex-mini",
        ModelFamily {
            context_window: Some(200_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::Medium),
            verbosity: false,
            freeform_apply_patch: true,
            unified_exec: true,
        },
    ),
    (
        "o3",
        ModelFamily {
            context_window: Some(200_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::Medium),
            verbosity: false,
            freeform_apply_patch: false,
            unified_exec: true,
        },
    ),
    (
        "o4-mini",
        ModelFamily {
            context_window: Some(200_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::Medium),
            verbosity: false,
            freeform_apply_patch: false,
            unified_exec: true,
        },
    ),
    (
        // Open-weight reasoning models (`gpt-oss:20b` on Ollama, `gpt-oss-120b` elsewhere):
        // they reason and take a summary; no effort unless the user names one.
        "gpt-oss",
        ModelFamily {
            context_window: Some(131_072),
            reasoning: true,
            default_effort: None,
            verbosity: false,
            freeform_apply_patch: false,
            unified_exec: true,
        },
    ),
    (
        "gpt-4.1",
        ModelFamily {
            context_window: Some(1_047_576),
            unified_exec: false,
            ..UNKNOWN
        },
    ),
    (
        "gpt-4o",
        ModelFamily {
            context_window: Some(128_000),
            unified_exec: false,
            ..UNKNOWN
        },
    ),
];

/// The family of `model` (an unknown model gets no reasoning, no verbosity, the JSON
/// `apply_patch`).
pub(crate) fn family(model: &str) -> ModelFamily {
    // Gateways name models with their vendor first (`openai/gpt-oss-120b`).
    let model = model.rsplit('/').next().unwrap_or(model);
    FAMILIES
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(UNKNOWN, |(_, family)| *family)
}

/// The published context window of `model`, when its family is known.
pub(crate) fn known_context_window(model: &str) -> Option<u64> {
    family(model).context_window
}

/// The token count at which history is compacted: `configured`, else 90% of the context
/// window; `None` (never compact automatically) when neither is known.
pub(crate) fn auto_compact_limit(
    configured: Option<u64>,
    context_window: Option<u64>,
) -> Option<u64> {
    configured.or_else(|| context_window.map(|window| window / 10 * 9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_and_limits() {
        assert_eq!(known_context_window("gpt-5-codex"), Some(272_000));
        assert_eq!(known_context_window("o3-pro"), Some(200_000));
        assert_eq!(known_context_window("mock-model"), None);
        assert!(family("gpt-5-codex").reasoning && !family("gpt-5-codex").verbosity);
        assert!(family("gpt-5").verbosity);
        assert!(!family("gpt-4o").reasoning && !family("gpt-4o").unified_exec);
        assert!(family("mock-model").unified_exec);
        assert!(family("o3").reasoning && !family("o3").freeform_apply_patch);
        assert_eq!(auto_compact_limit(Some(12), Some(272_000)), Some(12));
        assert_eq!(auto_compact_limit(None, Some(200_000)), Some(180_000));
        assert_eq!(auto_compact_limit(None, None), None);
    }
}
