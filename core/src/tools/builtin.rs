//! The macro that declares one of Keel's own tools, and how a stopped turn reads as a tool
//! error.

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

/// Declares a built-in tool: a unit struct implementing [`DynTool`](super::DynTool), whose
/// calls run `$body` (a `Result<String, TurnStop>`) with the call's context (`&ToolContext`),
/// id and arguments in scope. Built-ins decide about approval per call.
macro_rules! builtin_tool {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $spec:expr,
     |$call:ident, $call_id:ident, $arguments:ident| $body:expr) => {
        $(#[$doc])*
        pub(crate) struct $ty;

        impl $crate::tools::DynTool for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn spec(&self) -> serde_json::Value {
                $spec
            }

            fn approval(&self) -> $crate::tools::ToolApproval {
                $crate::tools::ToolApproval::PerCall
            }

            fn handle(
                &self,
                ctx: $crate::tools::ToolContext,
                input: $crate::tools::ToolInput,
            ) -> futures::future::BoxFuture<'_, Result<String, $crate::tools::ToolError>> {
                Box::pin(async move {
                    let $call = &ctx;
                    let $call_id = ctx.call_id().to_string();
                    let $arguments = input.text();
                    let result: Result<String, $crate::turn_context::TurnStop> = $body;
                    result.map_err($crate::tools::ToolError::from)
                })
            }
        }
    };
}
pub(crate) use builtin_tool;

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
        super::function_spec(
            T::NAME,
            self.0.description(),
            super::tool::parameters_schema::<T::Args>(),
        )
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
                Err(err) => return Ok(format!("failed to parse {} arguments: {err}", T::NAME)),
            };
            self.0.run(&ctx, args).await.map_err(ToolError::from)
        })
    }
}
