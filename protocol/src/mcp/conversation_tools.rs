//! The conversation streaming tools, for clients that keep conversations open: create one,
//! send it messages, and stream its events. While nobody streams a conversation its events
//! are buffered and approval requests held; a new stream first gets one `initial_state`
//! notification with the buffered events. `conversationStatus` reports whether a
//! conversation is streamed and what it holds, without attaching a stream.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CallId, ConversationId, Event};

use super::{CodexEventMeta, CodexSessionSettings};

/// Name of the tool that creates a conversation without starting a turn.
pub const CONVERSATION_CREATE_TOOL_NAME: &str = "conversationCreate";
/// Name of the tool that sends a user message to a conversation.
pub const CONVERSATION_SEND_MESSAGE_TOOL_NAME: &str = "conversationSendMessage";
/// Name of the tool that streams a conversation's events until the call is cancelled.
pub const CONVERSATION_STREAM_TOOL_NAME: &str = "conversationStream";
/// Name of the tool that reports a conversation's stream, buffer and held approvals.
pub const CONVERSATION_STATUS_TOOL_NAME: &str = "conversationStatus";

/// Arguments of `conversationCreate`: the same settings as the `codex` tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationCreateArgs {
    /// The session settings.
    #[serde(flatten)]
    pub settings: CodexSessionSettings,
}

/// `structuredContent` of `conversationCreate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationCreateResult {
    /// The new conversation.
    pub conversation_id: ConversationId,
    /// The model it samples.
    pub model: String,
}

/// Arguments of `conversationSendMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSendMessageArgs {
    /// The conversation.
    pub conversation_id: String,
    /// The user message; starts a turn, or joins the running one.
    pub prompt: String,
}

/// `structuredContent` of `conversationSendMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationSendMessageResult {
    /// Always `true`: failures are `isError` results.
    pub ok: bool,
}

/// Arguments of `conversationStream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationStreamArgs {
    /// The conversation to stream.
    pub conversation_id: String,
}

/// Params of `initial_state`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitialStateNotificationParams {
    /// The stream request and conversation.
    #[serde(rename = "_meta")]
    pub meta: CodexEventMeta,
    /// The buffered events.
    pub initial_state: InitialState,
}

/// The events a conversation produced while nobody streamed it, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitialState {
    /// The events.
    pub events: Vec<Event>,
}

/// Arguments of `conversationStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationStatusArgs {
    /// The conversation to report on.
    pub conversation_id: String,
}

/// `structuredContent` of `conversationStatus`: a snapshot taken between two events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationStatusResult {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// Whether a `conversationStream` call is attached (events go out live).
    pub streaming: bool,
    /// Events buffered for the next stream's `initial_state`.
    pub buffered_events: usize,
    /// Approval requests held until a stream attaches, oldest first. Approvals already sent
    /// to the client as elicitations are not listed.
    pub held_approvals: Vec<HeldApproval>,
}

/// An approval request held while nobody streams its conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldApproval {
    /// What needs approving.
    pub kind: HeldApprovalKind,
    /// The tool call asking (`codex_call_id` of the elicitation it becomes).
    pub call_id: CallId,
}

/// The kinds of approval a conversation can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HeldApprovalKind {
    /// A command (`exec_approval_request`).
    Exec,
    /// A patch (`apply_patch_approval_request`).
    Patch,
}
