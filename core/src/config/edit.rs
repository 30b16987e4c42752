//! Writes to `$KEEL_HOME/config.toml` on a client's behalf (the app-server's `config/*Write`
//! methods): each edit sets, merges or removes one dotted key, the user's comments and layout
//! are kept, the result must load as a valid configuration before it replaces the file, and a
//! version (the SHA-256 of the file) lets a client refuse to overwrite a change it has not seen.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, TableLike};

use super::{CONFIG_FILE_NAME, Config, ConfigEnv, ConfigError, ConfigOverrides, ConfigWarning};

/// How an edit combines with the value already at its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeStrategy {
    /// The new value takes the key's place entirely.
    Replace,
    /// A table is merged key by key into the table already there; anything else replaces.
    Upsert,
}

/// One change to `config.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigEdit {
    /// The dotted key path (`model`, `model_providers.mock.base_url`, `a."dotted.name".b`).
    pub key_path: String,
    /// The new value; `null` removes the key.
    pub value: serde_json::Value,
    /// How it combines with what is there.
    pub merge: MergeStrategy,
}

/// What a successful write left on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWritten {
    /// The file written.
    pub path: PathBuf,
    /// Its new version.
    pub version: String,
}

/// Why a write was refused; the file is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum ConfigWriteError {
    /// The file changed since the client read the version it expected.
    #[error(
        "{}: the file is at version {actual}, not the expected {expected}; read it again",
        path.display()
    )]
    VersionConflict {
        /// The config file.
        path: PathBuf,
        /// The version the client expected.
        expected: String,
        /// The version on disk.
        actual: String,
    },
    /// A key path that cannot be parsed or does not lead to a table.
    #[error("key path `{key_path}`: {message}")]
    InvalidKeyPath {
        /// The key path as given.
        key_path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A value TOML cannot hold.
    #[error("key path `{key_path}`: {message}")]
    InvalidValue {
        /// The key path as given.
        key_path: String,
        /// What is wrong with the value.
        message: String,
    },
    /// The edited file would not load.
    #[error("the edit would make the configuration invalid: {0}")]
    Invalid(#[source] Box<ConfigError>),
    /// An edit names a key neither Keel nor Codex reads (most likely a typo).
    #[error("{0}")]
    UnknownKey(ConfigWarning),
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl ConfigWriteError {
    /// A stable name for the kind of failure, for clients that branch on it.
    pub fn code(&self) -> &'static str {
        match self {
            Self::VersionConflict { .. } => "configVersionConflict",
            Self::InvalidKeyPath { .. }
            | Self::InvalidValue { .. }
            | Self::Invalid(_)
            | Self::UnknownKey(_) => "configValidationError",
            Self::Io { .. } => "configIoError",
        }
    }
}

/// The version of a config file's contents (an absent file has the version of empty text).
pub fn config_version(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut version = String::with_capacity(7 + 64);
    version.push_str("sha256:");
    for byte in digest.iter() {
        let _ = write!(version, "{byte:02x}");
    }
    version
}

/// Applies `edits` to `$keel_home/config.toml` in order, as one change: the file is replaced
/// only if the result loads as a valid configuration and names no unknown key.
pub fn write_config_edits(
    keel_home: &Path,
    edits: &[ConfigEdit],
    expected_version: Option<&str>,
    env: &ConfigEnv,
) -> Result<ConfigWritten, ConfigWriteError> {
    let path = keel_home.join(CONFIG_FILE_NAME);
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigWriteError::Io { path, source }),
    };
    let actual = config_version(&current);
    if let Some(expected) = expected_version
        && expected != actual
    {
        return Err(ConfigWriteError::VersionConflict {
            path,
            expected: expected.to_string(),
            actual,
        });
    }
    // No edit (a client asking the server to reload the file): nothing is written.
    if edits.is_empty() {
        return Ok(ConfigWritten {
            path,
            version: actual,
        });
    }
    let mut document: DocumentMut = match current.parse() {
        Ok(document) => document,
        // The loader's error names the line and column of the problem.
        Err(_) => {
            return Err(ConfigWriteError::Invalid(Box::new(
                Config::load_from_toml_str(
                    &current,
                    keel_home,
                    Vec::new(),
                    ConfigOverrides::default(),
                    env,
                )
                .err()
                .unwrap_or(ConfigError::Read {
                    path: path.clone(),
                    source: io::Error::other("the file is not valid TOML"),
                }),
            )));
        }
    };
    let mut edited = Vec::with_capacity(edits.len());
    for edit in edits {
        let keys = parse_key_path(&edit.key_path)?;
        apply(&mut document, edit, &keys)?;
        edited.push(keys.join("."));
    }
    let text = document.to_string();
    let config = Config::load_from_toml_str(
        &text,
        keel_home,
        Vec::new(),
        ConfigOverrides::default(),
        env,
    )
    .map_err(|err| ConfigWriteError::Invalid(Box::new(err)))?;
    if let Some(warning) = config.warnings.into_iter().find(|warning| {
        edited.iter().any(|key| {
            warning.key == *key
                || warning.key.starts_with(&format!("{key}."))
                || key.starts_with(&format!("{}.", warning.key))
        })
    }) {
        return Err(ConfigWriteError::UnknownKey(warning));
    }
    replace_file(keel_home, &path, &text)?;
    Ok(ConfigWritten {
        path,
        version: config_version(&text),
    })
}

/// Splits a dotted key path; a segment in double quotes may hold dots.
fn parse_key_path(key_path: &str) -> Result<Vec<String>, ConfigWriteError> {
    let invalid = |message: &str| ConfigWriteError::InvalidKeyPath {
        key_path: key_path.to_string(),
        message: message.to_string(),
    };
    let mut keys = Vec::new();
    let mut chars = key_path.chars().peekable();
    loop {
        let mut key = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) => key.push(c),
                    None => return Err(invalid("a quoted key is not closed")),
                }
            }
            if !matches!(chars.peek(), None | Some('.')) {
                return Err(invalid("a quoted key must be followed by `.` or the end"));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                key.push(c);
                chars.next();
            }
            if key.trim().is_empty() {
                return Err(invalid("it has an empty key"));
            }
        }
        keys.push(key);
        match chars.next() {
            None => return Ok(keys),
            Some(_dot) => {}
        }
    }
}

fn apply(
    document: &mut DocumentMut,
    edit: &ConfigEdit,
    keys: &[String],
) -> Result<(), ConfigWriteError> {
    let Some((last, parents)) = keys.split_last() else {
        return Err(ConfigWriteError::InvalidKeyPath {
            key_path: edit.key_path.clone(),
            message: "it is empty".into(),
        });
    };
    let mut table: &mut dyn TableLike = document.as_table_mut();
    for (depth, key) in parents.iter().enumerate() {
        if table.get(key).is_none() {
            if edit.value.is_null() {
                // Nothing to remove below a table that does not exist.
                return Ok(());
            }
            let mut new = toml_edit::Table::new();
            new.set_implicit(true);
            table.insert(key, Item::Table(new));
        }
        let item = table.get_mut(key).ok_or_else(|| ConfigWriteError::Io {
            path: PathBuf::from(CONFIG_FILE_NAME),
            source: io::Error::other("a table vanished while being edited"),
        })?;
        table = item
            .as_table_like_mut()
            .ok_or_else(|| ConfigWriteError::InvalidKeyPath {
                key_path: edit.key_path.clone(),
                message: format!(
                    "`{}` holds a value, not a table",
                    parents[..=depth].join(".")
                ),
            })?;
    }
    if edit.value.is_null() {
        table.remove(last);
        return Ok(());
    }
    let new = json_to_item(&edit.key_path, &edit.value)?;
    match (edit.merge, table.get_mut(last)) {
        (MergeStrategy::Upsert, Some(existing))
            if existing.is_table_like() && new.is_table_like() =>
        {
            merge_into(existing, new);
        }
        (_, Some(existing)) => {
            // Assigned in place so the key's comments stay; a value keeps its trailing comment,
            // a table the comments above its header and its place in the file.
            let decor = existing.as_value().map(|value| value.decor().clone());
            let header = existing
                .as_table()
                .map(|table| (table.decor().clone(), table.position()));
            *existing = new;
            if let (Some(decor), Some(value)) = (decor, existing.as_value_mut()) {
                *value.decor_mut() = decor;
            }
            if let (Some((decor, position)), Some(table)) = (header, existing.as_table_mut()) {
                *table.decor_mut() = decor;
                table.set_position(position);
            }
        }
        (_, None) => {
            table.insert(last, new);
        }
    }
    Ok(())
}

/// Merges table `new` into table `existing`, key by key, recursing into tables on both sides.
fn merge_into(existing: &mut Item, new: Item) {
    let (Some(target), Some(source)) = (existing.as_table_like_mut(), new.as_table_like()) else {
        return;
    };
    for (key, value) in source.iter() {
        match target.get_mut(key) {
            Some(old) if old.is_table_like() && value.is_table_like() => {
                merge_into(old, value.clone());
            }
            _ => {
                target.insert(key, value.clone());
            }
        }
    }
}

fn json_to_item(key_path: &str, value: &serde_json::Value) -> Result<Item, ConfigWriteError> {
    use serde_json::Value as J;
    Ok(match value {
        J::Object(map) => {
            let mut table = toml_edit::Table::new();
            for (key, value) in map {
                if value.is_null() {
                    continue;
                }
                table.insert(key, json_to_item(key_path, value)?);
            }
            Item::Table(table)
        }
        other => Item::Value(json_to_value(key_path, other)?),
    })
}

fn json_to_value(
    key_path: &str,
    value: &serde_json::Value,
) -> Result<toml_edit::Value, ConfigWriteError> {
    use serde_json::Value as J;
    let invalid = |message: &str| ConfigWriteError::InvalidValue {
        key_path: key_path.to_string(),
        message: message.to_string(),
    };
    Ok(match value {
        J::Null => return Err(invalid("TOML has no null inside arrays or tables")),
        J::Bool(b) => (*b).into(),
        J::Number(n) => match (n.as_i64(), n.is_u64(), n.as_f64()) {
            (Some(i), _, _) => i.into(),
            (None, true, _) => return Err(invalid("the integer is too large for TOML")),
            (None, false, Some(f)) => f.into(),
            (None, false, None) => return Err(invalid("the number does not fit TOML")),
        },
        J::String(s) => s.as_str().into(),
        J::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(json_to_value(key_path, item)?);
            }
            toml_edit::Value::Array(array)
        }
        J::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, value) in map {
                if value.is_null() {
                    continue;
                }
                table.insert(key, json_to_value(key_path, value)?);
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

/// Replaces the file through a temporary file in the same directory as the real file (a
/// symlinked `config.toml` stays a symlink), with the old file's permissions, synced before it
/// takes the old one's place, so a reader never sees half of it.
fn replace_file(keel_home: &Path, path: &Path, text: &str) -> Result<(), ConfigWriteError> {
    use std::io::Write as _;
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConfigWriteError::Io { path, source }
    };
    std::fs::create_dir_all(keel_home).map_err(io_error(keel_home))?;
    let target = match std::fs::canonicalize(path) {
        Ok(target) => target,
        Err(err) if err.kind() == io::ErrorKind::NotFound => path.to_path_buf(),
        Err(source) => {
            return Err(ConfigWriteError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let directory = target.parent().unwrap_or(keel_home);
    let temporary = directory.join(format!(
        ".{CONFIG_FILE_NAME}.{}.{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let written = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        if let Ok(old) = std::fs::metadata(&target) {
            file.set_permissions(old.permissions())?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, &target)
    })();
    written.map_err(|source| {
        let _ = std::fs::remove_file(&temporary);
        ConfigWriteError::Io {
            path: target.clone(),
            source,
        }
    })
}
