//! Code mode, as Codex 0.171 drives today's models: instead of each tool, the model is offered
//! `exec`, which runs its JavaScript in an embedded QuickJS engine where every other tool is a
//! method of `tools`, and `wait`, for scripts still running when `exec` yields. Each nested
//! call goes through the same path as a call the model makes itself (hooks, approvals,
//! sandbox, events, rollout), so clients see the commands and patches it runs as usual, plus
//! the `exec` cell as a tool call of its own.
//!
//! The engine starts only when a script runs, on a thread of its own per script, so
//! conversations that never use it pay nothing. A script has no file system, network or
//! process access but through `tools`, and its memory and stack are capped; a cell still
//! running when its turn ends is stopped.

mod cell_output;
mod cells;
mod pragma;
#[cfg(feature = "code-mode")]
mod script;
#[cfg(not(feature = "code-mode"))]
#[path = "script_disabled.rs"]
mod script;
mod script_protocol;
mod specs;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

pub(crate) use cells::{CellStore, NestedRequest, NestedRunner};
pub(crate) use script_protocol::{NestedInput, NestedResult};

use crate::models::{CallOutput, ResponseItem};
use crate::tools::{ScriptTool, ToolContext, ToolRegistry, ToolRegistryBuilder};
use crate::turn_context::TurnContext;
use cell_output::{CellStatus, render};

/// The namespace code mode's own tools and the directly called ones are offered in.
const FUNCTIONS: &str = "functions";

/// Whether this turn's model is driven in code mode: its catalogue entry says so, the
/// configuration allows it, the build has the engine, and the provider takes custom tools
/// and namespaces (the Responses API).
pub(crate) fn active(context: &TurnContext) -> bool {
    let settings = context.client.settings();
    cfg!(feature = "code-mode")
        && context.code_mode
        && context.client.capabilities().freeform_tools
        && crate::model_family::family(&settings.catalog, &settings.model).code_mode
}

/// The registry of a request: in code mode every tool is still handled, but the model is
/// offered `exec`, `wait` and the directly called tools in namespaces, with the rest reachable
/// from scripts (a provider-hosted tool such as `web_search` cannot be called from a script
/// and is not offered); otherwise each tool is offered as itself.
pub(crate) fn registry(context: &TurnContext, mut builder: ToolRegistryBuilder) -> ToolRegistry {
    if !active(context) {
        return builder.build();
    }
    const DIRECT: &[&str] = &["request_user_input"];
    const COLLABORATION: &[&str] = &[
        "spawn_agent",
        "send_input",
        "wait_agent",
        "close_agent",
        "resume_agent",
        "followup_task",
        "interrupt_agent",
        "list_agents",
        "send_message",
    ];
    let offered_specs = builder.take_offered();
    let mut direct = Vec::new();
    let mut collaboration = Vec::new();
    let mut nested = Vec::new();
    for (name, spec) in &offered_specs {
        match name.as_deref() {
            None => {}
            Some(name) if DIRECT.contains(&name) => direct.push(spec.clone()),
            Some(name) if COLLABORATION.contains(&name) => collaboration.push(spec.clone()),
            Some(name) => nested.push((name, spec)),
        }
    }
    // The asynchronous ways to reach the user, for the models whose catalogue entry lists
    // them, beside `exec` in `functions`.
    let settings = context.client.settings();
    let listed = settings
        .catalog
        .find(&settings.model)
        .and_then(|entry| entry.experimental_supported_tools.clone())
        .unwrap_or_default();
    let asynchronous: [std::sync::Arc<dyn crate::tools::DynTool>; 2] = [
        std::sync::Arc::new(crate::tools::RequestUserInputAsync),
        std::sync::Arc::new(crate::tools::SendMessageToUserAsync),
    ];
    // Only the agent the user talks to reaches them (sub-agents report to their parent).
    let top_level = context.agent_path == crate::client::ROOT_AGENT;
    for tool in asynchronous {
        if top_level && listed.iter().any(|name| name == tool.name()) {
            direct.push(tool.spec());
            if let Err(err) = builder.handle_only(tool) {
                tracing::warn!("tool skipped: {err}");
            }
        }
    }
    let (specs, script_tools) = offered(CodeModeOffer {
        direct,
        collaboration,
        nested,
        clock: true,
    });
    if let Err(err) = builder.handle_only(std::sync::Arc::new(crate::tools::SleepTool)) {
        tracing::warn!("tool skipped: {err}");
    }
    builder.build_offering(specs, script_tools)
}

/// The tools of one code-mode request, split by how the model reaches them.
struct CodeModeOffer<'a> {
    /// Called directly by the model, in `functions` beside `exec` (`request_user_input`).
    pub direct: Vec<Value>,
    /// The sub-agent tools, in `collaboration`.
    pub collaboration: Vec<Value>,
    /// Reached from scripts only: (registered name, definition).
    pub nested: Vec<(&'a str, &'a Value)>,
    /// Offer `clock.sleep`.
    pub clock: bool,
}

/// The definitions sent to a code-mode model (namespaces, in Codex's order), and the tools
/// scripts see.
fn offered(offer: CodeModeOffer<'_>) -> (Vec<Value>, Vec<ScriptTool>) {
    let script_tools: Vec<ScriptTool> = offer
        .nested
        .iter()
        .map(|(name, spec)| ScriptTool {
            js_name: specs::js_identifier(name),
            tool: (*name).to_string(),
            description: specs::description_of(spec).to_string(),
        })
        .collect();
    let declared: Vec<specs::NestedTool<'_>> = script_tools
        .iter()
        .zip(&offer.nested)
        .map(|(tool, (_, spec))| specs::NestedTool {
            js_name: &tool.js_name,
            spec,
        })
        .collect();
    let mut functions = vec![specs::exec_tool(&declared), specs::wait_tool()];
    functions.extend(offer.direct);
    let mut namespaces = vec![specs::namespace(FUNCTIONS, "", functions)];
    if offer.clock {
        namespaces.push(specs::namespace(
            "clock",
            "Tools for reading and waiting on time.",
            vec![crate::tools::DynTool::spec(&crate::tools::SleepTool)],
        ));
    }
    if !offer.collaboration.is_empty() {
        namespaces.push(specs::namespace(
            "collaboration",
            "Tools for spawning and managing sub-agents.",
            offer.collaboration,
        ));
    }
    (namespaces, script_tools)
}

/// Whether `call` is code mode's own: `exec` or `wait`, at the top level or in `functions`.
pub(crate) fn is_own_call(call: &ResponseItem) -> bool {
    let top = |namespace: &Option<String>| namespace.as_deref().is_none_or(|ns| ns == FUNCTIONS);
    match call {
        ResponseItem::CustomToolCall {
            name, namespace, ..
        } => name == "exec" && top(namespace),
        ResponseItem::FunctionCall {
            name, namespace, ..
        } => name == "wait" && top(namespace),
        _ => false,
    }
}

/// Runs an `exec` or `wait` call: the item answering it, then one output item per value the
/// script passed to `notify()` (as Codex 0.171 sends them).
pub(crate) async fn run_call(
    cells: &Arc<CellStore>,
    tools: &[ScriptTool],
    call: &ResponseItem,
    nested: NestedRunner,
    ctx: ToolContext,
) -> (ResponseItem, Vec<ResponseItem>) {
    let started = Instant::now();
    match call {
        ResponseItem::CustomToolCall { call_id, input, .. } => {
            let (output, notes) = exec(cells, tools, input, nested, ctx, started).await;
            let notes = notes
                .into_iter()
                .map(|note| ResponseItem::CustomToolCallOutput {
                    call_id: call_id.clone(),
                    output: CallOutput::Text(note),
                })
                .collect();
            let output = ResponseItem::CustomToolCallOutput {
                call_id: call_id.clone(),
                output,
            };
            (output, notes)
        }
        ResponseItem::FunctionCall {
            call_id, arguments, ..
        } => {
            let (output, notes) = wait(cells, arguments, &ctx, started).await;
            let notes = notes
                .into_iter()
                .map(|note| ResponseItem::FunctionCallOutput {
                    call_id: call_id.clone(),
                    output: CallOutput::Text(note),
                })
                .collect();
            let output = ResponseItem::FunctionCallOutput {
                call_id: call_id.clone(),
                output,
            };
            (output, notes)
        }
        other => (
            ResponseItem::FunctionCallOutput {
                call_id: other.tool_call_id().unwrap_or_default().to_string(),
                output: "not a code-mode call".into(),
            },
            Vec::new(),
        ),
    }
}

async fn exec(
    cells: &Arc<CellStore>,
    tools: &[ScriptTool],
    input: &str,
    nested: NestedRunner,
    ctx: ToolContext,
    started: Instant,
) -> (CallOutput, Vec<String>) {
    let parsed = match pragma::parse(input) {
        Ok(parsed) => parsed,
        Err(error) => return (failed(started, error), Vec::new()),
    };
    let cancel = ctx.cancellation().clone();
    let cell = match cells.start(parsed.source, tools, nested, ctx) {
        Ok(cell) => cell,
        Err(error) => return (failed(started, error), Vec::new()),
    };
    let (status, items) = cell
        .wait_and_take(Duration::from_millis(parsed.yield_time_ms), &cancel)
        .await;
    if !matches!(status, CellStatus::Running(_)) {
        cells.forget(cell.id());
    }
    let output = render(&status, started.elapsed(), items, parsed.max_output_tokens);
    (output, cell.take_notes())
}

/// The output of a call that failed before its script ran (or of a `wait` on no cell).
fn failed(started: Instant, error: String) -> CallOutput {
    render(
        &CellStatus::Failed(error),
        started.elapsed(),
        Vec::new(),
        pragma::DEFAULT_MAX_OUTPUT_TOKENS,
    )
}

/// The arguments of `wait`.
#[derive(Deserialize)]
struct WaitArgs {
    cell_id: String,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    terminate: bool,
    #[serde(default)]
    yield_time_ms: Option<u64>,
}

async fn wait(
    cells: &Arc<CellStore>,
    arguments: &str,
    ctx: &ToolContext,
    started: Instant,
) -> (CallOutput, Vec<String>) {
    let args: WaitArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => {
            let error = format!("invalid arguments for `wait`: {err}");
            return (failed(started, error), Vec::new());
        }
    };
    let Some(cell) = cells.get(&args.cell_id) else {
        let error = format!("exec cell {} not found", args.cell_id);
        return (failed(started, error), Vec::new());
    };
    if args.terminate {
        cell.terminate();
    }
    let yield_after = if args.terminate {
        // A stopped script ends at its next instruction; give it a moment to say so.
        Duration::from_secs(5)
    } else {
        Duration::from_millis(args.yield_time_ms.unwrap_or(pragma::DEFAULT_YIELD_TIME_MS))
    };
    let (status, items) = cell.wait_and_take(yield_after, ctx.cancellation()).await;
    if !matches!(status, CellStatus::Running(_)) {
        cells.forget(cell.id());
    }
    let output = render(
        &status,
        started.elapsed(),
        items,
        args.max_tokens.unwrap_or(pragma::DEFAULT_MAX_OUTPUT_TOKENS),
    );
    (output, cell.take_notes())
}

/// The call item a nested request becomes: a custom call for a freeform tool (whose input
/// must be a string), a function call otherwise (whose input must be an object).
pub(crate) fn nested_call_item(
    request: &NestedRequest,
    freeform: bool,
) -> Result<ResponseItem, String> {
    match (&request.input, freeform) {
        (NestedInput::Text(input), true) => Ok(ResponseItem::CustomToolCall {
            id: None,
            call_id: request.call_id.clone(),
            name: request.tool.clone(),
            namespace: None,
            input: input.clone(),
        }),
        (NestedInput::Json(_), true) => {
            Err(format!("tool `{}` expects a string input", request.tool))
        }
        (NestedInput::Json(arguments), false) => Ok(ResponseItem::FunctionCall {
            id: None,
            name: request.tool.clone(),
            namespace: None,
            arguments: arguments.clone(),
            call_id: request.call_id.clone(),
        }),
        (NestedInput::Text(text), false) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => Ok(ResponseItem::FunctionCall {
                id: None,
                name: request.tool.clone(),
                namespace: None,
                arguments: text.clone(),
                call_id: request.call_id.clone(),
            }),
            _ => Err(format!("tool `{}` expects an object input", request.tool)),
        },
    }
}

/// What a script's promise settles with for a nested call's output: the command tools'
/// output as an object (`{output, exit_code, …}`), a patch applied as `{}` (as in Codex; a
/// patch that failed rejects with why), JSON output as the value, other text as a string.
pub(crate) fn nested_result(tool: &str, output: &ResponseItem) -> Result<NestedResult, String> {
    let text = match output {
        ResponseItem::FunctionCallOutput { output, .. }
        | ResponseItem::CustomToolCallOutput { output, .. } => output.text().into_owned(),
        _ => String::new(),
    };
    if tool == "apply_patch" {
        return if text.starts_with(keel_apply_patch::SUCCESS_HEADING) {
            Ok(NestedResult::Json("{}".to_string()))
        } else {
            Err(text)
        };
    }
    Ok(nested_value(tool, text))
}

fn nested_value(tool: &str, text: String) -> NestedResult {
    if matches!(tool, "exec_command" | "write_stdin")
        && let Some(object) = crate::unified_exec::chunk_as_object(&text)
    {
        return NestedResult::Json(object.to_string());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => NestedResult::Json(value.to_string()),
        Ok(Value::String(inner)) => NestedResult::Text(inner),
        _ => NestedResult::Text(text),
    }
}
