//! Calls of external MCP servers' tools: approval, the begin/end events, progress and the
//! server's questions for the user while the call runs, and the result for the model.

use std::time::Instant;

use keel_protocol::{
    CallId, ElicitationRequestEvent, EventMsg, McpInvocation, McpToolCallBeginEvent,
    McpToolCallEndEvent, McpToolCallProgressEvent, RequestUserInputEvent, UserInputOption,
    UserInputQuestion,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject};
use serde_json::Value;
use tokio::sync::mpsc;

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::mcp::{McpToolCatalog, McpToolEntry, ServerAsk, client_result, model_output};
use crate::models::{ContentItem, ResponseItem};
use crate::turn_context::TurnStop;

/// One tool of an external MCP server, as offered to the model.
struct McpTool {
    name: String,
    spec: Value,
    entry: McpToolEntry,
}

/// The catalog's tools, each with its definition.
pub(super) fn mcp_tools(catalog: &McpToolCatalog) -> Vec<Arc<dyn DynTool>> {
    catalog
        .definitions
        .iter()
        .filter_map(|spec| {
            let name = spec.get("name").and_then(Value::as_str)?;
            let entry = catalog.by_name.get(name)?.clone();
            Some(Arc::new(McpTool {
                name: name.to_string(),
                spec: spec.clone(),
                entry,
            }) as Arc<dyn DynTool>)
        })
        .collect()
}

impl DynTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> Value {
        self.spec.clone()
    }

    /// Asked per call: a tool its server marks read-only runs at once.
    fn approval(&self) -> ToolApproval {
        ToolApproval::PerCall
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let call_id = ctx.call_id().to_string();
            ctx.trace.mcp_server(&self.entry.server);
            Ok(mcp_tool(&ctx, &call_id, &self.entry, input.text()).await?)
        })
    }
}

/// The question id of an MCP tool approval asked through `request_user_input`.
pub(crate) const MCP_APPROVAL_QUESTION_ID: &str = "mcp_tool_call_approval";
const APPROVE_ONCE: &str = "Run it";
const APPROVE_SESSION: &str = "Run it and don't ask again this session";
const DECLINE: &str = "Don't run it";

/// Runs one MCP tool call and returns the text for the model.
async fn mcp_tool(
    ctx: &ToolContext,
    call_id: &str,
    entry: &McpToolEntry,
    arguments: &str,
) -> Result<String, TurnStop> {
    let parsed: Option<JsonObject> = if arguments.trim().is_empty() {
        None
    } else {
        match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(object)) => Some(object),
            Ok(other) => {
                return Ok(format!(
                    "arguments for `{}` must be a JSON object, not {other}",
                    entry.tool
                ));
            }
            Err(err) => return Ok(format!("failed to parse arguments: {err}")),
        }
    };
    let invocation = McpInvocation {
        server: entry.server.clone(),
        tool: entry.tool.clone(),
        arguments: parsed.clone().map(Value::Object),
    };
    let call_id = CallId::new(call_id);
    if !mcp_call_approved(ctx, &call_id, entry).await? {
        let refusal = format!(
            "the user declined to run `{}` of MCP server `{}`",
            entry.tool, entry.server
        );
        send_mcp_end(
            ctx,
            &call_id,
            invocation,
            Instant::now(),
            Err(refusal.clone()),
        )
        .await;
        return Ok(refusal);
    }
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::McpToolCallBegin(McpToolCallBeginEvent {
                call_id: call_id.clone(),
                invocation: invocation.clone(),
            }),
        )
        .await;
    let started = Instant::now();
    let Some(connection) = entry.connection() else {
        let reason = format!("MCP server `{}` is not running", entry.server);
        send_mcp_end(ctx, &call_id, invocation, started, Err(reason.clone())).await;
        return Ok(reason);
    };
    let (asks_tx, asks_rx) = mpsc::unbounded_channel();
    let call = async {
        let result = connection
            .call_tool(&entry.tool, parsed, &ctx.cancel, |ask| {
                let _ = asks_tx.send(ask);
            })
            .await;
        drop(asks_tx);
        result
    };
    let (result, ()) = tokio::join!(call, answer_server_asks(ctx, &call_id, entry, asks_rx));
    match result {
        Ok(result) => {
            let result = client_result(&result);
            let output = model_output(&result);
            send_mcp_end(ctx, &call_id, invocation, started, Ok(result)).await;
            if !output.image_urls.is_empty() {
                let mut content = vec![ContentItem::InputText {
                    text: format!("Images returned by `{}`:", entry.tool),
                }];
                content.extend(
                    output
                        .image_urls
                        .into_iter()
                        .map(|image_url| ContentItem::InputImage { image_url }),
                );
                ctx.host.queue_input(ResponseItem::Message {
                    id: None,
                    role: "user".to_string(),
                    content,
                });
            }
            Ok(output.text)
        }
        Err(err) => {
            let interrupted = matches!(err, crate::mcp::McpError::Cancelled { .. });
            send_mcp_end(ctx, &call_id, invocation, started, Err(err.to_string())).await;
            if interrupted {
                return Err(TurnStop::Interrupted);
            }
            Ok(err.to_string())
        }
    }
}

async fn send_mcp_end(
    ctx: &ToolContext,
    call_id: &CallId,
    invocation: McpInvocation,
    started: Instant,
    result: Result<keel_protocol::McpToolResult, String>,
) {
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::McpToolCallEnd(McpToolCallEndEvent {
                call_id: call_id.clone(),
                invocation,
                duration: started.elapsed(),
                result,
            }),
        )
        .await;
}

/// Whether the call may run: read-only tools and the `never` policy need no approval,
/// a tool approved for the session needs none again; otherwise the user is asked (an
/// unanswered question declines).
async fn mcp_call_approved(
    ctx: &ToolContext,
    call_id: &CallId,
    entry: &McpToolEntry,
) -> Result<bool, TurnStop> {
    let session_key = vec!["mcp".to_string(), entry.server.clone(), entry.tool.clone()];
    if entry.read_only
        || ctx.turn.approval_policy == keel_protocol::AskForApproval::Never
        || ctx.host.is_approved_for_session(&session_key)
    {
        return Ok(true);
    }
    let option = |label: &str, description: &str| UserInputOption {
        label: label.to_string(),
        description: description.to_string(),
    };
    let answers = ctx.host.register_user_input(call_id.clone());
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::RequestUserInput(RequestUserInputEvent {
                call_id: call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                questions: vec![UserInputQuestion {
                    id: MCP_APPROVAL_QUESTION_ID.to_string(),
                    header: "Approve MCP tool call?".to_string(),
                    question: format!(
                        "Allow the MCP server `{}` to run its tool `{}`?",
                        entry.server, entry.tool
                    ),
                    options: Some(vec![
                        option(APPROVE_ONCE, "Run this call."),
                        option(APPROVE_SESSION, "Run this tool whenever the model asks."),
                        option(DECLINE, "Tell the model the call was declined."),
                    ]),
                    is_other: false,
                    is_secret: false,
                }],
            }),
        )
        .await;
    let response = tokio::select! {
        () = ctx.cancel.cancelled() => {
            ctx.host.forget_user_input(call_id);
            return Err(TurnStop::Interrupted);
        }
        response = answers => response.unwrap_or_default(),
    };
    let chosen = response
        .answers
        .get(MCP_APPROVAL_QUESTION_ID)
        .and_then(|answer| answer.answers.first())
        .map(String::as_str);
    Ok(match chosen {
        Some(APPROVE_ONCE) => true,
        Some(APPROVE_SESSION) => {
            ctx.host.approve_for_session(session_key);
            true
        }
        _ => false,
    })
}

/// Forwards what the server asks while the call runs: progress as events, questions to
/// the user (answered through `Op::ResolveElicitation`; unanswered when the turn ends).
async fn answer_server_asks(
    ctx: &ToolContext,
    call_id: &CallId,
    entry: &McpToolEntry,
    mut asks: mpsc::UnboundedReceiver<ServerAsk>,
) {
    while let Some(ask) = asks.recv().await {
        match ask {
            ServerAsk::Progress(progress) => {
                let message = progress
                    .message
                    .clone()
                    .unwrap_or_else(|| match progress.total {
                        Some(total) => format!("{}/{}", progress.progress, total),
                        None => progress.progress.to_string(),
                    });
                ctx.host
                    .send_event(
                        &ctx.ids.sub_id,
                        EventMsg::McpToolCallProgress(McpToolCallProgressEvent {
                            call_id: call_id.clone(),
                            message,
                            progress: progress.progress,
                            total: progress.total,
                        }),
                    )
                    .await;
            }
            ServerAsk::Elicit { id, params, reply } => {
                let (message, requested_schema) = match &params {
                    ElicitRequestParams::FormElicitationParams {
                        message,
                        requested_schema,
                        ..
                    } => (message.clone(), serde_json::to_value(requested_schema).ok()),
                    _ => {
                        // Keel's clients answer forms only; a URL flow is declined.
                        tracing::info!(server = %entry.server, "URL elicitation declined");
                        let _ = reply.send(ElicitResult::new(ElicitationAction::Decline));
                        continue;
                    }
                };
                let answer = ctx.host.register_elicitation(&entry.server, &id);
                ctx.host
                    .send_event(
                        &ctx.ids.sub_id,
                        EventMsg::ElicitationRequest(ElicitationRequestEvent {
                            server_name: entry.server.clone(),
                            id,
                            message,
                            requested_schema,
                        }),
                    )
                    .await;
                // Answered while the call goes on; a dropped reply declines.
                tokio::spawn(async move {
                    if let Ok(result) = answer.await {
                        let _ = reply.send(result);
                    }
                });
            }
        }
    }
}
