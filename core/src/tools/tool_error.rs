//! Why a tool call gave no output, and what the turn does about it.

/// Why a tool call gave no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The model reads this text as the call's output and the turn goes on: bad arguments, a
    /// failed lookup, a refusal. Most failures belong here.
    #[error("{0}")]
    Respond(String),
    /// The turn was interrupted while the tool ran (the user stopped it, or answered an
    /// approval with abort): the turn stops.
    #[error("interrupted")]
    Interrupted,
    /// Neither the tool nor the turn can go on (state they depend on could no longer be
    /// written, say): the turn stops with this error, which the client sees, and the model
    /// is not asked again.
    #[error("{0}")]
    Fatal(String),
}
