//! What a user can put into a turn.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One piece of user input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image by URL (including `data:` URLs).
    Image {
        /// Where the image is.
        image_url: String,
    },
    /// An image on the local disk, read and inlined by the engine.
    LocalImage {
        /// The image file.
        path: PathBuf,
    },
    /// A message from another agent of the same tree (a task, a message, a final answer),
    /// which the model sees as Codex's `agent_message` item rather than as the user's words.
    AgentMessage {
        /// The sender's task path (`/root`, `/root/worker`).
        author: String,
        /// The receiver's task path.
        recipient: String,
        /// `NEW_TASK`, `MESSAGE` or `FINAL_ANSWER`.
        message_type: String,
        /// The text.
        payload: String,
    },
}

impl InputItem {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}
