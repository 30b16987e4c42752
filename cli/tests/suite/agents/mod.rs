//! Sub-agents and agent jobs through the real binaries against a stateless mock: every
//! answer is decided from the request itself (a worker's request carries its `Job ID:` and
//! `Item ID:` lines), so any number of agents can share one mock.

mod agent_tasks;
mod jobs;
mod resume;
mod shared_store;
mod sub_agents;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message, function_call};
use serde_json::Value;

/// A worker's identity and row, read from its first message.
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    pub job_id: String,
    pub item_id: String,
    pub row: Value,
}

/// Every text the request's input carries, joined by newlines.
pub(crate) fn input_text(request: &CapturedRequest) -> String {
    let mut text = String::new();
    for item in request.input() {
        for part in item["content"].as_array().into_iter().flatten() {
            if let Some(t) = part["text"].as_str() {
                text.push_str(t);
                text.push('\n');
            }
        }
    }
    text
}

/// The worker a request comes from, if it comes from one.
pub(crate) fn worker_of(request: &CapturedRequest) -> Option<Worker> {
    let text = input_text(request);
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let job_id = field("Job ID:")?;
    let item_id = field("Item ID:")?;
    let row_line = text
        .split("Row (JSON):\n")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or("{}");
    Some(Worker {
        job_id,
        item_id,
        row: serde_json::from_str(row_line).unwrap_or(Value::Null),
    })
}

/// The call that reports `result` for the worker's row, with a call id unique to it.
pub(crate) fn report_call(worker: &Worker, suffix: &str, result: Value, stop: bool) -> Turn {
    let args = serde_json::json!({
        "job_id": worker.job_id,
        "item_id": worker.item_id,
        "result": result,
        "stop": stop,
    });
    Turn::new([function_call(
        format!("report-{}-{}-{suffix}", worker.job_id, worker.item_id),
        "report_agent_job_result",
        args.to_string(),
    )])
}

/// What the mock saw of the workers.
#[derive(Default)]
pub(crate) struct WorkerStats {
    state: Mutex<StatsState>,
}

#[derive(Default)]
struct StatsState {
    alive: usize,
    max_alive: usize,
    first_requests: HashMap<String, usize>,
}

impl WorkerStats {
    fn started(&self, item: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.alive += 1;
        state.max_alive = state.max_alive.max(state.alive);
        *state.first_requests.entry(item.to_string()).or_default() += 1;
    }

    fn finished(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.alive = state.alive.saturating_sub(1);
    }

    /// The most workers that were between their first and last request at once.
    pub(crate) fn max_alive(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .max_alive
    }

    /// How many times each item's worker started.
    pub(crate) fn first_requests(&self) -> HashMap<String, usize> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first_requests
            .clone()
    }
}

/// How a worker answers: given the worker and its request, the next turn and whether it is
/// the worker's last.
pub(crate) type WorkerScript = Arc<dyn Fn(&Worker, &CapturedRequest) -> (Turn, bool) + Send + Sync>;

/// The usual worker: reports `{"upper": NAME}` from its row's `name`, then says it is done.
pub(crate) fn reporting_worker() -> WorkerScript {
    Arc::new(|worker, request| {
        if request.tool_output_call_ids().is_empty() {
            let name = worker.row["name"]
                .as_str()
                .unwrap_or_default()
                .to_uppercase();
            let turn = report_call(worker, "1", serde_json::json!({ "upper": name }), false)
                .with_event_delay(std::time::Duration::from_millis(20));
            (turn, false)
        } else {
            (Turn::new([assistant_message("reported")]), true)
        }
    })
}

/// A mock whose main agent makes `calls` one after the other (each once the previous one
/// has its output), then answers `FINAL` followed by every output; workers follow `worker`.
pub(crate) async fn job_mock(
    calls: Vec<(&'static str, &'static str, Value)>,
    worker: WorkerScript,
) -> anyhow::Result<(MockModelServer, Arc<WorkerStats>)> {
    let stats = Arc::new(WorkerStats::default());
    let seen = stats.clone();
    let mock = MockModelServer::builder()
        .responder(move |request| {
            if let Some(worker_id) = worker_of(request) {
                if request.tool_output_call_ids().is_empty() {
                    seen.started(&worker_id.item_id);
                }
                let (turn, last) = worker(&worker_id, request);
                if last {
                    seen.finished();
                }
                return Some(turn);
            }
            for (call_id, tool, args) in &calls {
                if request.tool_output(call_id).is_none() {
                    return Some(Turn::new([function_call(
                        *call_id,
                        *tool,
                        args.to_string(),
                    )]));
                }
            }
            let outputs: Vec<String> = calls
                .iter()
                .filter_map(|(call_id, _, _)| request.tool_output(call_id))
                .map(|output| output.as_str().unwrap_or_default().to_string())
                .collect();
            Some(Turn::new([assistant_message(format!(
                "FINAL {}",
                outputs.join("\n")
            ))]))
        })
        .start()
        .await?;
    Ok((mock, stats))
}

/// Reads a results CSV into header and rows.
pub(crate) fn read_csv(path: &std::path::Path) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
    let mut reader = csv::Reader::from_path(path)?;
    let header = reader.headers()?.iter().map(str::to_string).collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        rows.push(record?.iter().map(str::to_string).collect());
    }
    Ok((header, rows))
}
