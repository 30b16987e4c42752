//! How a run is isolated beyond its policy: the helper's flags, as the Linux side reads them.

/// How a run is isolated beyond its policy (the helper's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunOptions {
    /// The user's own command (`!cmd`): it sees the user's processes and reaches local
    /// sockets; the file system and IP network policy still hold.
    pub(crate) user_command: bool,
    /// Print what isolation the run got on stderr before the command starts.
    pub(crate) report: bool,
}
