//! How much of the provider's rate limits is used, from the headers of its responses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One rate-limit window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitWindow {
    /// Percent of the window's allowance used, 0-100.
    pub used_percent: i32,
    /// The window's length in minutes, when the provider says.
    #[serde(default)]
    pub window_duration_mins: Option<i64>,
    /// When the window resets, in Unix seconds, when the provider says.
    #[serde(default)]
    pub resets_at: Option<i64>,
}

/// The provider's rate limits as of its latest response: `primary` is the request limit (or
/// Codex's primary window), `secondary` the token limit (or Codex's secondary window).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitSnapshot {
    /// The primary window.
    #[serde(default)]
    pub primary: Option<RateLimitWindow>,
    /// The secondary window.
    #[serde(default)]
    pub secondary: Option<RateLimitWindow>,
}
