//! The program that drives a conversation (an editor speaking ACP) may offer its own files and
//! terminals. Patches then read and write the files as it holds them (its open buffers,
//! unsaved changes included, so it can show and undo the edit), and the model's one-shot
//! commands run in its terminals, where the user watches them, still under Keel's sandbox.
//! Everything else (deletes and moves, interactive sessions, a remote environment) keeps
//! using Keel's own processes and the disk.
//!
//! An embedder registers them once with
//! [`ConversationManagerBuilder::client_backends`](crate::ConversationManagerBuilder::client_backends);
//! each call names the conversation, and a backend may decline one it does not serve (a
//! sub-agent's).

mod files;
mod terminals;

use std::sync::Arc;

pub use files::ClientFiles;
pub use terminals::{ClientCommand, ClientTerminal, ClientTerminals, TerminalExit, TerminalOutput};

/// Why the client could not do what was asked; the model reads the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ClientBackendError {
    /// What went wrong, as the client said it.
    pub message: String,
}

impl ClientBackendError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// The files and terminals a client offers; empty by default (Keel's own are used).
#[derive(Clone, Default)]
pub struct ClientBackends {
    files: Option<Arc<dyn ClientFiles>>,
    terminals: Option<Arc<dyn ClientTerminals>>,
}

impl std::fmt::Debug for ClientBackends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBackends")
            .field("files", &self.files.is_some())
            .field("terminals", &self.terminals.is_some())
            .finish()
    }
}

impl ClientBackends {
    /// Patches read and write through `files`.
    pub fn with_files(mut self, files: Arc<dyn ClientFiles>) -> Self {
        self.files = Some(files);
        self
    }

    /// One-shot commands run in `terminals`.
    pub fn with_terminals(mut self, terminals: Arc<dyn ClientTerminals>) -> Self {
        self.terminals = Some(terminals);
        self
    }

    /// The files, when offered for `conversation`.
    pub(crate) fn files_for(
        &self,
        conversation: keel_protocol::ConversationId,
    ) -> Option<&Arc<dyn ClientFiles>> {
        self.files
            .as_ref()
            .filter(|files| files.serves(conversation))
    }

    /// The terminals, when offered for `conversation`.
    pub(crate) fn terminals_for(
        &self,
        conversation: keel_protocol::ConversationId,
    ) -> Option<&Arc<dyn ClientTerminals>> {
        self.terminals
            .as_ref()
            .filter(|terminals| terminals.serves(conversation))
    }
}
