//! An embedding program's tool as the engine runs it: the call is announced to the client
//! (`tool_call_begin`, `tool_call_end` with the output and how long it took), as every
//! built-in tool's calls are, without the tool having to send anything itself.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use keel_protocol::{EventMsg, ToolCallBeginEvent, ToolCallEndEvent};
use serde_json::Value;

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};

/// Wraps an embedder's tool so its calls are announced.
pub(crate) struct ObservedTool {
    inner: Arc<dyn DynTool>,
}

impl ObservedTool {
    /// The embedder's `tool`, announced.
    pub(crate) fn wrap(tool: Arc<dyn DynTool>) -> Arc<dyn DynTool> {
        Arc::new(Self { inner: tool })
    }
}

impl DynTool for ObservedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn spec(&self) -> Value {
        self.inner.spec()
    }

    fn approval(&self) -> ToolApproval {
        self.inner.approval()
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let arguments = serde_json::from_str::<Value>(input.text())
                .unwrap_or_else(|_| Value::String(input.text().to_string()));
            let tool = self.inner.name().to_string();
            ctx.send_event(EventMsg::ToolCallBegin(ToolCallBeginEvent {
                call_id: ctx.call_id().clone(),
                turn_id: ctx.turn_id().clone(),
                tool: tool.clone(),
                arguments: arguments.clone(),
            }))
            .await;
            let started = Instant::now();
            let result = self.inner.handle(ctx.clone(), input).await;
            let (output, success) = match &result {
                Ok(output) => (output.clone(), true),
                Err(err) => (err.to_string(), false),
            };
            ctx.send_event(EventMsg::ToolCallEnd(ToolCallEndEvent {
                call_id: ctx.call_id().clone(),
                turn_id: ctx.turn_id().clone(),
                tool,
                arguments,
                output,
                success,
                duration: started.elapsed(),
            }))
            .await;
            result
        })
    }
}
