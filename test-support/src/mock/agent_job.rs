//! A stateless model for agent jobs: a worker's request (it carries `Job ID:` and `Item ID:`
//! lines) gets a `report_agent_job_result` call, then a closing message; any other request
//! gets one `spawn_agents_on_csv` call, then a final message. Every answer is decided from
//! the request alone, so one mock serves any number of concurrent workers, of any engine.

use serde_json::{Value, json};

use super::capture::CapturedRequest;
use super::script::{Turn, assistant_message, function_call};

/// The id after `label` (`Job ID:`, `Item ID:`) in the request's input, if present.
fn id_after(input: &str, label: &str) -> Option<String> {
    let start = input.find(label)? + label.len();
    let id: String = input[start..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!id.is_empty()).then_some(id)
}

/// The job and item a worker's request is about.
pub fn job_worker_ids(request: &CapturedRequest) -> Option<(String, String)> {
    let input = serde_json::to_string(request.input()).ok()?;
    Some((id_after(&input, "Job ID:")?, id_after(&input, "Item ID:")?))
}

/// A responder running one agent job with `job_arguments` (the `spawn_agents_on_csv`
/// arguments) and reporting `{"ok": true, "item": ID}` for every row.
pub fn agent_job_responder(
    job_arguments: Value,
) -> impl Fn(&CapturedRequest) -> Option<Turn> + Send + Sync + 'static {
    move |request| {
        let answered = !request.tool_output_call_ids().is_empty();
        if let Some((job_id, item_id)) = job_worker_ids(request) {
            return Some(if answered {
                Turn::new([assistant_message("reported")])
            } else {
                let args = json!({
                    "job_id": job_id,
                    "item_id": item_id,
                    "result": {"ok": true, "item": item_id},
                });
                Turn::new([function_call(
                    format!("report-{job_id}-{item_id}"),
                    "report_agent_job_result",
                    args.to_string(),
                )])
            });
        }
        Some(if answered {
            Turn::new([assistant_message("job finished")])
        } else {
            Turn::new([function_call(
                "job-1",
                "spawn_agents_on_csv",
                job_arguments.to_string(),
            )])
        })
    }
}
