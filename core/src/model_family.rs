//! What Keel knows about model families without being told: the published context window of
//! the models people commonly run. Configuration (`model_context_window`) wins over this table.

/// Context windows in tokens, by model-name prefix; the first match wins.
const CONTEXT_WINDOWS: &[(&str, u64)] = &[
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("codex-mini", 200_000),
];

/// The published context window of `model`, when its family is known.
pub(crate) fn known_context_window(model: &str) -> Option<u64> {
    CONTEXT_WINDOWS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, window)| *window)
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
        assert_eq!(auto_compact_limit(Some(12), Some(272_000)), Some(12));
        assert_eq!(auto_compact_limit(None, Some(200_000)), Some(180_000));
        assert_eq!(auto_compact_limit(None, None), None);
    }
}
