//! The `codex` and `codex-reply` tools: their arguments, their structured result, and the
//! `codex/event` notification that streams a call's engine events.

use std::path::PathBuf;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{AskForApproval, ConversationId, Event, RequestId, SandboxMode};

/// Name of the tool that starts a conversation.
pub const CODEX_TOOL_NAME: &str = "codex";
/// Name of the tool that continues one.
pub const CODEX_REPLY_TOOL_NAME: &str = "codex-reply";

/// Arguments of the `codex` tool: the first prompt and how to configure the session. Argument
/// names are kebab-case, as Codex clients send them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CodexToolCallParam {
    /// The first user message of the conversation: the task to work on.
    pub prompt: String,
    /// The session settings; each one overrides `config.toml`.
    #[serde(flatten)]
    pub settings: CodexSessionSettings,
}

/// Per-session settings shared by the `codex` tool and `conversationCreate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CodexSessionSettings {
    /// The model to sample instead of the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A `[profiles.<name>]` table of `config.toml` to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Working directory of the session; a relative path is taken from the server's cwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// When to ask before running commands: `untrusted`, `on-failure`, `on-request` or `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "approval_policy_schema")]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox for commands: `read-only`, `workspace-write` or `danger-full-access`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "sandbox_mode_schema")]
    pub sandbox: Option<SandboxMode>,
    /// Configuration overrides by dotted key path (`{"model_reasoning_effort": "high"}`),
    /// applied over `config.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Map<String, Value>>,
    /// Instructions that replace the built-in system instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Extra instructions sent as a developer message with every turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// Instructions for summarising the history when it is compacted, instead of Keel's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_prompt: Option<String>,
}

/// Arguments of the `codex-reply` tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodexToolCallReplyParam {
    /// The conversation to continue, as returned in `structuredContent.threadId`. Optional
    /// only so that clients still sending `conversationId` keep working.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Deprecated name of `threadId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The next user message.
    pub prompt: String,
}

/// `structuredContent` of a successful `codex` or `codex-reply` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodexToolCallResult {
    /// The conversation, for `codex-reply`.
    pub thread_id: ConversationId,
    /// The last agent message of the turn.
    pub content: String,
}

/// Params of `codex/event`: the engine event itself plus where it belongs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CodexEventNotificationParams {
    /// Correlation: the tool call and conversation the event belongs to.
    #[serde(rename = "_meta")]
    pub meta: CodexEventMeta,
    /// The event, flattened: `id` and `msg`.
    #[serde(flatten)]
    pub event: Event,
}

/// `_meta` of `codex/event` and `initial_state`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodexEventMeta {
    /// The `tools/call` request the event is delivered for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// The conversation the event comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<ConversationId>,
    /// The same conversation, under the name the streaming tools use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
}

/// A plain string enum schema, as tool schemas show them to a model.
fn string_enum_schema(values: &[&str]) -> Schema {
    json_schema!({ "type": "string", "enum": values })
}

fn approval_policy_schema(_generator: &mut SchemaGenerator) -> Schema {
    string_enum_schema(&["untrusted", "on-failure", "on-request", "never"])
}

fn sandbox_mode_schema(_generator: &mut SchemaGenerator) -> Schema {
    string_enum_schema(&["read-only", "workspace-write", "danger-full-access"])
}
