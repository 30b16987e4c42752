//! Whether a conversation's remote environment is connected, for clients that show it (the
//! app-server's `thread/environment/connected` and `disconnected`).

/// The connection to the exec-server a conversation's commands run on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvironmentLink {
    /// No connection yet (it is made by the first command, patch or file read), or the
    /// commands run on this host.
    NotConnected,
    /// Connected: commands, patches and reads go to the exec-server.
    Connected,
    /// The connection was lost; the next command, patch or read connects again.
    Disconnected {
        /// What ended it.
        reason: String,
    },
}
