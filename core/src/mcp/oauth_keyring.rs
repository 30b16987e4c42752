//! MCP logins in the desktop keyring: the freedesktop Secret Service (GNOME Keyring, KWallet,
//! KeePassXC) on the session D-Bus, for `mcp_oauth_credentials_store = "keyring" | "auto"`.
//!
//! One item per server in the default collection, found by its attributes (`application =
//! keel`, `keel-kind = mcp-oauth`, `keel-mcp-server = NAME`); its secret is the same JSON entry
//! the credentials file keeps for the server. A locked keyring is unlocked the way the desktop
//! does it (its own prompt); without a session bus or a provider the keyring is unavailable.

use std::collections::HashMap;
use std::time::Duration;

/// How long one keyring operation may take, an unlock prompt the user answers included.
const KEYRING_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the keyring could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyringError {
    /// No session bus, or no Secret Service provider on it.
    #[cfg_attr(not(feature = "mcp-keyring"), allow(dead_code))]
    #[error("no keyring answers on the session D-Bus ({0})")]
    Unavailable(String),
    /// This build has no keyring support.
    #[cfg_attr(feature = "mcp-keyring", allow(dead_code))]
    #[error("this build of Keel has no keyring support (feature `mcp-keyring`)")]
    NotBuilt,
    /// The keyring answered but the operation failed (locked and not unlocked, say).
    #[error("the keyring refused: {0}")]
    Failed(String),
    /// It did not answer in time (an unlock prompt left open).
    #[cfg_attr(not(feature = "mcp-keyring"), allow(dead_code))]
    #[error("the keyring did not answer within {}s", KEYRING_TIMEOUT.as_secs())]
    TimedOut,
}

impl KeyringError {
    /// Whether there is no keyring at all (as opposed to one that failed).
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::NotBuilt)
    }
}

const LABEL_PREFIX: &str = "Keel MCP login";

fn attributes(server: &str) -> HashMap<&str, &str> {
    HashMap::from([
        ("application", "keel"),
        ("keel-kind", "mcp-oauth"),
        ("keel-mcp-server", server),
    ])
}

#[cfg(feature = "mcp-keyring")]
mod secret_service_backend {
    use secret_service::{EncryptionType, Error, SecretService};

    use super::{KEYRING_TIMEOUT, KeyringError, LABEL_PREFIX, attributes};

    fn failed(err: Error) -> KeyringError {
        let text = err.to_string();
        // A bus without a provider answers `ServiceUnknown` (no activatable service either).
        let missing_service =
            text.contains("ServiceUnknown") || text.contains("was not provided by any .service");
        match err {
            Error::Unavailable => KeyringError::Unavailable(text),
            Error::Zbus(_) | Error::ZbusFdo(_) if missing_service => {
                KeyringError::Unavailable(text)
            }
            _ => KeyringError::Failed(text),
        }
    }

    async fn within<T>(
        work: impl std::future::Future<Output = Result<T, KeyringError>>,
    ) -> Result<T, KeyringError> {
        tokio::time::timeout(KEYRING_TIMEOUT, work)
            .await
            .map_err(|_| KeyringError::TimedOut)?
    }

    /// A session with the provider; any failure here means there is no keyring to use (no
    /// bus, or no provider on it).
    async fn connect() -> Result<SecretService<'static>, KeyringError> {
        SecretService::connect(EncryptionType::Dh)
            .await
            .map_err(|err| KeyringError::Unavailable(err.to_string()))
    }

    /// Server `server`'s stored secret, if any.
    pub(crate) async fn read(server: &str) -> Result<Option<Vec<u8>>, KeyringError> {
        within(async {
            let service = connect().await?;
            let found = service
                .search_items(attributes(server))
                .await
                .map_err(failed)?;
            if let Some(item) = found.unlocked.first() {
                return item.get_secret().await.map(Some).map_err(failed);
            }
            let Some(item) = found.locked.first() else {
                return Ok(None);
            };
            item.unlock().await.map_err(failed)?;
            item.get_secret().await.map(Some).map_err(failed)
        })
        .await
    }

    /// Stores `secret` as server `server`'s, replacing what was there.
    pub(crate) async fn write(server: &str, secret: &[u8]) -> Result<(), KeyringError> {
        within(async {
            let service = connect().await?;
            let collection = service.get_default_collection().await.map_err(failed)?;
            collection.ensure_unlocked().await.map_err(failed)?;
            collection
                .create_item(
                    &format!("{LABEL_PREFIX}: {server}"),
                    attributes(server),
                    secret,
                    true,
                    "application/json",
                )
                .await
                .map_err(failed)?;
            Ok(())
        })
        .await
    }

    /// Removes server `server`'s secret; `true` if there was one.
    pub(crate) async fn delete(server: &str) -> Result<bool, KeyringError> {
        within(async {
            let service = connect().await?;
            let found = service
                .search_items(attributes(server))
                .await
                .map_err(failed)?;
            let mut any = false;
            for item in found.unlocked.iter().chain(found.locked.iter()) {
                item.delete().await.map_err(failed)?;
                any = true;
            }
            Ok(any)
        })
        .await
    }
}

#[cfg(feature = "mcp-keyring")]
pub(crate) use secret_service_backend::{delete, read, write};

/// Without the feature there is no keyring: every operation says so.
#[cfg(not(feature = "mcp-keyring"))]
pub(crate) async fn read(_server: &str) -> Result<Option<Vec<u8>>, KeyringError> {
    let _ = (attributes, LABEL_PREFIX);
    Err(KeyringError::NotBuilt)
}

/// Without the feature there is no keyring: every operation says so.
#[cfg(not(feature = "mcp-keyring"))]
pub(crate) async fn write(_server: &str, _secret: &[u8]) -> Result<(), KeyringError> {
    Err(KeyringError::NotBuilt)
}

/// Without the feature there is no keyring: every operation says so.
#[cfg(not(feature = "mcp-keyring"))]
pub(crate) async fn delete(_server: &str) -> Result<bool, KeyringError> {
    Err(KeyringError::NotBuilt)
}
