//! Conversation items as the Responses API names them. History, prompts and rollout files all
//! hold these, so what the model saw can be replayed exactly.

use serde::{Deserialize, Serialize};

/// One item of model input or output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseItem {
    /// A message from the user, the assistant or the developer.
    Message {
        /// Provider-assigned id, when the model produced it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// `user`, `assistant`, `developer` or `system`.
        role: String,
        /// The message's parts.
        content: Vec<ContentItem>,
    },
    /// The model's reasoning, as a summary.
    Reasoning {
        /// Provider-assigned id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Summary parts.
        #[serde(default)]
        summary: Vec<ReasoningSummary>,
        /// Opaque reasoning state the provider may want back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// A call of a JSON-argument function tool.
    FunctionCall {
        /// Provider-assigned id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The namespace the tool was offered in (code mode's `clock`, say), when not the
        /// top level.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// The arguments as a JSON string.
        arguments: String,
        /// Pairs the call with its output.
        call_id: String,
    },
    /// The result of a function call, sent back to the model.
    FunctionCallOutput {
        /// The call this answers.
        call_id: String,
        /// What the tool returned.
        output: CallOutput,
    },
    /// A call of a freeform (custom) tool such as `apply_patch`.
    CustomToolCall {
        /// Provider-assigned id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Pairs the call with its output.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The namespace the tool was offered in, when not the top level.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// The raw input text.
        input: String,
    },
    /// The result of a custom tool call.
    CustomToolCallOutput {
        /// The call this answers.
        call_id: String,
        /// What the tool returned.
        output: CallOutput,
    },
    /// The provider's opaque summary of the conversation so far, from remote compaction:
    /// sent back as it came, in place of the history it replaced.
    #[serde(alias = "compaction_summary")]
    Compaction {
        /// Provider-assigned id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The summary, readable by the provider only.
        encrypted_content: String,
    },
    /// Asks the provider to compact everything before it (the last input item of a remote
    /// compaction request; never kept in history).
    CompactionTrigger,
    /// A message between two agents of one tree (a task, a message, a final answer), as
    /// Codex 0.171 sends it: a header naming the sender and the text.
    AgentMessage {
        /// Keel-assigned id (`amsg_<uuid>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The sender's task path.
        author: String,
        /// The receiver's task path.
        recipient: String,
        /// The header, then the text (in an `encrypted_content` part for tasks and messages,
        /// inline for final answers).
        content: Vec<AgentMessagePart>,
    },
    /// An item type Keel does not use; kept out of history.
    #[serde(other)]
    Other,
}

/// One part of an [`ResponseItem::AgentMessage`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMessagePart {
    /// Text the model reads as it is.
    InputText {
        /// The text.
        text: String,
    },
    /// Text carried in Codex's `encrypted_content` part (Keel sends it as written).
    EncryptedContent {
        /// The text.
        encrypted_content: String,
    },
}

impl ResponseItem {
    /// A message from agent `author` to agent `recipient` of kind `message_type`
    /// (`NEW_TASK`, `MESSAGE`, `FINAL_ANSWER`), in Codex's layout.
    pub fn agent_message(message_type: &str, author: &str, recipient: &str, payload: &str) -> Self {
        let header = format!(
            "Message Type: {message_type}\nTask name: {recipient}\nSender: {author}\nPayload:\n"
        );
        let content = if message_type == "FINAL_ANSWER" {
            vec![AgentMessagePart::InputText {
                text: format!("{header}{payload}"),
            }]
        } else {
            vec![
                AgentMessagePart::InputText { text: header },
                AgentMessagePart::EncryptedContent {
                    encrypted_content: payload.to_string(),
                },
            ]
        };
        Self::AgentMessage {
            id: Some(format!("amsg_{}", uuid::Uuid::now_v7())),
            author: author.to_string(),
            recipient: recipient.to_string(),
            content,
        }
    }

    /// An agent message's whole text (header and payload), for a wire without the item.
    pub fn agent_message_text(&self) -> Option<String> {
        match self {
            Self::AgentMessage { content, .. } => Some(
                content
                    .iter()
                    .map(|part| match part {
                        AgentMessagePart::InputText { text } => text.as_str(),
                        AgentMessagePart::EncryptedContent { encrypted_content } => {
                            encrypted_content.as_str()
                        }
                    })
                    .collect(),
            ),
            _ => None,
        }
    }

    /// A user message with one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::Message {
            id: None,
            role: "user".to_string(),
            content: vec![ContentItem::InputText { text: text.into() }],
        }
    }

    /// A developer (or system) message with one text part.
    pub fn developer_text(text: impl Into<String>) -> Self {
        Self::Message {
            id: None,
            role: "developer".to_string(),
            content: vec![ContentItem::InputText { text: text.into() }],
        }
    }

    /// The call id of a tool call, if this is one.
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            Self::FunctionCall { call_id, .. } | Self::CustomToolCall { call_id, .. } => {
                Some(call_id)
            }
            _ => None,
        }
    }

    /// The call id answered by a tool output, if this is one.
    pub fn tool_output_call_id(&self) -> Option<&str> {
        match self {
            Self::FunctionCallOutput { call_id, .. }
            | Self::CustomToolCallOutput { call_id, .. } => Some(call_id),
            _ => None,
        }
    }

    /// The text of an assistant message, parts joined.
    pub fn assistant_text(&self) -> Option<String> {
        match self {
            Self::Message { role, content, .. } if role == "assistant" => Some(
                content
                    .iter()
                    .filter_map(ContentItem::text)
                    .collect::<Vec<_>>()
                    .join(""),
            ),
            _ => None,
        }
    }
}

/// What a tool returned to the model: text, or parts (text and images) as code mode's `exec`
/// returns them. Sent as a string or as an array of input parts, as the Responses API takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallOutput {
    /// Text.
    Text(String),
    /// Parts: `input_text` and `input_image`.
    Parts(Vec<ContentItem>),
}

impl CallOutput {
    /// The text of the output, parts joined (images left out).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Text(text) => std::borrow::Cow::Borrowed(text),
            Self::Parts(parts) => std::borrow::Cow::Owned(
                parts
                    .iter()
                    .filter_map(ContentItem::text)
                    .collect::<Vec<_>>()
                    .join(""),
            ),
        }
    }
}

impl From<String> for CallOutput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for CallOutput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

impl PartialEq<str> for CallOutput {
    fn eq(&self, other: &str) -> bool {
        matches!(self, Self::Text(text) if text == other)
    }
}

impl PartialEq<&str> for CallOutput {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentItem {
    /// Text the user or developer wrote.
    InputText {
        /// The text.
        text: String,
    },
    /// An image given to the model.
    InputImage {
        /// URL or `data:` URL.
        image_url: String,
    },
    /// Text the model wrote.
    OutputText {
        /// The text.
        text: String,
    },
    /// The model declined to answer, saying why.
    Refusal {
        /// What it said.
        refusal: String,
    },
}

impl ContentItem {
    /// The part's text, if it is text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::InputText { text } | Self::OutputText { text } => Some(text),
            Self::Refusal { refusal } => Some(refusal),
            Self::InputImage { .. } => None,
        }
    }
}

/// One part of a reasoning summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningSummary {
    /// Summary text.
    SummaryText {
        /// The text.
        text: String,
    },
}

/// Opens the summary message, so the next model knows what it is reading.
pub(crate) const SUMMARY_PREFIX: &str = "This conversation was compacted to fit the context window. \
    Another model worked on the task before you and left this hand-off summary of its work; \
    continue from it:";
/// The history item carrying a summary.
pub(crate) fn compacted_summary_item(summary: &str) -> ResponseItem {
    ResponseItem::user_text(format!("{SUMMARY_PREFIX}\n\n{summary}"))
}

/// An output saying `reason` for every tool call in `history` that has none, so the next
/// request is one the Responses API accepts (every call answered) and the model knows the
/// call did not complete.
pub(crate) fn outputs_for_unanswered_calls(
    history: &[ResponseItem],
    reason: &str,
) -> Vec<ResponseItem> {
    let answered: std::collections::HashSet<&str> = history
        .iter()
        .filter_map(ResponseItem::tool_output_call_id)
        .collect();
    history
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCall { call_id, .. } if !answered.contains(call_id.as_str()) => {
                Some(ResponseItem::FunctionCallOutput {
                    call_id: call_id.clone(),
                    output: reason.into(),
                })
            }
            ResponseItem::CustomToolCall { call_id, .. }
                if !answered.contains(call_id.as_str()) =>
            {
                Some(ResponseItem::CustomToolCallOutput {
                    call_id: call_id.clone(),
                    output: reason.into(),
                })
            }
            _ => None,
        })
        .collect()
}

/// An item a client may add to a conversation's history: a message, a function or custom
/// tool call, or the output of one. Anything else is refused with the reason.
pub fn injectable_item(value: serde_json::Value) -> Result<ResponseItem, String> {
    let kind = value
        .get("type")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string);
    let item: ResponseItem =
        serde_json::from_value(value).map_err(|err| format!("not a Responses API item: {err}"))?;
    match item {
        ResponseItem::Message { .. }
        | ResponseItem::FunctionCall { .. }
        | ResponseItem::FunctionCallOutput { .. }
        | ResponseItem::CustomToolCall { .. }
        | ResponseItem::CustomToolCallOutput { .. }
        | ResponseItem::AgentMessage { .. } => Ok(item),
        _ => Err(format!(
            "items of type `{}` cannot be added; use message, function_call, \
             function_call_output, custom_tool_call, custom_tool_call_output or agent_message",
            kind.unwrap_or_default()
        )),
    }
}
