//! Why `keel acp` stopped.

/// Why the agent could not serve the editor.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The in-process app-server did not start.
    #[error("cannot start the engine: {0}")]
    Engine(#[from] keel_app_server::InProcessError),
    /// Reading the editor's messages failed.
    #[error("reading from the editor: {0}")]
    Input(#[source] std::io::Error),
}
