//! Tools a client defines and runs itself (Codex's `dynamicTools`): the engine offers them,
//! and a call becomes a `dynamic_tool_call_request` event the client answers with
//! `Op::DynamicToolResponse`. An interrupt stops the wait; a client that is gone or fails is
//! the app-server's to report as a failed response, so the turn never hangs on it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use keel_protocol::{
    DynamicToolCallEndEvent, DynamicToolCallRequestEvent, DynamicToolContentItem,
    DynamicToolNamespaceTool, DynamicToolResponse, DynamicToolSpec, EventMsg,
};
use serde_json::Value;

use super::{
    DynTool, ToolApproval, ToolContext, ToolError, ToolInput, ToolRegistrationError, function_spec,
    is_builtin_name, valid_tool_name,
};
use crate::models::{ContentItem, ResponseItem};

/// Joins a namespace and a tool into the one name the model calls.
const NAMESPACE_SEPARATOR: &str = "__";

/// One tool of the client's.
struct DynamicTool {
    /// The name the model calls (`NAMESPACE__TOOL` inside a namespace).
    offered_name: String,
    tool: String,
    namespace: Option<String>,
    description: String,
    input_schema: Value,
}

/// The client's tool definitions as tools, checked: every name one the model APIs accept,
/// none taken by Keel's own tools, none twice.
pub(crate) fn dynamic_tools(
    specs: &[DynamicToolSpec],
) -> Result<Vec<Arc<dyn DynTool>>, ToolRegistrationError> {
    let mut tools = Vec::new();
    for spec in specs {
        match spec {
            DynamicToolSpec::Function {
                name,
                description,
                input_schema,
                ..
            } => tools.push(DynamicTool {
                offered_name: name.clone(),
                tool: name.clone(),
                namespace: None,
                description: description.clone(),
                input_schema: input_schema.clone(),
            }),
            DynamicToolSpec::Namespace {
                name: namespace,
                tools: members,
                ..
            } => {
                for DynamicToolNamespaceTool::Function {
                    name,
                    description,
                    input_schema,
                    ..
                } in members
                {
                    tools.push(DynamicTool {
                        offered_name: format!("{namespace}{NAMESPACE_SEPARATOR}{name}"),
                        tool: name.clone(),
                        namespace: Some(namespace.clone()),
                        description: description.clone(),
                        input_schema: input_schema.clone(),
                    });
                }
            }
        }
    }
    let mut seen = HashSet::new();
    for tool in &tools {
        let name = &tool.offered_name;
        if !valid_tool_name(name) {
            return Err(ToolRegistrationError::InvalidName(name.clone()));
        }
        if is_builtin_name(name) || !seen.insert(name.clone()) {
            return Err(ToolRegistrationError::Duplicate(name.clone()));
        }
    }
    Ok(tools
        .into_iter()
        .map(|tool| Arc::new(tool) as Arc<dyn DynTool>)
        .collect())
}

impl DynTool for DynamicTool {
    fn name(&self) -> &str {
        &self.offered_name
    }

    fn spec(&self) -> Value {
        let mut parameters = self.input_schema.clone();
        // A schema that is not an object schema would be refused by the model APIs.
        if !parameters.is_object() {
            parameters = serde_json::json!({"type": "object", "properties": {}});
        }
        function_spec(&self.offered_name, &self.description, parameters)
    }

    /// The client that defined the tool decides; the engine does not ask the user.
    fn approval(&self) -> ToolApproval {
        ToolApproval::Never
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let arguments = serde_json::from_str::<Value>(input.text())
                .unwrap_or_else(|_| Value::String(input.text().to_string()));
            let started = Instant::now();
            let answer = ctx.host.register_dynamic_call(ctx.call_id.clone());
            ctx.send_event(EventMsg::DynamicToolCallRequest(
                DynamicToolCallRequestEvent {
                    call_id: ctx.call_id.clone(),
                    turn_id: ctx.ids.turn_id.clone(),
                    tool: self.tool.clone(),
                    namespace: self.namespace.clone(),
                    arguments: arguments.clone(),
                },
            ))
            .await;
            let response = tokio::select! {
                () = ctx.cancel.cancelled() => {
                    ctx.host.forget_dynamic_call(&ctx.call_id);
                    return Err(ToolError::Interrupted);
                }
                answer = answer => answer.unwrap_or_else(|_| {
                    DynamicToolResponse::failure(format!(
                        "the tool `{}` was not run: nobody answered the call",
                        self.offered_name
                    ))
                }),
            };
            ctx.send_event(EventMsg::DynamicToolCallEnd(DynamicToolCallEndEvent {
                call_id: ctx.call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                tool: self.tool.clone(),
                namespace: self.namespace.clone(),
                arguments,
                response: response.clone(),
                duration: started.elapsed(),
            }))
            .await;
            Ok(model_output(&ctx, response))
        })
    }
}

/// The text the model reads: the text items in order; images go with its next request.
fn model_output(ctx: &ToolContext, response: DynamicToolResponse) -> String {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for item in response.content_items {
        match item {
            DynamicToolContentItem::InputText { text: part } => text.push(part),
            DynamicToolContentItem::InputImage { image_url } => {
                text.push("[image attached]".to_string());
                images.push(ContentItem::InputImage { image_url });
            }
            DynamicToolContentItem::InputAudio { .. } => {
                text.push("[audio left out: the model is not given audio]".to_string());
            }
        }
    }
    if !images.is_empty() {
        ctx.host.queue_input(ResponseItem::Message {
            id: None,
            role: "user".to_string(),
            content: images,
        });
    }
    let text = text.join("\n");
    if response.success {
        text
    } else if text.is_empty() {
        "the tool call failed".to_string()
    } else {
        format!("the tool call failed: {text}")
    }
}
