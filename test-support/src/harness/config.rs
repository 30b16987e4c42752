//! `config.toml` for a Codex-style engine pointed at the mock.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::mock::DEFAULT_MODEL;

/// Renders the `config.toml` [`write_config`] writes.
///
/// Defaults: `model = "mock-model"`, `model_provider = "mock"`, `approval_policy = "never"`,
/// `sandbox_mode = "danger-full-access"`, and `[model_providers.mock]` with `name`,
/// `base_url = mock_uri`, `wire_api = "responses"`, `request_max_retries = 0`,
/// `stream_max_retries = 0`. Each override is a dotted key path (no quoting, e.g.
/// `model_providers.mock.wire_api`) and a value; it replaces a default or adds a key.
pub fn config_toml<K, V>(
    mock_uri: &str,
    overrides: impl IntoIterator<Item = (K, V)>,
) -> Result<String>
where
    K: AsRef<str>,
    V: Into<toml::Value>,
{
    let mut provider = toml::Table::new();
    provider.insert("name".into(), "mock".into());
    provider.insert("base_url".into(), mock_uri.into());
    provider.insert("wire_api".into(), "responses".into());
    provider.insert("request_max_retries".into(), 0.into());
    provider.insert("stream_max_retries".into(), 0.into());
    let mut providers = toml::Table::new();
    providers.insert("mock".into(), provider.into());

    let mut config = toml::Table::new();
    config.insert("model".into(), DEFAULT_MODEL.into());
    config.insert("model_provider".into(), "mock".into());
    config.insert("approval_policy".into(), "never".into());
    config.insert("sandbox_mode".into(), "danger-full-access".into());
    config.insert("model_providers".into(), providers.into());

    for (key, value) in overrides {
        set_dotted(&mut config, key.as_ref(), value.into())?;
    }
    Ok(toml::to_string(&config)?)
}

/// Writes `home/config.toml` pointing at the mock at `mock_uri`; see [`config_toml`] for the
/// defaults and the override syntax. Returns the file's path.
pub fn write_config<K, V>(
    home: &Path,
    mock_uri: &str,
    overrides: impl IntoIterator<Item = (K, V)>,
) -> Result<PathBuf>
where
    K: AsRef<str>,
    V: Into<toml::Value>,
{
    let text = config_toml(mock_uri, overrides)?;
    let path = home.join("config.toml");
    std::fs::write(&path, text).map_err(|source| Error::WriteConfig {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

fn set_dotted(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<()> {
    let mut parts = key.split('.').peekable();
    let mut current = table;
    let mut walked = String::new();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            current.insert(part.to_owned(), value);
            return Ok(());
        }
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(part);
        let entry = current
            .entry(part.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = match entry {
            toml::Value::Table(next) => next,
            _ => {
                return Err(Error::ConfigOverride {
                    key: key.to_owned(),
                    at: walked,
                });
            }
        };
    }
    Ok(())
}
