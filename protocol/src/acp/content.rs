//! Content blocks: what a prompt holds and what the agent streams back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One piece of content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The bytes, base64.
        data: String,
        /// Its MIME type.
        mime_type: String,
        /// Where it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
    },
    /// Audio, base64 (Keel does not take it).
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The bytes, base64.
        data: String,
        /// Its MIME type.
        mime_type: String,
    },
    /// A reference to a resource (a file) the agent may read.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// Its URI (`file:///…`).
        uri: String,
        /// Its name.
        name: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource's contents, sent by the editor.
    Resource {
        /// The contents.
        resource: EmbeddedResourceContents,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// The contents of an embedded resource: text or base64 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, rename_all = "camelCase")]
pub enum EmbeddedResourceContents {
    /// Text.
    #[serde(rename_all = "camelCase")]
    Text {
        /// Its URI.
        uri: String,
        /// The text.
        text: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// Bytes.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// Its URI.
        uri: String,
        /// The bytes, base64.
        blob: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}
