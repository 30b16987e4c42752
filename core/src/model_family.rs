//! What Keel knows about a model without being told: its catalogue entry
//! ([`crate::model_catalog`]) when the catalogue names it, else its family in one table of
//! name prefixes: the published context window, whether the model reasons (and so takes
//! `reasoning` and returns encrypted reasoning to send back), whether it takes
//! `text.verbosity`, which `apply_patch` form it was trained on, which command tools it gets
//! by default, and whether it is driven in code mode with the Responses-lite shape.
//! Configuration (`model_context_window`, `model_supports_reasoning_summaries`) wins over both.

use keel_protocol::ReasoningEffort;

use crate::model_catalog::{
    ApplyPatchToolType, ModelCatalog, ModelEntry, ShellType, TruncationMode,
};
use crate::reasoning_settings::Verbosity;

/// The facts of one family.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The verbosity sent when the configuration names none.
    pub default_verbosity: Option<Verbosity>,
    /// Tools reach the model only through code mode's `exec`.
    pub code_mode: bool,
    /// Requests take the Responses-lite shape (its header, `reasoning.context`).
    pub responses_lite: bool,
    /// The sub-agent tools are the second generation's (task names, messages, a mailbox).
    pub multi_agent_v2: bool,
    /// The most tokens of one tool's output the model reads, when the model says.
    pub tool_output_tokens: Option<usize>,
}

const UNKNOWN: ModelFamily = ModelFamily {
    context_window: None,
    reasoning: false,
    default_effort: None,
    verbosity: false,
    freeform_apply_patch: false,
    unified_exec: true,
    default_verbosity: None,
    code_mode: false,
    responses_lite: false,
    multi_agent_v2: false,
    tool_output_tokens: None,
};

/// Families by model-name prefix; the first match wins, so longer prefixes come first.
const FAMILIES: &[(&str, ModelFamily)] = &[
    (
        "gpt-5-codex",
        ModelFamily {
            context_window: Some(272_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::MEDIUM),
            verbosity: false,
            freeform_apply_patch: true,
            unified_exec: true,
            ..UNKNOWN
        },
    ),
    (
        "gpt-5",
        ModelFamily {
            context_window: Some(272_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::MEDIUM),
            verbosity: true,
            freeform_apply_patch: true,
            unified_exec: true,
            ..UNKNOWN
        },
    ),
    (
        "codex-mini",
        ModelFamily {
            context_window: Some(200_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::MEDIUM),
            verbosity: false,
            freeform_apply_patch: true,
            unified_exec: true,
            ..UNKNOWN
        },
    ),
    (
        "o3",
        ModelFamily {
            context_window: Some(200_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::MEDIUM),
            verbosity: false,
            freeform_apply_patch: false,
            unified_exec: true,
            ..UNKNOWN
        },
    ),
    (
        "o4-mini",
        ModelFamily {
            context_window: Some(200_000),
            reasoning: true,
            default_effort: Some(ReasoningEffort::MEDIUM),
            verbosity: false,
            freeform_apply_patch: false,
            unified_exec: true,
            ..UNKNOWN
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
            ..UNKNOWN
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

/// The facts of `model`: its catalogue entry's, else its family's (an unknown model gets no
/// reasoning, no verbosity, the JSON `apply_patch`).
pub(crate) fn family(catalog: &ModelCatalog, model: &str) -> ModelFamily {
    if let Some(entry) = catalog.find(model) {
        return from_entry(entry);
    }
    // Gateways name models with their vendor first (`openai/gpt-oss-120b`).
    let model = model.rsplit('/').next().unwrap_or(model);
    FAMILIES
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(UNKNOWN, |(_, family)| family.clone())
}

/// A catalogue entry's facts; what it leaves unsaid is a classic reasoning model's.
fn from_entry(entry: &ModelEntry) -> ModelFamily {
    let percent = u64::from(
        entry
            .effective_context_window_percent
            .unwrap_or(100)
            .min(100),
    );
    ModelFamily {
        context_window: entry.context_window.map(|window| window * percent / 100),
        reasoning: true,
        default_effort: entry.default_reasoning_level.clone(),
        verbosity: entry.support_verbosity.unwrap_or(false),
        freeform_apply_patch: entry.apply_patch_tool_type != Some(ApplyPatchToolType::Function),
        unified_exec: !matches!(
            entry.shell_type,
            Some(ShellType::Shell | ShellType::ShellCommand)
        ),
        default_verbosity: entry.default_verbosity,
        code_mode: entry.is_code_mode(),
        responses_lite: entry.use_responses_lite.unwrap_or(false),
        multi_agent_v2: entry.multi_agent_version.as_deref() == Some("v2"),
        tool_output_tokens: entry.truncation_policy.map(|policy| {
            let tokens = match policy.mode {
                TruncationMode::Tokens => policy.limit,
                TruncationMode::Bytes => policy.limit / 4,
            };
            usize::try_from(tokens).unwrap_or(usize::MAX)
        }),
    }
}

/// The usable context window of `model`, when the catalogue or its family knows it.
pub(crate) fn known_context_window(catalog: &ModelCatalog, model: &str) -> Option<u64> {
    family(catalog, model).context_window
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
        let catalog = ModelCatalog::builtin();
        let family = |model: &str| family(&catalog, model);
        let known_context_window = |model: &str| known_context_window(&catalog, model);
        assert_eq!(known_context_window("gpt-5-codex"), Some(272_000));
        assert_eq!(known_context_window("o3-pro"), Some(200_000));
        assert_eq!(known_context_window("mock-model"), None);
        // 95% of the published 500k, as the catalogue says.
        assert_eq!(known_context_window("gpt-6.2-sol"), Some(475_000));
        assert!(family("gpt-6.2-sol").code_mode && family("gpt-6.2-sol").responses_lite);
        assert!(!family("gpt-5.5").code_mode && family("gpt-5.5").verbosity);
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
