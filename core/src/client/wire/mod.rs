//! The wire APIs Keel's HTTP client speaks, and the one table from the configured name to its
//! [`WireFormat`](super::wire_format::WireFormat).
//!
//! Adding a wire API takes two files: `wire/NAME.rs`, a struct implementing `WireFormat` (its
//! request body, its [`WireDecoder`](super::wire_decoder::WireDecoder), its headers and its
//! [`ProviderCapabilities`](super::ProviderCapabilities)), and here a `mod` line, a variant of
//! [`WireApi`] (its name in `wire_api = "…"`) and its row in [`WireApi::format`]. The provider
//! factory, the stream, the turn's tool choice and remote compaction all follow from the
//! format; the golden tool-spec and request-shape tests show what changed on the wire.

mod chat;
mod responses;
mod text_tool_calls;

use serde::{Deserialize, Serialize};

use super::capabilities::ProviderCapabilities;
use super::wire_format::WireFormat;

/// Which HTTP API a provider speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    /// The OpenAI Responses API (`POST /responses`); the default for a provider that does not
    /// say, as in Codex 0.169.
    #[default]
    Responses,
    /// The Chat Completions API (`POST /chat/completions`), which most local servers and
    /// gateways speak (`wire_api = "chat"`).
    Chat,
}

impl WireApi {
    /// How Keel's HTTP client speaks this wire API.
    pub(super) fn format(self) -> &'static dyn WireFormat {
        match self {
            Self::Responses => &responses::ResponsesFormat,
            Self::Chat => &chat::ChatFormat,
        }
    }

    /// The path of this API's endpoint relative to a provider's base URL.
    pub fn endpoint_path(self) -> &'static str {
        self.format().endpoint_path()
    }

    /// What Keel's own client can send on this wire API beyond plain function tools.
    pub fn capabilities(self) -> ProviderCapabilities {
        self.format().capabilities()
    }
}

impl ProviderCapabilities {
    /// What Keel's own client for `wire_api` can send.
    pub fn of_wire_api(wire_api: WireApi) -> Self {
        wire_api.capabilities()
    }
}
