//! The API key `keel login --with-api-key` keeps in the Keel home (`auth.json`, Codex's file
//! and shape), so a person logs in once instead of exporting a variable in every shell.
//!
//! Precedence for providers that take OpenAI's credentials (`requires_openai_auth`, the
//! built-in `openai`): `CODEX_API_KEY`, then this stored key, then the provider's `env_key`
//! variable (`OPENAI_API_KEY`).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file under the Keel home.
pub const AUTH_FILE: &str = "auth.json";

/// A stored API key; its `Debug` never shows it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StoredApiKey(String);

impl StoredApiKey {
    /// The key itself, for the `Authorization` header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The key as `keel login status` shows it: its first 8 and last 5 characters, or only
    /// `***` for a key too short to hide anything that way (Codex's mask).
    pub fn masked(&self) -> String {
        let chars: Vec<char> = self.0.chars().collect();
        if chars.len() <= 13 {
            return "***".to_string();
        }
        let head: String = chars[..8].iter().collect();
        let tail: String = chars[chars.len() - 5..].iter().collect();
        format!("{head}***{tail}")
    }
}

impl std::fmt::Debug for StoredApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoredApiKey(<redacted>)")
    }
}

/// Why the stored key could not be read, written or removed.
#[derive(Debug, thiserror::Error)]
pub enum StoredKeyError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not an `auth.json` Keel or Codex wrote.
    #[error("{path}: not a stored login ({message}); remove it or run `keel login` again")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An empty key was given.
    #[error("No API key provided")]
    Empty,
}

/// The file's contents, in Codex's shape.
#[derive(Debug, Serialize, Deserialize)]
struct AuthFile {
    auth_mode: String,
    #[serde(rename = "OPENAI_API_KEY", default)]
    openai_api_key: Option<String>,
}

/// The key stored in `keel_home`, if any (a login of another kind holds none).
pub fn read_stored_api_key(keel_home: &Path) -> Result<Option<StoredApiKey>, StoredKeyError> {
    let path = keel_home.join(AUTH_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoredKeyError::Io { path, source }),
    };
    let file: AuthFile = serde_json::from_str(&text).map_err(|err| StoredKeyError::Unreadable {
        path: path.clone(),
        message: err.to_string(),
    })?;
    Ok(file
        .openai_api_key
        .map(|key| key.trim().to_string())
        .filter(|key| !key.is_empty())
        .map(StoredApiKey))
}

/// Stores `key` (trimmed) in `keel_home`, readable by this user only (mode 0600 from the
/// moment it exists), replacing any earlier login in one step.
pub fn store_api_key(keel_home: &Path, key: &str) -> Result<StoredApiKey, StoredKeyError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(StoredKeyError::Empty);
    }
    let path = keel_home.join(AUTH_FILE);
    let io = |source| StoredKeyError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(keel_home).map_err(io)?;
    let text = serde_json::to_string_pretty(&AuthFile {
        auth_mode: "apikey".to_string(),
        openai_api_key: Some(key.to_string()),
    })
    .map_err(|err| StoredKeyError::Unreadable {
        path: path.clone(),
        message: err.to_string(),
    })?;
    // `tempfile` creates the file 0600; the rename makes it the login all at once.
    let mut file = tempfile::NamedTempFile::new_in(keel_home).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.as_file().sync_all().map_err(io)?;
    file.persist(&path).map_err(|err| io(err.error))?;
    Ok(StoredApiKey(key.to_string()))
}

/// Removes the stored login; whether there was one.
pub fn remove_stored_api_key(keel_home: &Path) -> Result<bool, StoredKeyError> {
    let path = keel_home.join(AUTH_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(StoredKeyError::Io { path, source }),
    }
}
