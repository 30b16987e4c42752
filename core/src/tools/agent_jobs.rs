//! The agent-job tools: `spawn_agents_on_csv` (one worker per row, blocking until all are
//! done) and, for workers, `report_agent_job_result`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::ToolContext;
use super::agent_job_runner::{JobArgs, run_job};
use super::builtin::BuiltinTool;
use crate::turn_context::TurnStop;

/// `spawn_agents_on_csv`: one worker agent per CSV row; answers when all are done.
pub(crate) struct SpawnAgentsOnCsvTool;

impl BuiltinTool for SpawnAgentsOnCsvTool {
    type Args = JobArgs;
    const NAME: &'static str = "spawn_agents_on_csv";

    fn description(&self) -> &'static str {
        "Process a CSV file with one worker agent per row, several at once, and wait until \
         every row is done. Each worker gets `instruction` with `{column}` placeholders \
         filled from its row and reports its result with report_agent_job_result. Writes a \
         results CSV (the input columns plus status, result_json, last_error, ...) and \
         returns counts per status and its path. Calling it again with the same arguments \
         after an interruption resumes the job."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "csv_path": {"type": "string", "description": "The input CSV (header row first)."},
                "instruction": {"type": "string", "description": "The task for each row; `{column}` is replaced by the row's value."},
                "id_column": {"type": "string", "description": "A column identifying rows (copied to source_id)."},
                "output_csv_path": {"type": "string", "description": "Where to write results (default: <input>.results.csv)."},
                "output_schema": {"type": "object", "description": "JSON Schema each result must match.", "properties": {}},
                "max_concurrency": {"type": "number", "description": "Workers at once (default 16, at most agents.max_threads)."},
                "max_workers": {"type": "number", "description": "Same as max_concurrency."},
                "max_runtime_seconds": {"type": "number", "description": "Time limit per worker (default 1800)."}
            },
            "required": ["csv_path", "instruction"],
            "additionalProperties": false
        })
    }

    fn bad_arguments(&self, err: &serde_json::Error) -> String {
        json!({"error": format!("bad spawn_agents_on_csv arguments: {err}")}).to_string()
    }

    async fn run(&self, ctx: &ToolContext, args: JobArgs) -> Result<String, TurnStop> {
        run_job(
            &ctx.host,
            &ctx.turn,
            &ctx.ids,
            &ctx.cancel,
            args,
            ctx.trace.traceparent(),
        )
        .await
    }
}

/// `report_agent_job_result`: a job worker's result for its row.
pub(crate) struct ReportAgentJobResultTool;

impl BuiltinTool for ReportAgentJobResultTool {
    type Args = ReportArgs;
    const NAME: &'static str = "report_agent_job_result";

    fn description(&self) -> &'static str {
        "Record the result for your row of the agent job. Call it exactly once, with the \
         Job ID and Item ID from your instructions; `stop` true cancels the rest of the job."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "job_id": {"type": "string"},
                "item_id": {"type": "string"},
                "result": {"type": "object", "description": "Your result, matching the job's result schema.", "properties": {}},
                "stop": {"type": "boolean", "description": "Cancel the rows not yet done."}
            },
            "required": ["job_id", "item_id", "result"],
            "additionalProperties": false
        })
    }

    fn bad_arguments(&self, err: &serde_json::Error) -> String {
        json!({"error": format!("bad report_agent_job_result arguments: {err}")}).to_string()
    }

    async fn run(&self, ctx: &ToolContext, args: ReportArgs) -> Result<String, TurnStop> {
        Ok(report_agent_job_result(ctx, args).await)
    }
}

/// The arguments of `report_agent_job_result` (its schema is written out in the tool).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReportArgs {
    job_id: String,
    item_id: String,
    result: serde_json::Value,
    #[serde(default)]
    stop: Option<bool>,
}

/// `report_agent_job_result`: records a worker's result for its row.
async fn report_agent_job_result(ctx: &ToolContext, args: ReportArgs) -> String {
    let Some(worker) = ctx.host.agents().worker() else {
        return json!({"error": "only agent-job workers can report results"}).to_string();
    };
    let stop = args.stop.unwrap_or(false);
    match worker
        .report(&args.job_id, &args.item_id, args.result, stop)
        .await
    {
        Ok(outcome) => json!({
            "status": "recorded",
            "item_id": args.item_id,
            "reported_at": outcome.reported_at,
            "job_stop_requested": stop,
        })
        .to_string(),
        Err(err) => json!({ "error": err.to_string() }).to_string(),
    }
}
