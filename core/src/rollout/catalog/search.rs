//! What a search of the recorded threads asks for.

/// What a search asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSearch {
    /// The text (matched case-insensitively).
    pub term: String,
    /// The archive instead of the live threads.
    pub archived: bool,
    /// Where the previous page ended.
    pub cursor: Option<String>,
    /// Page size.
    pub limit: usize,
}
