//! The tool catalogue (`tools/list`) and `tools/call` dispatch. Input and output schemas are
//! generated from the argument types, so the listing cannot drift from what calls accept.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ListToolsResult, Tool};

use keel_protocol::mcp::{
    CODEX_REPLY_TOOL_NAME, CODEX_TOOL_NAME, CONVERSATION_CREATE_TOOL_NAME,
    CONVERSATION_SEND_MESSAGE_TOOL_NAME, CONVERSATION_STATUS_TOOL_NAME,
    CONVERSATION_STREAM_TOOL_NAME, CodexToolCallParam, CodexToolCallReplyParam,
    CodexToolCallResult,
};
use keel_protocol::{INVALID_PARAMS, JsonRpcErrorObject, RequestId};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::codex_tool;
use crate::context::ServerContext;
use crate::streaming;

/// The JSON Schema of `T` as a tool schema: self-contained (no `$defs`), optional members
/// without `null`, and no `$schema` or `title` noise.
pub fn tool_schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.inline_subschemas = true;
        settings.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    strip_null(&mut schema);
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.remove("description");
    }
    schema
}

/// Turns `"type": ["string", "null"]` into `"type": "string"` throughout: an optional member
/// is one that may be left out, which `required` already says, and many clients (and models)
/// handle single types best.
fn strip_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|ty| ty != "null");
                if types.len() == 1 {
                    let single = types.remove(0);
                    map.insert("type".to_string(), single);
                }
            }
            map.values_mut().for_each(strip_null);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null),
        _ => {}
    }
}

/// The tools Keel lists: `codex` and `codex-reply`. The conversation streaming tools are
/// callable but not listed, as they are meant for clients built for them, not for models.
pub fn list_tools() -> ListToolsResult {
    let output_schema = Arc::new(schema_object(tool_schema::<CodexToolCallResult>()));
    let mut codex = Tool::new(
        CODEX_TOOL_NAME,
        "Start a Keel coding-agent session on a task. Keel runs shell commands and edits files \
         under the chosen approval policy and sandbox, streams its progress as codex/event \
         notifications, and returns its final message with the thread id for codex-reply.",
        schema_object(tool_schema::<CodexToolCallParam>()),
    );
    codex.title = Some("Keel".to_string());
    codex.output_schema = Some(output_schema.clone());
    let mut reply = Tool::new(
        CODEX_REPLY_TOOL_NAME,
        "Send a follow-up prompt to a Keel session started by the codex tool, identified by \
         its thread id; returns the session's next final message.",
        schema_object(tool_schema::<CodexToolCallReplyParam>()),
    );
    reply.title = Some("Keel Reply".to_string());
    reply.output_schema = Some(output_schema);
    let mut listed = ListToolsResult::with_all_items(vec![codex, reply]);
    // `resultType` belongs to a newer revision than Keel negotiates; left off the wire.
    listed.result_type = None;
    listed
}

/// A generated schema as the JSON object rmcp's `Tool` holds (a schema is always one).
fn schema_object(schema: Value) -> serde_json::Map<String, Value> {
    match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// A `tools/call` whose name and arguments have been checked, ready to run in a task.
pub(crate) enum ToolCall {
    Codex(CodexToolCallParam),
    CodexReply(CodexToolCallReplyParam),
    ConversationCreate(keel_protocol::mcp::ConversationCreateArgs),
    ConversationSendMessage(keel_protocol::mcp::ConversationSendMessageArgs),
    ConversationStream(keel_protocol::mcp::ConversationStreamArgs),
    ConversationStatus(keel_protocol::mcp::ConversationStatusArgs),
}

fn parse_args<T: DeserializeOwned>(
    name: &str,
    arguments: Option<Value>,
) -> Result<T, JsonRpcErrorObject> {
    let arguments = arguments.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    serde_json::from_value(arguments).map_err(|err| {
        JsonRpcErrorObject::new(
            INVALID_PARAMS,
            format!("invalid arguments for tool `{name}`: {err}"),
        )
    })
}

impl ToolCall {
    /// Checks the tool name and arguments; failures are `-32602` errors naming the problem.
    pub(crate) fn parse(name: &str, arguments: Option<Value>) -> Result<Self, JsonRpcErrorObject> {
        Ok(match name {
            CODEX_TOOL_NAME => Self::Codex(parse_args(name, arguments)?),
            CODEX_REPLY_TOOL_NAME => Self::CodexReply(parse_args(name, arguments)?),
            CONVERSATION_CREATE_TOOL_NAME => Self::ConversationCreate(parse_args(name, arguments)?),
            CONVERSATION_SEND_MESSAGE_TOOL_NAME => {
                Self::ConversationSendMessage(parse_args(name, arguments)?)
            }
            CONVERSATION_STREAM_TOOL_NAME => Self::ConversationStream(parse_args(name, arguments)?),
            CONVERSATION_STATUS_TOOL_NAME => Self::ConversationStatus(parse_args(name, arguments)?),
            other => {
                return Err(JsonRpcErrorObject::new(
                    INVALID_PARAMS,
                    format!("unknown tool `{other}`; tools/list shows the available tools"),
                ));
            }
        })
    }

    /// Runs the call to completion; `elicitation` says whether its caller can answer
    /// approvals.
    pub(crate) async fn run(
        self,
        context: Arc<ServerContext>,
        request_id: RequestId,
        elicitation: bool,
    ) -> CallToolResult {
        match self {
            Self::Codex(args) => {
                codex_tool::run_codex(context, request_id, args, elicitation).await
            }
            Self::CodexReply(args) => {
                codex_tool::run_codex_reply(context, request_id, args, elicitation).await
            }
            Self::ConversationCreate(args) => streaming::create(context, args).await,
            Self::ConversationSendMessage(args) => streaming::send_message(context, args).await,
            Self::ConversationStream(args) => streaming::stream(context, request_id, args).await,
            Self::ConversationStatus(args) => streaming::status(context, args).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn codex_input_schema_has_the_reference_members() {
        let schema = tool_schema::<CodexToolCallParam>();
        let mut names: Vec<&str> = schema["properties"]
            .as_object()
            .map(|props| props.keys().map(String::as_str).collect())
            .unwrap_or_default();
        names.sort_unstable();
        assert_eq!(
            names,
            vec![
                "approval-policy",
                "base-instructions",
                "compact-prompt",
                "config",
                "cwd",
                "developer-instructions",
                "model",
                "profile",
                "prompt",
                "sandbox"
            ]
        );
        assert_eq!(schema["required"], json!(["prompt"]));
        assert_eq!(schema["properties"]["model"]["type"], json!("string"));
        assert_eq!(
            schema["properties"]["sandbox"]["enum"],
            json!(["read-only", "workspace-write", "danger-full-access"])
        );
    }
}
