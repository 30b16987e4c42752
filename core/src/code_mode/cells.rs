//! A conversation's code-mode cells: each `exec` call starts a script ([`super::script`]) and
//! a driver task that runs the script's tool calls (through the same path as the model's own
//! calls), collects its output and records how it ended. `exec` and `wait` only wait on the
//! cell — until it ends, asks to yield, or the yield time passes — and take what it produced
//! since the last call. Values scripts `store()` live here too, for the conversation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use keel_protocol::{EventMsg, ToolCallBeginEvent, ToolCallEndEvent};
use tokio::sync::Notify;

use super::cell_output::{CellItem, CellStatus};
use super::script;
use super::script_protocol::{
    HostReply, NestedInput, NestedResult, ScriptEnd, ScriptEvent, ScriptStart,
};
use crate::tools::{ScriptTool, ToolContext};

/// One nested call a script made: which tool, with what, under which call id.
#[derive(Debug, Clone)]
pub(crate) struct NestedRequest {
    /// The id the call is known by in events (`<exec call id>/<n>`).
    pub call_id: String,
    /// The tool's registered name.
    pub tool: String,
    /// What the script passed.
    pub input: NestedInput,
}

/// Runs one nested call the way the model's own calls run (hooks, approvals, sandbox,
/// events); the result is what the script's promise settles with.
pub(crate) type NestedRunner =
    Arc<dyn Fn(NestedRequest) -> BoxFuture<'static, Result<NestedResult, String>> + Send + Sync>;

/// The cells and stored values of one conversation.
#[derive(Default)]
pub(crate) struct CellStore {
    next_id: AtomicU64,
    cells: Mutex<HashMap<String, Arc<Cell>>>,
    stored: Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
}

/// One script's shared state.
pub(super) struct Cell {
    id: String,
    state: Mutex<CellState>,
    changed: Notify,
    stop: script::ScriptStopper,
}

#[derive(Default)]
struct CellState {
    /// Produced since the last `exec`/`wait` took the output.
    items: Vec<CellItem>,
    /// `notify()` values since the last call took them: each becomes an output item of its
    /// own after the call's output.
    notes: Vec<String>,
    /// `yield_control()` was called since.
    yield_asked: bool,
    /// How the script ended, once it has.
    end: Option<ScriptEnd>,
}

impl CellStore {
    /// Starts `source` as a new cell; the driver runs its calls through `nested`.
    pub(super) fn start(
        self: &Arc<Self>,
        source: String,
        tools: &[ScriptTool],
        nested: NestedRunner,
        ctx: ToolContext,
    ) -> Result<Arc<Cell>, String> {
        let stored = self
            .stored
            .lock()
            .map(|stored| stored.clone())
            .unwrap_or_default();
        let handle = script::start(ScriptStart {
            source: source.clone(),
            tools: tools
                .iter()
                .map(|tool| (tool.js_name.clone(), tool.description.clone()))
                .collect(),
            stored,
        })
        .map_err(|err| format!("cannot start the script: {err}"))?;
        let id = (self.next_id.fetch_add(1, Ordering::SeqCst) + 1).to_string();
        let cell = Arc::new(Cell {
            id: id.clone(),
            state: Mutex::new(CellState::default()),
            changed: Notify::new(),
            stop: handle.stopper(),
        });
        if let Ok(mut cells) = self.cells.lock() {
            cells.insert(id, cell.clone());
        }
        let names: HashMap<String, String> = tools
            .iter()
            .map(|tool| (tool.js_name.clone(), tool.tool.clone()))
            .collect();
        tokio::spawn(drive(
            cell.clone(),
            handle,
            names,
            nested,
            self.stored.clone(),
            ctx,
            source,
        ));
        Ok(cell)
    }

    /// The running cell `id`.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Cell>> {
        self.cells.lock().ok()?.get(id).cloned()
    }

    /// Forgets a cell whose end was reported.
    pub(super) fn forget(&self, id: &str) {
        if let Ok(mut cells) = self.cells.lock() {
            cells.remove(id);
        }
    }

    /// Stops every running cell (the turn that ran them is over).
    pub(crate) fn terminate_all(&self) {
        let cells: Vec<Arc<Cell>> = self
            .cells
            .lock()
            .map(|mut cells| cells.drain().map(|(_, cell)| cell).collect())
            .unwrap_or_default();
        for cell in cells {
            cell.stop.terminate();
        }
    }
}

impl Cell {
    /// The cell's id, as `wait` takes it.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// Stops the script.
    pub(super) fn terminate(&self) {
        self.stop.terminate();
    }

    /// Waits until the script ends, asks to yield, or `yield_after` passes (or `cancel`
    /// fires); then takes what it produced since the last call.
    pub(super) async fn wait_and_take(
        &self,
        yield_after: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> (CellStatus, Vec<CellItem>) {
        let deadline = tokio::time::Instant::now() + yield_after;
        loop {
            let notified = self.changed.notified();
            if let Some(taken) = self.take_if_ready() {
                return taken;
            }
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(deadline) => break,
                () = cancel.cancelled() => {
                    self.terminate();
                    break;
                }
            }
        }
        self.take_if_ready().unwrap_or_else(|| self.take())
    }

    /// The output so far, when the script has ended or asked to yield.
    fn take_if_ready(&self) -> Option<(CellStatus, Vec<CellItem>)> {
        let ready = self
            .state
            .lock()
            .map(|state| state.end.is_some() || state.yield_asked)
            .unwrap_or(true);
        ready.then(|| self.take())
    }

    /// The output since the last call, and where the script stands.
    fn take(&self) -> (CellStatus, Vec<CellItem>) {
        let Ok(mut state) = self.state.lock() else {
            return (
                CellStatus::Failed("the cell's state was lost".into()),
                Vec::new(),
            );
        };
        state.yield_asked = false;
        let items = std::mem::take(&mut state.items);
        let status = match &state.end {
            None => CellStatus::Running(self.id.clone()),
            Some(ScriptEnd::Completed) => CellStatus::Completed,
            Some(ScriptEnd::Failed(error)) => CellStatus::Failed(error.clone()),
            Some(ScriptEnd::Terminated) => CellStatus::Terminated,
        };
        (status, items)
    }

    /// The `notify()` values since the last call took them.
    pub(super) fn take_notes(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|mut state| std::mem::take(&mut state.notes))
            .unwrap_or_default()
    }

    fn update(&self, change: impl FnOnce(&mut CellState)) {
        if let Ok(mut state) = self.state.lock() {
            change(&mut state);
        }
        self.changed.notify_waiters();
    }
}

/// Pumps one script: its output into the cell, its tool calls through `nested` (several at
/// once when it awaits several), its stored values into the conversation's; reports the cell
/// to clients as a call of `exec` from start to end.
async fn drive(
    cell: Arc<Cell>,
    mut handle: script::ScriptHandle,
    names: HashMap<String, String>,
    nested: NestedRunner,
    stored: Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
    ctx: ToolContext,
    source: String,
) {
    let started = Instant::now();
    let arguments = serde_json::json!({"cell_id": cell.id(), "source": source});
    ctx.send_event(EventMsg::ToolCallBegin(ToolCallBeginEvent {
        call_id: ctx.call_id().clone(),
        turn_id: ctx.turn_id().clone(),
        tool: "exec".to_string(),
        arguments: arguments.clone(),
    }))
    .await;
    let mut calls = FuturesUnordered::new();
    let mut count = 0u64;
    let end = loop {
        tokio::select! {
            event = handle.events.recv() => match event {
                None => break ScriptEnd::Terminated,
                Some(ScriptEvent::Finished(end)) => break end,
                Some(ScriptEvent::Text(text)) => {
                    cell.update(|state| state.items.push(CellItem::Text(text)));
                }
                Some(ScriptEvent::Notify(text)) => {
                    cell.update(|state| state.notes.push(text));
                }
                Some(ScriptEvent::Image(url)) => {
                    cell.update(|state| state.items.push(CellItem::Image(url)));
                }
                Some(ScriptEvent::YieldControl) => cell.update(|state| state.yield_asked = true),
                Some(ScriptEvent::Store(key, value)) => {
                    if let Ok(mut stored) = stored.lock() {
                        stored.insert(key, value);
                    }
                }
                Some(ScriptEvent::ToolCall { id, name, input }) => {
                    count += 1;
                    let request = NestedRequest {
                        call_id: format!("{}/{count}", ctx.call_id()),
                        tool: names.get(&name).cloned().unwrap_or(name),
                        input,
                    };
                    let run = nested(request);
                    calls.push(async move { (id, run.await) });
                }
            },
            Some((id, result)) = calls.next(), if !calls.is_empty() => {
                handle.reply(HostReply::ToolResult { id, result });
            }
        }
    };
    let (output, success) = match &end {
        ScriptEnd::Completed => ("completed".to_string(), true),
        ScriptEnd::Failed(error) => (error.clone(), false),
        ScriptEnd::Terminated => ("terminated".to_string(), false),
    };
    cell.update(|state| state.end = Some(end));
    ctx.send_event(EventMsg::ToolCallEnd(ToolCallEndEvent {
        call_id: ctx.call_id().clone(),
        turn_id: ctx.turn_id().clone(),
        tool: "exec".to_string(),
        arguments,
        output,
        success,
        duration: started.elapsed(),
    }))
    .await;
}
