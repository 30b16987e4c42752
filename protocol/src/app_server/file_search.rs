//! `fuzzyFileSearch` and its sessions: file and directory names matching what a person types
//! after `@` (Codex 0.169).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `fuzzyFileSearch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchParams {
    /// What was typed.
    pub query: String,
    /// Absolute directories to search.
    pub roots: Vec<String>,
    /// A later search with the same token cancels this one (which then finds nothing).
    #[serde(default)]
    pub cancellation_token: Option<String>,
}

/// Result of `fuzzyFileSearch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FuzzyFileSearchResponse {
    /// The best matches, best first.
    pub files: Vec<FuzzyFileSearchResult>,
}

/// Whether a match is a file or a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FuzzyFileSearchMatchType {
    /// A file (or anything not a directory).
    File,
    /// A directory.
    Directory,
}

/// One match (Codex spells these fields in snake_case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FuzzyFileSearchResult {
    /// The root it was found under.
    pub root: String,
    /// Its path relative to `root`.
    pub path: String,
    /// File or directory.
    pub match_type: FuzzyFileSearchMatchType,
    /// The path's last component.
    pub file_name: String,
    /// Higher is better, within one query.
    pub score: u32,
    /// Character positions of `path` that matched, for highlighting.
    #[serde(default)]
    pub indices: Option<Vec<u32>>,
}

/// Params of `fuzzyFileSearch/sessionStart`: the roots are walked once for the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchSessionStartParams {
    /// The client's name for the session.
    pub session_id: String,
    /// Absolute directories to search.
    pub roots: Vec<String>,
}

/// Params of `fuzzyFileSearch/sessionUpdate`: results follow as notifications.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchSessionUpdateParams {
    /// The session.
    pub session_id: String,
    /// What is typed now.
    pub query: String,
}

/// Params of `fuzzyFileSearch/sessionStop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchSessionStopParams {
    /// The session.
    pub session_id: String,
}

/// Params of `fuzzyFileSearch/sessionUpdated`: matches for a session's query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchSessionUpdatedNotification {
    /// The session.
    pub session_id: String,
    /// The query these files match.
    pub query: String,
    /// The best matches, best first.
    pub files: Vec<FuzzyFileSearchResult>,
}

/// Params of `fuzzyFileSearch/sessionCompleted`: a session's query has its final results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchSessionCompletedNotification {
    /// The session.
    pub session_id: String,
}
