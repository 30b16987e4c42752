//! The tools of one sampling request: what the model is offered and who handles each call,
//! registered together so a tool cannot be offered without a handler. One dispatch path runs
//! every call, built-in, MCP or the embedder's.

use std::collections::HashMap;
use std::sync::Arc;

use keel_protocol::{AskForApproval, ReviewDecision};
use serde_json::Value;

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::error::CoreError;
pub use crate::error::ToolRegistrationError;
use crate::models::ResponseItem;
use crate::turn_context::TurnStop;

/// Whether the model APIs accept `name` as a tool name.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Collects tools for one request; [`ToolRegistryBuilder::build`] freezes them.
#[derive(Default)]
pub(crate) struct ToolRegistryBuilder {
    tools: Vec<Arc<dyn DynTool>>,
    /// Definitions offered, in order: a registered tool's (with its name), or a
    /// provider-hosted one's.
    specs: Vec<(Option<String>, Value)>,
    index: HashMap<String, usize>,
}

impl ToolRegistryBuilder {
    /// Offers `tool` to the model and routes its calls to it.
    pub(crate) fn register(&mut self, tool: Arc<dyn DynTool>) -> Result<(), ToolRegistrationError> {
        let spec = tool.spec();
        let name = tool.name().to_string();
        self.handle_only(tool)?;
        self.specs.push((Some(name), spec));
        Ok(())
    }

    /// Routes calls of `tool` without offering it: a name models call from habit (`shell`
    /// while `exec_command` is offered).
    pub(crate) fn handle_only(
        &mut self,
        tool: Arc<dyn DynTool>,
    ) -> Result<(), ToolRegistrationError> {
        let name = tool.name().to_string();
        if self.index.contains_key(&name) {
            return Err(ToolRegistrationError::Duplicate(name));
        }
        self.index.insert(name, self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// Routes calls named `alias` to the tool registered as `target`.
    pub(crate) fn alias(&mut self, alias: &str, target: &str) {
        if let Some(&at) = self.index.get(target) {
            self.index.entry(alias.to_string()).or_insert(at);
        }
    }

    /// Offers a tool the provider runs itself (`web_search`): no handler here.
    pub(crate) fn hosted(&mut self, spec: Value) {
        self.specs.push((None, spec));
    }

    pub(crate) fn build(self) -> ToolRegistry {
        ToolRegistry {
            tools: self.tools,
            specs: self.specs.into_iter().map(|(_, spec)| spec).collect(),
            index: self.index,
            script_tools: None,
        }
    }

    /// Takes the definitions registered so far, with the names of the tools they offer
    /// (`None` for a provider-hosted one), so they can be offered another way.
    pub(crate) fn take_offered(&mut self) -> Vec<(Option<String>, Value)> {
        std::mem::take(&mut self.specs)
    }

    /// The registry, offering `specs` instead of the tools' own definitions (code mode's
    /// namespaces), with `script_tools` reachable from scripts.
    pub(crate) fn build_offering(
        self,
        specs: Vec<Value>,
        script_tools: Vec<ScriptTool>,
    ) -> ToolRegistry {
        ToolRegistry {
            tools: self.tools,
            specs,
            index: self.index,
            script_tools: Some(script_tools),
        }
    }
}

/// A tool as code mode's scripts see it.
#[derive(Debug, Clone)]
pub(crate) struct ScriptTool {
    /// Its name on `tools`.
    pub js_name: String,
    /// Its registered name.
    pub tool: String,
    /// Its description, for `ALL_TOOLS`.
    pub description: String,
}

/// The tools of one request and the one path that runs their calls.
pub(crate) struct ToolRegistry {
    tools: Vec<Arc<dyn DynTool>>,
    specs: Vec<Value>,
    index: HashMap<String, usize>,
    /// In code mode, the tools scripts reach through `tools`.
    script_tools: Option<Vec<ScriptTool>>,
}

impl ToolRegistry {
    /// The definitions offered to the model.
    pub(crate) fn specs(&self) -> &[Value] {
        &self.specs
    }

    /// The tool handling calls named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.index.get(name).and_then(|&at| self.tools.get(at))
    }

    /// In code mode, the tools scripts reach through `tools`; `None` otherwise.
    pub(crate) fn script_tools(&self) -> Option<&[ScriptTool]> {
        self.script_tools.as_deref()
    }

    /// Whether the tool called `name` takes free text (a custom tool) rather than JSON.
    pub(crate) fn is_freeform(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|tool| tool.spec()["type"] == "custom")
    }

    /// Runs one call and returns its output item. Bad arguments and tool failures become
    /// output text for the model; only an interrupt stops the turn.
    pub(crate) async fn dispatch(
        &self,
        ctx: ToolContext,
        call: &ResponseItem,
    ) -> Result<ResponseItem, TurnStop> {
        let (name, input, freeform) = match call {
            ResponseItem::FunctionCall {
                name, arguments, ..
            } => (
                name,
                ToolInput::Function {
                    arguments: arguments.clone(),
                },
                false,
            ),
            ResponseItem::CustomToolCall { name, input, .. } => (
                name,
                ToolInput::Freeform {
                    input: input.clone(),
                },
                true,
            ),
            other => {
                return Err(TurnStop::Failed(crate::error::CoreError::Stream(format!(
                    "not a tool call: {other:?}"
                ))));
            }
        };
        let call_id = ctx.call_id.to_string();
        let limit = ctx.turn.tool_output_token_limit;
        let mut ctx = ctx;
        ctx.trace = ctx
            .ids
            .trace
            .tool_call(name, &call_id, input.text(), freeform);
        let trace = ctx.trace.clone();
        let started = std::time::Instant::now();
        let ran = match self.get(name) {
            Some(tool) => run(tool.as_ref(), ctx, input).await,
            None => {
                trace.mark_failed();
                Ok(if super::is_builtin_name(name) {
                    serde_json::json!({
                        "error": format!("`{name}` is not available to this agent")
                    })
                    .to_string()
                } else if freeform {
                    format!("unsupported custom tool `{name}`")
                } else {
                    format!("unsupported tool `{name}`")
                })
            }
        };
        let text = match ran {
            Ok(text) => text,
            Err(stop) => {
                trace.mark_failed();
                trace.finish(&stop_text(&stop), started.elapsed());
                return Err(stop);
            }
        };
        trace.finish(&text, started.elapsed());
        let output = within_budget(text, limit);
        Ok(if freeform {
            ResponseItem::CustomToolCallOutput {
                call_id,
                output: output.into(),
            }
        } else {
            ResponseItem::FunctionCallOutput {
                call_id,
                output: output.into(),
            }
        })
    }
}

/// Runs `tool`, asking first when it wants the engine to; the text the model reads.
async fn run(tool: &dyn DynTool, ctx: ToolContext, input: ToolInput) -> Result<String, TurnStop> {
    if tool.approval() == ToolApproval::Always && ctx.approval_policy() != AskForApproval::Never {
        let command = vec![tool.name().to_string(), input.text().to_string()];
        let reason = Some(format!(
            "the model wants to call the tool `{}`",
            tool.name()
        ));
        match ctx.request_approval(command, reason).await {
            Ok(ReviewDecision::Approved | ReviewDecision::ApprovedForSession) => {}
            Ok(ReviewDecision::Denied | ReviewDecision::Abort) => {
                ctx.trace.mark_failed();
                return Ok(format!("the user declined the call to `{}`", tool.name()));
            }
            Err(ToolError::Interrupted) => return Err(TurnStop::Interrupted),
            Err(ToolError::Respond(text)) => return Ok(text),
            Err(ToolError::Fatal(why)) => return Err(TurnStop::Failed(CoreError::ToolFatal(why))),
        }
    }
    let trace = ctx.trace.clone();
    match tool.handle(ctx, input).await {
        Ok(text) => Ok(text),
        Err(ToolError::Respond(text)) => {
            trace.mark_failed();
            Ok(text)
        }
        Err(ToolError::Interrupted) => Err(TurnStop::Interrupted),
        Err(ToolError::Fatal(why)) => Err(TurnStop::Failed(CoreError::ToolFatal(why))),
    }
}

/// What a stopped call's telemetry says it ended with.
fn stop_text(stop: &TurnStop) -> String {
    match stop {
        TurnStop::Interrupted => "the turn was interrupted".to_string(),
        TurnStop::Failed(err) => err.to_string(),
    }
}

/// A tool's output cut to `tool_output_token_limit` (head and tail kept), so one command
/// printing gigabytes never inflates the history.
fn within_budget(output: String, limit: usize) -> String {
    if output.len() <= limit.saturating_mul(4) {
        return output;
    }
    crate::unified_exec::head_and_tail(&output, limit)
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use pretty_assertions::assert_eq;

    use super::*;

    struct Named(&'static str);

    impl DynTool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn spec(&self) -> Value {
            serde_json::json!({"type": "function", "name": self.0})
        }
        fn approval(&self) -> ToolApproval {
            ToolApproval::Never
        }
        fn handle(
            &self,
            _ctx: ToolContext,
            _input: ToolInput,
        ) -> BoxFuture<'_, Result<String, ToolError>> {
            Box::pin(async { Ok(String::new()) })
        }
    }

    #[test]
    fn a_taken_name_is_neither_offered_nor_routed_twice() {
        let mut builder = ToolRegistryBuilder::default();
        assert_eq!(builder.register(Arc::new(Named("lookup"))), Ok(()));
        assert_eq!(
            builder.register(Arc::new(Named("lookup"))),
            Err(ToolRegistrationError::Duplicate("lookup".into()))
        );
        builder.alias("find", "lookup");
        builder.alias("ghost", "missing");
        let registry = builder.build();
        assert_eq!(registry.specs().len(), 1);
        assert!(registry.get("find").is_some());
        assert!(registry.get("ghost").is_none());
    }
}
