//! `threadSection/*` and `thread/section/move`: named sections a person sorts threads into
//! (the command center of Codex 0.171's clients), with a built-in Pinned section.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// How a client draws a section; both members are always written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionAppearance {
    /// An icon name.
    #[serde(default)]
    pub icon: Option<String>,
    /// A colour name.
    #[serde(default)]
    pub color: Option<String>,
}

/// A section threads can be moved into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSection {
    /// Stays the same when the section is renamed (a UUIDv7).
    pub id: String,
    /// What people see.
    pub name: String,
    /// How clients draw it.
    #[serde(default)]
    pub appearance: Option<ThreadSectionAppearance>,
}

/// Params of `threadSection/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionListParams {
    /// The previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Largest page (every section when absent).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Result of `threadSection/list`: Pinned first, then the others in creation order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionListResponse {
    /// The sections of this page.
    pub data: Vec<ThreadSection>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// Params of `threadSection/create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionCreateParams {
    /// Its name (not empty; names may repeat).
    pub name: String,
    /// How clients draw it.
    #[serde(default)]
    pub appearance: Option<ThreadSectionAppearance>,
}

/// Params of `threadSection/update`: the name and appearance replace the section's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionUpdateParams {
    /// The section.
    pub section_id: String,
    /// Its new name.
    pub name: String,
    /// Its new appearance (`null` or absent clears it).
    #[serde(default)]
    pub appearance: Option<ThreadSectionAppearance>,
}

/// Result of `threadSection/create` and `threadSection/update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionResponse {
    /// The section as stored.
    pub section: ThreadSection,
}

/// Params of `threadSection/delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionDeleteParams {
    /// The section; its threads become unsectioned.
    pub section_id: String,
}

/// Params of `thread/section/move`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionMoveParams {
    /// The thread to move.
    pub thread_id: String,
    /// Where to: a section id, or `null` for no section (the member is required).
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required)]
    pub section_id: Option<String>,
    /// Placed before this thread of the section; at the end when absent.
    #[serde(default)]
    pub before_thread_id: Option<String>,
}

/// A member that must be present but may be `null`.
fn required_nullable<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(deserializer)
}

/// `thread/section/changed`: a thread moved into a section or out of every section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSectionChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its section now (`null`: none).
    #[schemars(required)]
    pub section_id: Option<String>,
}
