//! The extension point for tools: what a tool is, as the engine holds it ([`DynTool`]) and as
//! an author writes it ([`Tool`], typed arguments whose JSON Schema is derived, never written
//! by hand). Every built-in tool implements [`DynTool`]; an embedder's tool usually implements
//! [`Tool`] and reaches the registry through the blanket implementation.

use std::future::Future;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ToolContext;
use super::tool_error::ToolError;

/// How a call reaches a tool: the JSON arguments of a function tool, or the free text of a
/// freeform tool (as `apply_patch` is for GPT-5 models).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolInput {
    /// A function call's `arguments`, a JSON object as text.
    Function {
        /// The arguments exactly as the model sent them.
        arguments: String,
    },
    /// A freeform (custom) tool call's text.
    Freeform {
        /// The text exactly as the model sent it.
        input: String,
    },
}

impl ToolInput {
    /// The text the model sent, whichever form the call took.
    pub fn text(&self) -> &str {
        match self {
            Self::Function { arguments } => arguments,
            Self::Freeform { input } => input,
        }
    }
}

/// Who decides, for each call, whether the user is asked first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolApproval {
    /// Runs without asking: the tool only reads.
    Never,
    /// The engine asks the user before every call (as a command approval naming the tool and
    /// its arguments), unless the approval policy is `never`. A declined call tells the model.
    Always,
    /// The tool decides per call and asks through [`ToolContext::request_approval`] (as
    /// `shell` does: a read-only command in the sandbox runs at once, others are asked).
    PerCall,
}

/// A tool as the engine holds it: a name, the definition offered to the model, who approves
/// its calls, and the handler. Built-in tools implement it directly; most embedders implement
/// [`Tool`] instead and get this for free.
pub trait DynTool: Send + Sync {
    /// The name the model calls the tool by; unique within a registry.
    fn name(&self) -> &str;

    /// The definition offered to the model, in the Responses API's form
    /// (`{"type": "function", "name", "description", "parameters"}`, or `"type": "custom"`
    /// for a freeform tool); the Chat wire converts it.
    fn spec(&self) -> Value;

    /// Who decides whether a call needs the user's approval.
    fn approval(&self) -> ToolApproval;

    /// Runs one call. The returned text is the output the model reads.
    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>>;
}

/// A tool with typed arguments: the easy way to give the model a new ability.
///
/// ```
/// use keel_core::{Tool, ToolContext, ToolError};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// Looks a ticket up in the tracker.
/// struct TicketLookup;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct TicketArgs {
///     /// The ticket's id, e.g. `KEEL-12`.
///     id: String,
/// }
///
/// impl Tool for TicketLookup {
///     type Args = TicketArgs;
///     type Output = String;
///     const NAME: &'static str = "lookup_ticket";
///
///     fn description(&self) -> String {
///         "Returns a ticket's title and status.".to_string()
///     }
///
///     async fn call(&self, _ctx: ToolContext, args: TicketArgs) -> Result<String, ToolError> {
///         match args.id.as_str() {
///             "KEEL-12" => Ok("KEEL-12: tools as traits (open)".to_string()),
///             other => Err(ToolError::Respond(format!("no ticket `{other}`"))),
///         }
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their JSON Schema is what the model is told to send.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// What the model reads back: a `String` as it is, anything else as JSON.
    type Output: Serialize;
    /// The name the model calls the tool by (`[A-Za-z0-9_-]`, at most 64 characters).
    const NAME: &'static str;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// Who decides whether a call needs the user's approval; a tool that only reads keeps
    /// the default.
    fn approval(&self) -> ToolApproval {
        ToolApproval::Never
    }

    /// Runs one call with arguments that matched the schema.
    fn call(
        &self,
        ctx: ToolContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

impl<T: Tool> DynTool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn spec(&self) -> Value {
        function_spec(T::NAME, &self.description(), parameters_schema::<T::Args>())
    }

    fn approval(&self) -> ToolApproval {
        Tool::approval(self)
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let text = input.text();
            // Models sometimes send no arguments for a tool whose fields are all optional.
            let text = if text.trim().is_empty() { "{}" } else { text };
            let args: T::Args = serde_json::from_str(text).map_err(|err| {
                ToolError::Respond(format!("invalid arguments for `{}`: {err}", T::NAME))
            })?;
            let output = self.call(ctx, args).await?;
            output_text(&output).map_err(|err| {
                ToolError::Respond(format!(
                    "`{}` returned output that is not JSON: {err}",
                    T::NAME
                ))
            })
        })
    }
}

/// A function tool's definition in the Responses API's form.
pub(crate) fn function_spec(name: &str, description: &str, parameters: Value) -> Value {
    serde_json::json!({
        "type": "function",
        "name": name,
        "description": description,
        "strict": false,
        "parameters": parameters,
    })
}

/// The JSON Schema of `A` as a tool's `parameters`: an object schema without the meta keys
/// models do not need.
pub(crate) fn parameters_schema<A: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(A).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        object
            .entry("type")
            .or_insert_with(|| Value::String("object".to_string()));
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    schema
}

/// The text the model reads for a typed tool's output.
fn output_text<O: Serialize>(output: &O) -> Result<String, serde_json::Error> {
    match serde_json::to_value(output)? {
        Value::String(text) => Ok(text),
        // Serialized from the value itself, so a struct keeps its field order.
        _ => serde_json::to_string(output),
    }
}
