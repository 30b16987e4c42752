//! `clock.sleep`, offered to code-mode models: waits, and says how long it waited. The wait
//! ends early when the turn is interrupted.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use keel_protocol::EventMsg;
use serde::Deserialize;

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};

/// The longest sleep a call may ask for (12 hours, as Codex bounds it).
const MAX_SLEEP_MS: f64 = 43_200_000.0;

/// `sleep` in the `clock` namespace.
pub(crate) struct SleepTool;

#[derive(Deserialize)]
struct SleepArgs {
    duration_ms: f64,
}

impl DynTool for SleepTool {
    fn name(&self) -> &str {
        "sleep"
    }

    fn spec(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "function",
            "name": "sleep",
            "description": "Waits the given time, then says how long it waited. Ends early when new input arrives for the turn (or it is interrupted).",
            "strict": false,
            "parameters": {
                "type": "object",
                "properties": {
                    "duration_ms": {"type": "number", "description": "How long to wait, from 1 to 43200000 ms."}
                },
                "required": ["duration_ms"],
                "additionalProperties": false
            }
        })
    }

    fn approval(&self) -> ToolApproval {
        ToolApproval::Never
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let args: SleepArgs = serde_json::from_str(input.text()).map_err(|err| {
                ToolError::Respond(format!("invalid arguments for `sleep`: {err}"))
            })?;
            if !(1.0..=MAX_SLEEP_MS).contains(&args.duration_ms) {
                return Err(ToolError::Respond(format!(
                    "`duration_ms` must be between 1 and {MAX_SLEEP_MS}, got {}",
                    args.duration_ms
                )));
            }
            let started = Instant::now();
            let sleep = keel_protocol::SleepEvent {
                call_id: ctx.call_id().to_string(),
                duration_ms: args.duration_ms as u64,
            };
            // Listening before the sleep is announced, so early input still cuts it short.
            let input = ctx.host.input_arrived();
            ctx.host
                .send_event(&ctx.ids.sub_id, EventMsg::SleepStarted(sleep.clone()))
                .await;
            let ended = tokio::select! {
                () = tokio::time::sleep(Duration::from_secs_f64(args.duration_ms / 1000.0)) => {
                    "Sleep completed."
                }
                () = input => "Sleep interrupted by new input.",
                () = ctx.cancellation().cancelled() => {
                    ctx.host.send_event(&ctx.ids.sub_id, EventMsg::SleepEnded(sleep)).await;
                    return Err(ToolError::Interrupted);
                }
            };
            ctx.host
                .send_event(&ctx.ids.sub_id, EventMsg::SleepEnded(sleep))
                .await;
            Ok(format!(
                "Wall time: {:.4} seconds\n{ended}",
                started.elapsed().as_secs_f64()
            ))
        })
    }
}
