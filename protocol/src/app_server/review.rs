//! `review/start`: a review of a change as a turn of the thread.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Turn;

/// What a review looks at, as clients name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ReviewTarget {
    /// The working tree: staged, unstaged and untracked files.
    UncommittedChanges,
    /// The current branch against the point where it left `branch`.
    BaseBranch {
        /// The branch the work is compared with.
        branch: String,
    },
    /// The changes one commit introduced.
    Commit {
        /// The commit.
        sha: String,
        /// A label for people (the commit's subject, say).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// Whatever these instructions ask to review.
    Custom {
        /// The reviewer's brief.
        instructions: String,
    },
}

impl From<ReviewTarget> for crate::ReviewTarget {
    fn from(target: ReviewTarget) -> Self {
        match target {
            ReviewTarget::UncommittedChanges => Self::UncommittedChanges,
            ReviewTarget::BaseBranch { branch } => Self::BaseBranch { branch },
            ReviewTarget::Commit { sha, title } => Self::Commit { sha, title },
            ReviewTarget::Custom { instructions } => Self::Custom { instructions },
        }
    }
}

/// Where a review runs: on the thread it names (the only choice in Codex 0.169).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReviewDelivery {
    /// On the thread itself.
    Inline,
}

/// Params of `review/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewStartParams {
    /// The thread the review runs on.
    pub thread_id: String,
    /// What to review.
    pub target: ReviewTarget,
    /// Where the review runs (`inline`).
    #[serde(default)]
    pub delivery: Option<ReviewDelivery>,
}

/// Result of `review/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewStartResponse {
    /// The review's turn (in progress).
    pub turn: Turn,
    /// The thread the review runs on (the one asked for).
    pub review_thread_id: String,
}
