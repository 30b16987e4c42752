//! `feedback/save` and `feedback/upload`: a person's report about a session. Keel writes the
//! report to a file the person chose; it has no service to upload to.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `feedback/save`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackSaveParams {
    /// What kind of report (`bug`, `good_result`, ...).
    pub classification: String,
    /// Where to write the report (an absolute path; a zip archive).
    pub save_path: PathBuf,
    /// The person's words.
    #[serde(default)]
    pub reason: Option<String>,
    /// The thread it is about.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Add the thread's record to the report.
    #[serde(default)]
    pub include_logs: bool,
    /// Labels kept with the report.
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
    /// More files to add (absolute paths).
    #[serde(default)]
    pub extra_log_files: Option<Vec<PathBuf>>,
}

/// Result of `feedback/save`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackSaveResponse {
    /// The file written.
    pub saved_path: PathBuf,
    /// The thread it is about (`no-active-thread-<id>` when none was named).
    pub thread_id: String,
    /// A hash of the prompt (none).
    pub prompt_hash: Option<String>,
}

/// Params of `feedback/upload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackUploadParams {
    /// What kind of report.
    pub classification: String,
    /// The person's words.
    #[serde(default)]
    pub reason: Option<String>,
    /// The thread it is about.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Add the thread's record.
    #[serde(default)]
    pub include_logs: bool,
    /// Labels.
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
    /// More files to add.
    #[serde(default)]
    pub extra_log_files: Option<Vec<PathBuf>>,
}
