//! `thread/metadata/update`: a client corrects what is known of a thread's workspace (its git
//! branch, commit and origin), merged into what was kept before.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// Params of `thread/metadata/update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMetadataUpdateParams {
    /// The thread.
    pub thread_id: String,
    /// Git facts to change (at least one field).
    #[serde(default)]
    pub git_info: Option<ThreadMetadataGitInfoUpdate>,
}

/// Git facts to change: a present member replaces the kept one (`null` clears it), an absent
/// one keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMetadataGitInfoUpdate {
    /// Commit sha.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub sha: Option<Option<String>>,
    /// Branch name.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub branch: Option<Option<String>>,
    /// Remote origin URL.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub origin_url: Option<Option<String>>,
}

impl ThreadMetadataGitInfoUpdate {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.sha.is_none() && self.branch.is_none() && self.origin_url.is_none()
    }
}

/// Keeps "present but `null`" apart from "absent".
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Result of `thread/metadata/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMetadataUpdateResponse {
    /// The thread as it is now (without turns).
    pub thread: super::Thread,
}
