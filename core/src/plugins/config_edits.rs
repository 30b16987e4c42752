//! Writing the plugin keys of `config.toml` (`[marketplaces.NAME]`,
//! `[plugins."PLUGIN@MARKETPLACE"]`) through the config writer, so the user's comments stay and
//! a write that would not load is refused.

use std::path::Path;

use serde_json::{Value, json};

use super::{MarketplaceSetting, PluginError, PluginId, read_plugin_settings};
use crate::config::{ConfigEdit, ConfigEnv, MergeStrategy, write_config_edits};

fn quoted(key: &str) -> String {
    format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""))
}

fn write(keel_home: &Path, edits: &[ConfigEdit]) -> Result<(), PluginError> {
    let env = ConfigEnv::from_process().map_err(|err| PluginError::Config(err.to_string()))?;
    write_config_edits(keel_home, edits, None, &env)
        .map_err(|err| PluginError::Config(err.to_string()))?;
    Ok(())
}

/// Records `setting` as `[marketplaces.NAME]`.
pub(crate) fn save_marketplace(
    keel_home: &Path,
    setting: &MarketplaceSetting,
) -> Result<(), PluginError> {
    let mut table = json!({
        "source_type": setting.source_type.as_str(),
        "source": setting.source,
    });
    if let Some(reference) = &setting.ref_name {
        table["ref"] = Value::String(reference.clone());
    }
    if !setting.sparse_paths.is_empty() {
        table["sparse_paths"] = json!(setting.sparse_paths);
    }
    write(
        keel_home,
        &[ConfigEdit {
            key_path: format!("marketplaces.{}", quoted(&setting.name)),
            value: table,
            merge: MergeStrategy::Replace,
        }],
    )
}

/// Removes `[marketplaces.NAME]`.
pub(crate) fn forget_marketplace(keel_home: &Path, name: &str) -> Result<(), PluginError> {
    write(
        keel_home,
        &[ConfigEdit {
            key_path: format!("marketplaces.{}", quoted(name)),
            value: Value::Null,
            merge: MergeStrategy::Replace,
        }],
    )
}

/// Records `[plugins."ID"] enabled = true` (an existing choice to disable it is kept).
pub(crate) fn save_plugin(keel_home: &Path, id: &PluginId) -> Result<(), PluginError> {
    let settings = read_plugin_settings(keel_home)?;
    let enabled = settings
        .plugins
        .get(&id.to_string())
        .copied()
        .unwrap_or(true);
    write(
        keel_home,
        &[ConfigEdit {
            key_path: format!("plugins.{}", quoted(&id.to_string())),
            value: json!({ "enabled": enabled }),
            merge: MergeStrategy::Upsert,
        }],
    )
}

/// Removes `[plugins."ID"]`.
pub(crate) fn forget_plugin(keel_home: &Path, id: &PluginId) -> Result<(), PluginError> {
    write(
        keel_home,
        &[ConfigEdit {
            key_path: format!("plugins.{}", quoted(&id.to_string())),
            value: Value::Null,
            merge: MergeStrategy::Replace,
        }],
    )
}
