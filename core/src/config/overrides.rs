//! Overrides layered over `config.toml`: `-c key.path=value` arguments, merged into the parsed
//! TOML before it is deserialised, and [`ConfigOverrides`] from servers and the CLI, applied
//! last of all.

use std::path::PathBuf;

use keel_protocol::{AskForApproval, SandboxMode};

use crate::config_error::{ConfigError, Result};

/// Typed overrides from a server request or CLI flags; each `Some` wins over every other source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigOverrides {
    /// The model to use.
    pub model: Option<String>,
    /// The id of the model provider to use.
    pub model_provider: Option<String>,
    /// The `[profiles.<name>]` to apply, instead of the file's `profile`.
    pub config_profile: Option<String>,
    /// The working directory; a relative path is resolved against the process cwd.
    pub cwd: Option<PathBuf>,
    /// The approval policy.
    pub approval_policy: Option<AskForApproval>,
    /// The sandbox mode (`[sandbox_workspace_write]` still supplies its parameters).
    pub sandbox_mode: Option<SandboxMode>,
    /// Replaces the built-in base instructions.
    pub base_instructions: Option<String>,
    /// Extra developer instructions sent with every turn.
    pub developer_instructions: Option<String>,
    /// The sandbox helper to start sandboxed commands with, instead of looking for one
    /// (see [`crate::sandbox::find_sandbox_executable`]).
    pub sandbox_executable: Option<PathBuf>,
}

/// Parses one `-c key.path=value` argument.
///
/// The value is parsed as a TOML value (`2`, `true`, `["/a"]`, `{ x = 1 }`, `"quoted"`); if
/// that fails it is taken as a raw string with surrounding quotes trimmed, so `-c model=o3`
/// means the string `"o3"`. A value that parses as a TOML date/time is kept as a string too,
/// since no Keel key takes a date and `2025-04-01` is far more likely an API version.
pub fn parse_cli_override(raw: &str) -> Result<(String, toml::Value)> {
    let invalid = |reason: &str| ConfigError::InvalidOverride {
        raw: raw.to_string(),
        reason: reason.to_string(),
    };
    let Some((key, value)) = raw.split_once('=') else {
        return Err(invalid("expected key.path=value"));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(invalid("the key is empty"));
    }
    let segments = key_segments(key);
    if segments.iter().any(String::is_empty) {
        return Err(invalid("the key path has an empty segment"));
    }
    let value = parse_toml_value(value).unwrap_or_else(|| {
        let trimmed = value.trim().trim_matches(|c| c == '"' || c == '\'');
        toml::Value::String(trimmed.to_string())
    });
    Ok((key.to_string(), value))
}

/// Parses `text` as a single TOML value; `None` if it is not one (or is a date/time).
fn parse_toml_value(text: &str) -> Option<toml::Value> {
    const SENTINEL: &str = "__keel_override_value__";
    let mut table: toml::Table = toml::from_str(&format!("{SENTINEL} = {text}")).ok()?;
    if table.len() != 1 {
        // Trailing `\nother = 1` smuggled into the value: not a single value.
        return None;
    }
    match table.remove(SENTINEL)? {
        toml::Value::Datetime(_) => None,
        value => Some(value),
    }
}

/// Splits a dotted key path into segments, honouring TOML quoting (`a."b.c".d`); falls back
/// to a plain split on `.` when the path is not a valid TOML key.
pub(crate) fn key_segments(key: &str) -> Vec<String> {
    toml_key_segments(key).unwrap_or_else(|| key.split('.').map(|s| s.trim().to_string()).collect())
}

fn toml_key_segments(key: &str) -> Option<Vec<String>> {
    let mut value = toml::Value::Table(toml::from_str(&format!("{key} = 0")).ok()?);
    let mut segments = Vec::new();
    while let toml::Value::Table(table) = value {
        if table.len() != 1 {
            return None;
        }
        let (segment, inner) = table.into_iter().next()?;
        segments.push(segment);
        value = inner;
    }
    Some(segments)
}

/// Sets `value` at the dotted `key` inside `root`, creating tables along the way; a
/// non-table met on the way is replaced by a table (as Codex does), so the typed
/// deserialisation reports any resulting shape error against the override.
pub(crate) fn apply_cli_override(root: &mut toml::Table, key: &str, value: toml::Value) {
    let segments = key_segments(key);
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut table = root;
    for segment in parents {
        let entry = table
            .entry(segment.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(inner) = entry else {
            // Unreachable: the entry was made a table just above.
            return;
        };
        table = inner;
    }
    table.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(raw: &str) -> (String, toml::Value) {
        parse_cli_override(raw).unwrap()
    }

    #[test]
    fn raw_string_fallback() {
        assert_eq!(parse("model=o3"), ("model".to_string(), "o3".into()));
        assert_eq!(
            parse("model=gpt-4.1"),
            ("model".to_string(), "gpt-4.1".into())
        );
        assert_eq!(parse(" model = 'o3 "), ("model".to_string(), "o3".into()));
        assert_eq!(parse("model="), ("model".to_string(), "".into()));
    }

    #[test]
    fn toml_values() {
        assert_eq!(
            parse("model_providers.mock.request_max_retries=2"),
            (
                "model_providers.mock.request_max_retries".to_string(),
                toml::Value::Integer(2)
            )
        );
        assert_eq!(
            parse("sandbox_workspace_write.network_access=true").1,
            toml::Value::Boolean(true)
        );
        assert_eq!(
            parse(r#"sandbox_workspace_write.writable_roots=["/a", "/b"]"#).1,
            toml::Value::Array(vec!["/a".into(), "/b".into()])
        );
        assert_eq!(parse(r#"model="a=b""#).1, "a=b".into());
        let table = parse(r#"shell_environment_policy.set={ CI = "1" }"#).1;
        assert_eq!(table.get("CI"), Some(&toml::Value::from("1")));
    }

    #[test]
    fn dates_and_smuggled_keys_stay_strings() {
        assert_eq!(parse("x=2025-04-01").1, "2025-04-01".into());
        assert_eq!(parse("x=1\ny = 2").1, "1\ny = 2".into());
    }

    #[test]
    fn rejects_malformed() {
        for (raw, reason) in [
            ("model", "expected key.path=value"),
            ("=o3", "the key is empty"),
            ("a..b=1", "the key path has an empty segment"),
        ] {
            let err = parse_cli_override(raw).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("invalid -c override `{raw}`: {reason}")
            );
        }
    }

    #[test]
    fn key_segments_honour_quotes() {
        assert_eq!(key_segments("a.b.c"), vec!["a", "b", "c"]);
        assert_eq!(
            key_segments(r#"model_providers."my.proxy".base_url"#),
            vec!["model_providers", "my.proxy", "base_url"]
        );
        assert_eq!(key_segments("a b.c"), vec!["a b", "c"]);
    }

    #[test]
    fn apply_creates_and_replaces_tables() {
        let mut root: toml::Table = toml::from_str(
            r#"
            model = "gpt"
            [model_providers.mock]
            name = "Mock"
            "#,
        )
        .unwrap();
        apply_cli_override(
            &mut root,
            "model_providers.mock.stream_max_retries",
            3.into(),
        );
        apply_cli_override(&mut root, "profiles.fast.model", "o4-mini".into());
        apply_cli_override(&mut root, "model.nested", 1.into());
        let expected: toml::Table = toml::from_str(
            r#"
            model = { nested = 1 }
            [model_providers.mock]
            name = "Mock"
            stream_max_retries = 3
            [profiles.fast]
            model = "o4-mini"
            "#,
        )
        .unwrap();
        assert_eq!(root, expected);
    }
}
