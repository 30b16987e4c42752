//! Where MCP servers' OAuth logins are kept: by default one JSON file in the Keel home
//! (`mcp_credentials.json`, mode 0600), one entry per server name, each remembering the URL it
//! was made for, so a server whose URL changed is not sent another server's token; with
//! `mcp_oauth_credentials_store = "keyring"` the same entries in the desktop keyring, and
//! with `"auto"` there when one answers, else in the file.
//!
//! Tokens are never logged (rmcp's `StoredCredentials` redacts them in `Debug`) and never
//! written anywhere else. The file is rewritten whole, through a temporary file renamed over
//! it, so a crash never leaves half a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use super::oauth_keyring::{self, KeyringError};
use crate::config::{MCP_CREDENTIALS_FILE, McpCredentialsStore};

/// One server's entry in the file (and, as JSON, the secret of its keyring item).
#[derive(Clone, Serialize, Deserialize)]
struct Entry {
    url: String,
    credentials: StoredCredentials,
    /// The scope the server last refused a call for want of (step-up), until a login
    /// grants it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    required_scope: Option<String>,
}

/// The whole file: entries by server name.
type Entries = BTreeMap<String, Entry>;

/// Serialises reads and writes of the logins within this process (logins and token
/// refreshes of several servers may run at once).
static FILE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Where logins are kept: the credentials file, and whether the keyring comes first.
#[derive(Debug, Clone)]
pub(crate) struct CredentialsPlace {
    /// `KEEL_HOME/mcp_credentials.json`.
    pub(crate) file: PathBuf,
    /// `mcp_oauth_credentials_store`.
    pub(crate) store: McpCredentialsStore,
}

/// The stored login of one server (by name and URL), as rmcp's credential store.
#[derive(Debug, Clone)]
pub(crate) struct ServerCredentialStore {
    place: CredentialsPlace,
    name: String,
    url: String,
}

impl ServerCredentialStore {
    /// The store for server `name` at `url`, kept at `place`.
    pub(crate) fn new(place: &CredentialsPlace, name: &str, url: &str) -> Self {
        Self {
            place: place.clone(),
            name: name.to_string(),
            url: url.to_string(),
        }
    }

    /// Whether a login with a token is stored for this server at this URL.
    pub(crate) async fn has_token(&self) -> bool {
        matches!(self.load().await, Ok(Some(credentials)) if credentials.token_response.is_some())
    }

    /// This server's entry, whatever URL it was made for.
    async fn read_entry(&self) -> Result<Option<Entry>, AuthError> {
        read_entry(&self.place, &self.name).await
    }

    /// Replaces this server's entry.
    async fn write_entry(&self, entry: &Entry) -> Result<(), AuthError> {
        match self.place.store {
            McpCredentialsStore::File => {
                write_file_entry(&self.place.file, &self.name, entry).await
            }
            McpCredentialsStore::Keyring => write_keyring_entry(&self.name, entry)
                .await
                .map_err(|err| keyring_required(&err)),
            McpCredentialsStore::Auto => match write_keyring_entry(&self.name, entry).await {
                // A copy left in the file from a time without a keyring would go stale.
                Ok(()) => remove_file_entry(&self.place.file, &self.name)
                    .await
                    .map(|_| ()),
                Err(err) if err.is_unavailable() => {
                    tracing::info!(server = %self.name, %err, "no keyring: the login goes to the credentials file");
                    write_file_entry(&self.place.file, &self.name, entry).await
                }
                Err(err) => Err(keyring_failed(&err)),
            },
        }
    }
}

/// Server `name`'s entry at `place`: for `auto`, the keyring's, else the file's.
async fn read_entry(place: &CredentialsPlace, name: &str) -> Result<Option<Entry>, AuthError> {
    match place.store {
        McpCredentialsStore::File => Ok(read_entries(&place.file).await?.remove(name)),
        McpCredentialsStore::Keyring => read_keyring_entry(name)
            .await
            .map_err(|err| keyring_required(&err)),
        McpCredentialsStore::Auto => match read_keyring_entry(name).await {
            Ok(Some(entry)) => Ok(Some(entry)),
            Ok(None) => Ok(read_entries(&place.file).await?.remove(name)),
            Err(err) if err.is_unavailable() => {
                tracing::debug!(server = name, %err, "no keyring: reading the credentials file");
                Ok(read_entries(&place.file).await?.remove(name))
            }
            Err(err) => Err(keyring_failed(&err)),
        },
    }
}

/// Fails when logins must go to the keyring and none answers, so a login stops before the
/// user signs in rather than after.
pub(crate) async fn check_place(place: &CredentialsPlace, name: &str) -> Result<(), AuthError> {
    if place.store == McpCredentialsStore::Keyring {
        read_keyring_entry(name)
            .await
            .map_err(|err| keyring_required(&err))?;
    }
    Ok(())
}

/// The keyring was asked for (`keyring`) and cannot be used.
fn keyring_required(err: &KeyringError) -> AuthError {
    AuthError::InternalError(format!(
        "mcp_oauth_credentials_store is \"keyring\" but {err}; set it to \"file\" or \"auto\" \
         to keep logins in KEEL_HOME/{MCP_CREDENTIALS_FILE}"
    ))
}

/// The keyring answered but failed.
fn keyring_failed(err: &KeyringError) -> AuthError {
    AuthError::InternalError(format!("cannot use the keyring for MCP logins: {err}"))
}

async fn read_keyring_entry(name: &str) -> Result<Option<Entry>, KeyringError> {
    let Some(secret) = oauth_keyring::read(name).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&secret).map(Some).map_err(|err| {
        KeyringError::Failed(format!("the stored login of `{name}` is not valid: {err}"))
    })
}

async fn write_keyring_entry(name: &str, entry: &Entry) -> Result<(), KeyringError> {
    let secret = serde_json::to_vec(entry)
        .map_err(|err| KeyringError::Failed(format!("cannot encode the login: {err}")))?;
    oauth_keyring::write(name, &secret).await
}

/// Reads the file; a missing file is an empty one.
async fn read_entries(file: &Path) -> Result<Entries, AuthError> {
    match tokio::fs::read(file).await {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| {
            AuthError::InternalError(format!("{} is not valid: {err}", file.display()))
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Entries::new()),
        Err(err) => Err(AuthError::InternalError(format!(
            "cannot read {}: {err}",
            file.display()
        ))),
    }
}

async fn write_file_entry(file: &Path, name: &str, entry: &Entry) -> Result<(), AuthError> {
    let mut entries = read_entries(file).await?;
    entries.insert(name.to_string(), entry.clone());
    write_entries(file, &entries).await
}

/// Removes `name`'s entry from the file; `true` if there was one (the file is left alone
/// when there was none).
async fn remove_file_entry(file: &Path, name: &str) -> Result<bool, AuthError> {
    let mut entries = read_entries(file).await?;
    if entries.remove(name).is_none() {
        return Ok(false);
    }
    write_entries(file, &entries).await?;
    Ok(true)
}

/// Writes the file whole, readable by its owner only.
async fn write_entries(file: &Path, entries: &Entries) -> Result<(), AuthError> {
    let fail = |err: std::io::Error| {
        AuthError::InternalError(format!("cannot write {}: {err}", file.display()))
    };
    let bytes = serde_json::to_vec_pretty(entries)
        .map_err(|err| AuthError::InternalError(format!("cannot encode the logins: {err}")))?;
    let dir = file.parent().unwrap_or(Path::new("."));
    tokio::fs::create_dir_all(dir).await.map_err(fail)?;
    let temporary = file.with_extension("json.tmp");
    // A fresh file, never one found in its place (a leftover, or a link planted to send the
    // tokens elsewhere): remove what is there, then create exclusively.
    match tokio::fs::remove_file(&temporary).await {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(fail(err)),
    }
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true).mode(0o600);
        let opened = options.open(&temporary).map_err(fail)?;
        let mut opened = tokio::fs::File::from_std(opened);
        tokio::io::AsyncWriteExt::write_all(&mut opened, &bytes)
            .await
            .map_err(fail)?;
        opened.sync_all().await.map_err(fail)?;
    }
    tokio::fs::rename(&temporary, file).await.map_err(fail)
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let _guard = FILE_LOCK.lock().await;
        Ok(self
            .read_entry()
            .await?
            .filter(|entry| entry.url == self.url)
            .map(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let _guard = FILE_LOCK.lock().await;
        // A step-up request stays until the granted scopes cover it.
        let required_scope = self
            .read_entry()
            .await?
            .filter(|entry| entry.url == self.url)
            .and_then(|entry| entry.required_scope)
            .filter(|scope| {
                !scope
                    .split_whitespace()
                    .all(|wanted| credentials.granted_scopes.iter().any(|had| had == wanted))
            });
        let entry = Entry {
            url: self.url.clone(),
            credentials,
            required_scope,
        };
        self.write_entry(&entry).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        remove_login(&self.place, &self.name).await.map(|_| ())
    }
}

impl ServerCredentialStore {
    /// Records that the server refused a call for want of `scope`; nothing without a login.
    pub(crate) async fn remember_required_scope(&self, scope: &str) -> Result<(), AuthError> {
        let _guard = FILE_LOCK.lock().await;
        match self.read_entry().await? {
            Some(mut entry) if entry.url == self.url => {
                entry.required_scope = Some(scope.to_string());
                self.write_entry(&entry).await
            }
            _ => Ok(()),
        }
    }

    /// The scopes a new login should ask for after a step-up request: those granted so far
    /// and those the server asked for; empty when it asked for none.
    pub(crate) async fn step_up_scopes(&self) -> Result<Vec<String>, AuthError> {
        let _guard = FILE_LOCK.lock().await;
        let Some(entry) = self
            .read_entry()
            .await?
            .filter(|entry| entry.url == self.url)
        else {
            return Ok(Vec::new());
        };
        let Some(required) = &entry.required_scope else {
            return Ok(Vec::new());
        };
        let mut scopes = entry.credentials.granted_scopes.clone();
        for scope in required.split_whitespace() {
            if !scopes.iter().any(|had| had == scope) {
                scopes.push(scope.to_string());
            }
        }
        Ok(scopes)
    }
}

/// Forgets server `name`'s login wherever it is kept; `true` if there was one.
pub(crate) async fn remove_login(place: &CredentialsPlace, name: &str) -> Result<bool, AuthError> {
    let _guard = FILE_LOCK.lock().await;
    let from_keyring = match place.store {
        McpCredentialsStore::File => false,
        McpCredentialsStore::Keyring => oauth_keyring::delete(name)
            .await
            .map_err(|err| keyring_required(&err))?,
        McpCredentialsStore::Auto => match oauth_keyring::delete(name).await {
            Ok(found) => found,
            Err(err) if err.is_unavailable() => false,
            Err(err) => return Err(keyring_failed(&err)),
        },
    };
    // The file is cleared in every mode: a login made with another setting goes too.
    let from_file = remove_file_entry(&place.file, name).await?;
    Ok(from_keyring || from_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link planted where the temporary file goes does not carry the tokens out: the link
    /// is replaced, its target untouched, and the file is the owner's only.
    #[tokio::test]
    async fn a_planted_link_does_not_receive_the_tokens() -> Result<(), Box<dyn std::error::Error>>
    {
        let home = tempfile::tempdir()?;
        let outside = tempfile::tempdir()?;
        let target = outside.path().join("stolen.json");
        std::fs::write(&target, "untouched")?;
        let file = home.path().join("mcp_credentials.json");
        std::os::unix::fs::symlink(&target, file.with_extension("json.tmp"))?;
        let place = CredentialsPlace {
            file: file.clone(),
            store: McpCredentialsStore::File,
        };
        let store = ServerCredentialStore::new(&place, "docs", "https://mcp.example.com/mcp");
        store
            .save(StoredCredentials::new(
                "client".into(),
                None,
                Vec::new(),
                None,
            ))
            .await?;
        assert_eq!(std::fs::read_to_string(&target)?, "untouched");
        let mode = std::os::unix::fs::MetadataExt::mode(&std::fs::symlink_metadata(&file)?);
        assert_eq!(mode & 0o777, 0o600);
        assert!(std::fs::symlink_metadata(&file)?.file_type().is_file());
        assert_eq!(
            store.load().await?.map(|credentials| credentials.client_id),
            Some("client".to_string())
        );
        Ok(())
    }
}
