//! Review mode: a turn that reads a change and reports prioritised findings instead of
//! editing code.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a review looks at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
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
        /// The commit (any revision git accepts).
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

/// `Op::Review`'s request, echoed by `entered_review_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewRequest {
    /// What to review.
    pub target: ReviewTarget,
    /// A short description for people ("changes against main"); Keel derives one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_facing_hint: Option<String>,
}

/// Lines of a file a finding points at (1-based, inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewLineRange {
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
}

/// Where a finding is in the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewCodeLocation {
    /// The file, as an absolute path.
    pub absolute_file_path: PathBuf,
    /// The lines concerned.
    pub line_range: ReviewLineRange,
}

/// One problem the reviewer found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewFinding {
    /// A one-line summary.
    pub title: String,
    /// Why it is a problem, and what to do.
    pub body: String,
    /// How sure the reviewer is, from 0 to 1.
    pub confidence_score: f32,
    /// 0 (must fix before merging) to 3 (nice to have).
    pub priority: u8,
    /// Where it is.
    pub code_location: ReviewCodeLocation,
}

/// The reviewer's verdict: what `overall_correctness` says of a patch that should not land.
pub const PATCH_INCORRECT: &str = "patch is incorrect";

/// The reviewer's structured answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewOutput {
    /// The problems found, most important first.
    #[serde(default)]
    pub findings: Vec<ReviewFinding>,
    /// `"patch is correct"` or `"patch is incorrect"`.
    #[serde(default)]
    pub overall_correctness: String,
    /// The verdict's reasons.
    #[serde(default)]
    pub overall_explanation: String,
    /// How sure the reviewer is of the verdict, from 0 to 1.
    #[serde(default)]
    pub overall_confidence_score: f32,
}

impl ReviewOutput {
    /// Whether the reviewer judged the patch unfit to land.
    pub fn is_patch_incorrect(&self) -> bool {
        self.overall_correctness
            .trim()
            .eq_ignore_ascii_case(PATCH_INCORRECT)
    }
}

/// `exited_review_mode`: the review turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExitedReviewModeEvent {
    /// The findings; `None` when the review was interrupted or failed.
    #[serde(default)]
    pub review_output: Option<ReviewOutput>,
}
