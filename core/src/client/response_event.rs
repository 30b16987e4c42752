//! The one stream of events both wire APIs are mapped to.

use keel_protocol::TokenUsage;

use crate::models::ResponseItem;

/// Something the model produced while streaming one response.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseEvent {
    /// The provider accepted the request and started the response.
    Created,
    /// A piece of assistant text.
    OutputTextDelta(String),
    /// A piece of reasoning summary text.
    ReasoningSummaryDelta(String),
    /// A new part of the reasoning summary starts (a new section of what the model thinks).
    ReasoningSummaryPartAdded {
        /// Its position among the item's summary parts.
        summary_index: u32,
    },
    /// A finished output item (message, reasoning, tool call).
    OutputItemDone(ResponseItem),
    /// The response is complete.
    Completed {
        /// The provider's id for the response.
        response_id: String,
        /// Tokens used, when reported.
        token_usage: Option<TokenUsage>,
    },
}

impl ResponseEvent {
    /// The Responses API's name for the server-sent event this came from, as telemetry's
    /// `codex.sse_event` reports it (`None` for the completion, reported with its tokens).
    pub fn sse_kind(&self) -> Option<&'static str> {
        match self {
            Self::Created => Some("response.created"),
            Self::OutputTextDelta(_) => Some("response.output_text.delta"),
            Self::ReasoningSummaryDelta(_) => Some("response.reasoning_summary_text.delta"),
            Self::ReasoningSummaryPartAdded { .. } => Some("response.reasoning_summary_part.added"),
            Self::OutputItemDone(_) => Some("response.output_item.done"),
            Self::Completed { .. } => None,
        }
    }
}
