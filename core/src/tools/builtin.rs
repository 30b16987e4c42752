//! The trait every one of Keel's own tools implements, and how a stopped turn reads as a
//! tool error.

use super::context::ToolContext;
use super::tool_error::ToolError;
use crate::error::CoreError;
use crate::turn_context::TurnStop;

impl From<TurnStop> for ToolError {
    fn from(stop: TurnStop) -> Self {
        match stop {
            TurnStop::Interrupted => Self::Interrupted,
            TurnStop::Failed(CoreError::ToolFatal(why)) => Self::Fatal(why),
            TurnStop::Failed(err) => Self::Respond(err.to_string()),
        }
    }
}

/// One of Keel's own tools with typed arguments: the crate's twin of the public
/// [`Tool`](super::Tool), whose handler works on the call's context and may stop the turn.
/// The definition the model sees is derived from `Args` (its fields' doc comments are their
/// descriptions), so the schema and the parser cannot drift apart; the golden test
/// (`cli/tests/suite/tool_specs.rs`) holds what the model sees.
pub(crate) trait BuiltinTool: Send + Sync + 'static {
    /// The arguments, as the model sends them.
    type Args: serde::de::DeserializeOwned + schemars::JsonSchema + Send;
    /// The name the model calls it by.
    const NAME: &'static str;

    /// What the tool does, for the model.
    fn description(&self) -> &'static str;

    /// The parameters the model sees: `Args`' schema, unless the tool's parameters are a
    /// compatibility contract written out in Codex's exact shape (`shell`, `exec_command`,
    /// ...: numbers as `number`, no `null`s), which the golden test holds.
    fn parameters(&self) -> serde_json::Value {
        super::tool::parameters_schema::<Self::Args>()
    }

    /// What the model reads when its arguments do not parse.
    fn bad_arguments(&self, err: &serde_json::Error) -> String {
        format!("failed to parse {} arguments: {err}", Self::NAME)
    }

    /// Runs one call; `Ok` is the text the model reads.
    fn run(
        &self,
        ctx: &ToolContext,
        args: Self::Args,
    ) -> impl std::future::Future<Output = Result<String, TurnStop>> + Send;
}

/// A [`BuiltinTool`] as the registry holds it.
pub(crate) struct TypedBuiltin<T>(pub T);

impl<T: BuiltinTool> super::DynTool for TypedBuiltin<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn spec(&self) -> serde_json::Value {
        super::function_spec(T::NAME, self.0.description(), self.0.parameters())
    }

    fn approval(&self) -> super::ToolApproval {
        super::ToolApproval::PerCall
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: super::ToolInput,
    ) -> futures::future::BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let text = input.text();
            // Models sometimes send nothing for a tool whose fields are all optional.
            let text = if text.trim().is_empty() { "{}" } else { text };
            let args: T::Args = match serde_json::from_str(text) {
                Ok(args) => args,
                Err(err) => return Ok(self.0.bad_arguments(&err)),
            };
            self.0.run(&ctx, args).await.map_err(ToolError::from)
        })
    }
}
