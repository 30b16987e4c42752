//! Token accounting reported by the model.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tokens used by one model response, or summed over a conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Completion tokens spent on reasoning.
    pub reasoning_output_tokens: u64,
    /// All tokens.
    pub total_tokens: u64,
}

impl TokenUsage {
    /// Adds another response's usage to this total.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_output_tokens += other.reasoning_output_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// Usage so far in a conversation, as the `token_count` event reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsageInfo {
    /// Sum over the conversation.
    pub total_token_usage: TokenUsage,
    /// The latest response alone.
    pub last_token_usage: TokenUsage,
    /// The model's context window, when known.
    pub model_context_window: Option<u64>,
    /// Sum over the turn in progress (Keel's addition; absent in files that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_token_usage: Option<TokenUsage>,
}
