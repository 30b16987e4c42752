//! Where MCP servers' OAuth logins are kept: one JSON file in the Keel home
//! (`mcp_credentials.json`, mode 0600), one entry per server name, each remembering the URL it
//! was made for, so a server whose URL changed is not sent another server's token.
//!
//! Tokens are never logged (rmcp's `StoredCredentials` redacts them in `Debug`) and never
//! written anywhere else. The file is rewritten whole, through a temporary file renamed over
//! it, so a crash never leaves half a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// One server's entry in the file.
#[derive(Serialize, Deserialize)]
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

/// Serialises reads and writes of the file within this process (logins and token refreshes
/// of several servers may run at once).
static FILE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The stored login of one server (by name and URL), as rmcp's credential store.
#[derive(Debug, Clone)]
pub(crate) struct ServerCredentialStore {
    file: PathBuf,
    name: String,
    url: String,
}

impl ServerCredentialStore {
    /// The store for server `name` at `url`, kept in `file`.
    pub(crate) fn new(file: &Path, name: &str, url: &str) -> Self {
        Self {
            file: file.to_path_buf(),
            name: name.to_string(),
            url: url.to_string(),
        }
    }

    /// Whether a login with a token is stored for this server at this URL.
    pub(crate) async fn has_token(&self) -> bool {
        matches!(self.load().await, Ok(Some(credentials)) if credentials.token_response.is_some())
    }
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
        let mut entries = read_entries(&self.file).await?;
        Ok(entries
            .remove(&self.name)
            .filter(|entry| entry.url == self.url)
            .map(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let _guard = FILE_LOCK.lock().await;
        let mut entries = read_entries(&self.file).await?;
        // A step-up request stays until the granted scopes cover it.
        let required_scope = entries
            .remove(&self.name)
            .filter(|entry| entry.url == self.url)
            .and_then(|entry| entry.required_scope)
            .filter(|scope| {
                !scope
                    .split_whitespace()
                    .all(|wanted| credentials.granted_scopes.iter().any(|had| had == wanted))
            });
        entries.insert(
            self.name.clone(),
            Entry {
                url: self.url.clone(),
                credentials,
                required_scope,
            },
        );
        write_entries(&self.file, &entries).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        remove_login(&self.file, &self.name).await.map(|_| ())
    }
}

impl ServerCredentialStore {
    /// Records that the server refused a call for want of `scope`; nothing without a login.
    pub(crate) async fn remember_required_scope(&self, scope: &str) -> Result<(), AuthError> {
        let _guard = FILE_LOCK.lock().await;
        let mut entries = read_entries(&self.file).await?;
        match entries.get_mut(&self.name) {
            Some(entry) if entry.url == self.url => {
                entry.required_scope = Some(scope.to_string());
                write_entries(&self.file, &entries).await
            }
            _ => Ok(()),
        }
    }

    /// The scopes a new login should ask for after a step-up request: those granted so far
    /// and those the server asked for; empty when it asked for none.
    pub(crate) async fn step_up_scopes(&self) -> Result<Vec<String>, AuthError> {
        let _guard = FILE_LOCK.lock().await;
        let entries = read_entries(&self.file).await?;
        let Some(entry) = entries
            .get(&self.name)
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

/// Forgets server `name`'s login; `true` if there was one.
pub(crate) async fn remove_login(file: &Path, name: &str) -> Result<bool, AuthError> {
    let _guard = FILE_LOCK.lock().await;
    let mut entries = read_entries(file).await?;
    if entries.remove(name).is_none() {
        return Ok(false);
    }
    write_entries(file, &entries).await?;
    Ok(true)
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
        let store = ServerCredentialStore::new(&file, "docs", "https://mcp.example.com/mcp");
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
