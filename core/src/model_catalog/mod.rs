//! The models Keel knows by name: Codex 0.171's catalogue (slugs, windows, efforts, how each
//! is driven) built in, corrected or extended by the user's `model_catalog_json` file. Pickers
//! (`model/list`) list it; requests, compaction and usage read their model's facts from it.
//! A model the catalogue does not name falls back to the family table of name prefixes,
//! so custom providers keep their own models as before.

mod entry;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

pub use entry::{
    ApplyPatchToolType, EffortOption, ModelEntry, ModelUpgrade, ServiceTierOption, ShellType,
    ToolMode, TruncationMode, TruncationPolicy, Visibility,
};

/// The model a run uses when the configuration names none: Codex 0.171's default.
pub const DEFAULT_CATALOG_MODEL: &str = "gpt-6.2-sol";

/// Why a `model_catalog_json` file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelCatalogError {
    /// The file could not be read.
    #[error("cannot read model_catalog_json {}: {source}", path.display())]
    Read {
        /// The configured path.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The file is not a catalogue.
    #[error("model_catalog_json {} is not a model catalogue (`{{\"models\": [...]}}`): {message}", path.display())]
    Parse {
        /// The configured path.
        path: PathBuf,
        /// What is wrong, with its line and column.
        message: String,
    },
}

/// A catalogue file: `{"models": [...]}`.
#[derive(Deserialize)]
struct CatalogFile {
    models: Vec<ModelEntry>,
}

/// The models Keel knows by name, in picker order.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCatalog {
    entries: Vec<ModelEntry>,
}

impl ModelCatalog {
    /// The catalogue built into this release.
    pub fn builtin() -> Arc<ModelCatalog> {
        static BUILTIN: OnceLock<Arc<ModelCatalog>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let file: CatalogFile = serde_json::from_str(include_str!("builtin.json"))
                    .unwrap_or_else(|err| {
                        // A test (`builtin_catalogue_parses`) keeps this unreachable.
                        tracing::error!("the built-in model catalogue does not parse: {err}");
                        CatalogFile { models: Vec::new() }
                    });
                Arc::new(Self::ordered(file.models))
            })
            .clone()
    }

    /// The built-in catalogue with the entries of `path` applied: an entry naming a known
    /// slug corrects the facts it states; any other entry is added.
    pub fn with_file(path: &Path) -> Result<ModelCatalog, ModelCatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelCatalogError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file: CatalogFile =
            serde_json::from_str(&text).map_err(|err| ModelCatalogError::Parse {
                path: path.to_path_buf(),
                message: err.to_string(),
            })?;
        Ok(Self::builtin().corrected_by(file.models))
    }

    /// This catalogue with `corrections` applied (see [`ModelCatalog::with_file`]).
    pub fn corrected_by(&self, corrections: Vec<ModelEntry>) -> ModelCatalog {
        let mut entries = self.entries.clone();
        for correction in corrections {
            match entries
                .iter_mut()
                .find(|entry| entry.slug == correction.slug)
            {
                Some(entry) => *entry = entry.clone().corrected_by(correction),
                None => entries.push(correction),
            }
        }
        Self::ordered(entries)
    }

    fn ordered(mut entries: Vec<ModelEntry>) -> ModelCatalog {
        // Stable: entries without a priority keep their file order, after the others.
        entries.sort_by_key(|entry| entry.priority.unwrap_or(i64::MAX));
        ModelCatalog { entries }
    }

    /// Every entry, listed or hidden, in picker order.
    pub fn entries(&self) -> &[ModelEntry] {
        &self.entries
    }

    /// The effort sent for `model` when `effort` is asked: `ultra` is a client-side level
    /// (deepest reasoning with delegation), sent as `xhigh` to a catalogued model and as
    /// `medium` to any other, as Codex 0.171 sends it; every other level goes as named.
    pub fn wire_effort(
        &self,
        model: &str,
        effort: &keel_protocol::ReasoningEffort,
    ) -> keel_protocol::ReasoningEffort {
        use keel_protocol::ReasoningEffort;
        if *effort != ReasoningEffort::ULTRA {
            return effort.clone();
        }
        match self.find(model) {
            Some(_) => ReasoningEffort::XHIGH,
            None => ReasoningEffort::MEDIUM,
        }
    }

    /// The entry for `model` (a gateway's `vendor/model` name is looked up by its last part).
    pub fn find(&self, model: &str) -> Option<&ModelEntry> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        self.entries
            .iter()
            .find(|entry| entry.slug == model || entry.slug == bare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_protocol::ReasoningEffort;

    #[test]
    fn builtin_catalogue_parses() {
        let file: CatalogFile = serde_json::from_str(include_str!("builtin.json")).unwrap();
        assert_eq!(file.models.len(), 14);
        let catalog = ModelCatalog::builtin();
        assert_eq!(catalog.entries()[0].slug, DEFAULT_CATALOG_MODEL);
        assert_eq!(
            catalog.entries().iter().filter(|e| e.is_listed()).count(),
            11
        );
        let sol = catalog.find("openai/gpt-6.2-sol").unwrap();
        assert!(sol.is_code_mode() && sol.use_responses_lite == Some(true));
        assert_eq!(sol.context_window, Some(500_000));
        let classic = catalog.find("gpt-5.5").unwrap();
        assert!(!classic.is_code_mode());
        let efforts: Vec<_> = sol
            .supported_reasoning_levels
            .iter()
            .flatten()
            .map(|option| option.effort.clone())
            .collect();
        assert!(
            efforts.contains(&ReasoningEffort::MAX) && efforts.contains(&ReasoningEffort::ULTRA)
        );
    }

    #[test]
    fn a_file_corrects_and_adds() {
        let corrections: Vec<ModelEntry> = serde_json::from_value(serde_json::json!([
            {"slug": "gpt-6.2-sol", "context_window": 123, "tool_mode": "classic"},
            {"slug": "house-model", "display_name": "House", "priority": 0}
        ]))
        .unwrap();
        let catalog = ModelCatalog::builtin().corrected_by(corrections);
        let sol = catalog.find("gpt-6.2-sol").unwrap();
        assert_eq!(sol.context_window, Some(123));
        assert!(!sol.is_code_mode());
        assert_eq!(sol.display_name.as_deref(), Some("GPT-6.2-Sol"));
        assert_eq!(catalog.entries()[0].slug, "house-model");
    }
}
