//! The agent-job tools: `spawn_agents_on_csv` (one worker per row, blocking until all are
//! done) and, for workers, `report_agent_job_result`.

use serde::Deserialize;
use serde_json::json;

use super::ToolContext;
use super::agent_job_runner::{JobArgs, run_job};
use crate::turn_context::TurnStop;

super::builtin_tool!(
    /// `spawn_agents_on_csv`: one worker agent per CSV row; answers when all are done.
    SpawnAgentsOnCsvTool,
    "spawn_agents_on_csv",
    super::agent_spec::spawn_agents_on_csv_tool(),
    |call, _call_id, arguments| spawn_agents_on_csv(call, arguments).await
);

super::builtin_tool!(
    /// `report_agent_job_result`: a job worker's result for its row.
    ReportAgentJobResultTool,
    "report_agent_job_result",
    super::agent_spec::report_agent_job_result_tool(),
    |call, _call_id, arguments| Ok(report_agent_job_result(call, arguments).await)
);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportArgs {
    job_id: String,
    item_id: String,
    result: serde_json::Value,
    #[serde(default)]
    stop: Option<bool>,
}

/// `spawn_agents_on_csv`: runs the job and answers with its summary.
async fn spawn_agents_on_csv(ctx: &ToolContext, arguments: &str) -> Result<String, TurnStop> {
    let args: JobArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => {
            return Ok(json!({
                "error": format!("bad spawn_agents_on_csv arguments: {err}")
            })
            .to_string());
        }
    };
    run_job(&ctx.host, &ctx.turn, &ctx.ids, &ctx.cancel, args).await
}

/// `report_agent_job_result`: records a worker's result for its row.
async fn report_agent_job_result(ctx: &ToolContext, arguments: &str) -> String {
    let Some(worker) = ctx.host.agents().worker() else {
        return json!({"error": "only agent-job workers can report results"}).to_string();
    };
    let args: ReportArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => {
            return json!({
                "error": format!("bad report_agent_job_result arguments: {err}")
            })
            .to_string();
        }
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
