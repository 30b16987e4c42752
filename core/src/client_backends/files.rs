//! Files as the client holds them.

use std::path::Path;

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::ClientBackendError;

/// Files read and written through the client instead of the disk (an editor's buffers), so a
/// patch changes what the user sees, unsaved edits included, and the editor can undo it.
///
/// Keel decides first, as for any patch: it checks the writes against the sandbox (links
/// resolved on disk) and asks for approval; only then are the files written here. A file
/// missing on disk is created through [`Self::write_text_file`]; deletes and the source of a
/// move stay on disk (the client has no such methods).
///
/// ```
/// use std::collections::HashMap;
/// use std::path::{Path, PathBuf};
/// use std::sync::Mutex;
///
/// use futures::future::BoxFuture;
/// use keel_core::{ClientBackendError, ClientFiles};
/// use keel_protocol::ConversationId;
///
/// /// Buffers kept in memory, as a tiny editor would.
/// #[derive(Default)]
/// struct Buffers(Mutex<HashMap<PathBuf, String>>);
///
/// impl ClientFiles for Buffers {
///     fn read_text_file<'a>(
///         &'a self,
///         _conversation: ConversationId,
///         path: &'a Path,
///     ) -> BoxFuture<'a, Result<String, ClientBackendError>> {
///         Box::pin(async move {
///             let open = self.0.lock().map_err(|_| ClientBackendError::new("poisoned"))?;
///             match open.get(path) {
///                 Some(text) => Ok(text.clone()),
///                 None => std::fs::read_to_string(path)
///                     .map_err(|err| ClientBackendError::new(err.to_string())),
///             }
///         })
///     }
///
///     fn write_text_file<'a>(
///         &'a self,
///         _conversation: ConversationId,
///         path: &'a Path,
///         content: &'a str,
///     ) -> BoxFuture<'a, Result<(), ClientBackendError>> {
///         Box::pin(async move {
///             let mut open = self.0.lock().map_err(|_| ClientBackendError::new("poisoned"))?;
///             open.insert(path.to_path_buf(), content.to_string());
///             Ok(())
///         })
///     }
/// }
///
/// let backends = keel_core::ClientBackends::default()
///     .with_files(std::sync::Arc::new(Buffers::default()));
/// let _manager = keel_core::ConversationManager::builder()
///     .client_backends(backends)
///     .build();
/// ```
pub trait ClientFiles: Send + Sync {
    /// Whether this client holds the files of `conversation` (default: every one).
    fn serves(&self, conversation: ConversationId) -> bool {
        let _ = conversation;
        true
    }

    /// The whole text of `path` (absolute), as the client holds it. Only asked for files that
    /// exist on disk.
    fn read_text_file<'a>(
        &'a self,
        conversation: ConversationId,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<String, ClientBackendError>>;

    /// Replaces the text of `path` (absolute), creating the file if absent (Keel has made its
    /// folder by then).
    fn write_text_file<'a>(
        &'a self,
        conversation: ConversationId,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), ClientBackendError>>;
}
