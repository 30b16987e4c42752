//! The macro that declares one of Keel's own tools, and how a stopped turn reads as a tool
//! error.

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
