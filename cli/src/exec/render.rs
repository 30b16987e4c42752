//! The readable progress stream `keel exec` prints on stderr, from app-server notifications.

use std::io::Write;

use keel_protocol::app_server::{
    PatchApplyStatus, ServerNotification, ThreadItem, ThreadStartResponse, TurnPlanStepStatus,
};

/// Turns notifications into short human-readable lines.
#[derive(Default)]
pub struct HumanRenderer {
    /// Whether lines carry ANSI colours (`--color`).
    color: bool,
    /// Sub-agent threads started and turns they finished, for the progress line.
    agents_started: u64,
    agents_finished: u64,
    last_agents_line: Option<std::time::Instant>,
    in_message: bool,
    /// Tokens of the responses of the turn in progress (the sum of each update's `last`).
    turn_tokens: u64,
}

impl HumanRenderer {
    /// A renderer, coloured or not.
    pub fn new(color: bool) -> Self {
        Self {
            color,
            ..Self::default()
        }
    }

    /// `text` in the ANSI style `code` when colours are on.
    fn paint(&self, code: &str, text: String) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text
        }
    }

    /// Prints what the thread runs with.
    pub fn thread_started(&mut self, response: &ThreadStartResponse) {
        eprintln!(
            "keel {} | model {} ({}) | cwd {} | thread {}",
            env!("CARGO_PKG_VERSION"),
            response.settings.model,
            response.settings.model_provider,
            response.settings.cwd.display(),
            response.thread.id
        );
    }

    /// Counts a sub-agent thread's notification and, at most once a second, prints how many
    /// sub-agents run and finished (their own output is not shown).
    pub fn sub_agent_notification(&mut self, notification: &ServerNotification) {
        match notification {
            ServerNotification::ThreadStarted(_) => self.agents_started += 1,
            ServerNotification::TurnCompleted(_) => self.agents_finished += 1,
            _ => return,
        }
        let due = self
            .last_agents_line
            .is_none_or(|at| at.elapsed() >= std::time::Duration::from_secs(1));
        if due {
            self.last_agents_line = Some(std::time::Instant::now());
            eprintln!(
                "agents: {} started, {} turns finished",
                self.agents_started, self.agents_finished
            );
        }
    }

    /// Prints one notification, if it is worth showing.
    pub fn notification(&mut self, notification: &ServerNotification) {
        let mut err = std::io::stderr().lock();
        if let ServerNotification::AgentMessageDelta(delta) = notification {
            self.in_message = true;
            let _partial = write!(err, "{}", delta.delta);
            return;
        }
        let line = match notification {
            ServerNotification::ItemStarted(started) => match &started.item {
                ThreadItem::CommandExecution {
                    command,
                    process_id: Some(process_id),
                    ..
                } => self.paint(BOLD, format!("$ {command}   [session {process_id}]")),
                ThreadItem::CommandExecution { command, .. } => {
                    self.paint(BOLD, format!("$ {command}"))
                }
                ThreadItem::McpToolCall(call) => format!("mcp: {}/{}", call.server, call.tool),
                _ => return,
            },
            ServerNotification::TerminalInteraction(interaction) => format!(
                "  [session {}] < {}",
                interaction.process_id,
                interaction.stdin.escape_debug()
            ),
            ServerNotification::ItemCompleted(done) => match &done.item {
                ThreadItem::CommandExecution {
                    exit_code,
                    duration_ms,
                    aggregated_output,
                    status,
                    ..
                } => match exit_code {
                    Some(code) => {
                        let exit = self
                            .paint(if *code == 0 { GREEN } else { RED }, format!("exit {code}"));
                        format!(
                            "  {exit} in {:.1}s{}",
                            duration_ms.unwrap_or_default() as f64 / 1000.0,
                            tail(aggregated_output.as_deref().unwrap_or_default())
                        )
                    }
                    None => self.paint(RED, format!("  not run ({status:?})")),
                },
                ThreadItem::FileChange {
                    changes, status, ..
                } => {
                    let files: Vec<String> = changes
                        .iter()
                        .map(|c| c.path.display().to_string())
                        .collect();
                    match status {
                        PatchApplyStatus::Completed => {
                            format!("patch applied: {}", files.join(", "))
                        }
                        other => format!("patch not applied ({other:?}): {}", files.join(", ")),
                    }
                }
                ThreadItem::Reasoning { summary, .. } => {
                    self.paint(DIM, format!("thinking: {}", summary.join(" ")))
                }
                ThreadItem::CollabAgentToolCall(call) => {
                    let states: Vec<String> = call
                        .receiver_thread_ids
                        .iter()
                        .map(|id| match call.agents_states.get(id) {
                            Some(state) => format!("{id} ({:?})", state.status),
                            None => id.clone(),
                        })
                        .collect();
                    format!(
                        "agents: {:?} {:?} {}",
                        call.tool,
                        call.status,
                        states.join(", ")
                    )
                }
                ThreadItem::McpToolCall(call) => match &call.error {
                    Some(error) => format!("  mcp call failed: {}", error.message),
                    None => format!(
                        "  mcp call done in {:.1}s",
                        call.duration_ms.unwrap_or_default() as f64 / 1000.0
                    ),
                },
                ThreadItem::AgentMessage { .. } if self.in_message => {
                    self.in_message = false;
                    String::new()
                }
                _ => return,
            },
            ServerNotification::TurnPlanUpdated(plan) => {
                let mut text = String::from("plan:");
                for step in &plan.plan {
                    let mark = match step.status {
                        TurnPlanStepStatus::Completed => "[x]",
                        TurnPlanStepStatus::InProgress => "[>]",
                        TurnPlanStepStatus::Pending => "[ ]",
                    };
                    text.push_str(&format!("\n  {mark} {}", step.step));
                }
                text
            }
            ServerNotification::McpServerStatusUpdated(update) => match &update.error {
                Some(error) => format!("keel: {error}"),
                None => return,
            },
            ServerNotification::Error(error) if error.will_retry => {
                self.paint(YELLOW, format!("retrying: {}", error.error.message))
            }
            ServerNotification::Error(error) => {
                self.paint(RED, format!("keel: {}", error.error.message))
            }
            ServerNotification::Warning(warning) => {
                self.paint(YELLOW, format!("keel: warning: {}", warning.message))
            }
            ServerNotification::TurnStarted(_) => {
                self.turn_tokens = 0;
                return;
            }
            ServerNotification::ThreadTokenUsageUpdated(usage) => {
                self.turn_tokens += usage.token_usage.last.total_tokens;
                format!(
                    "tokens used: {} ({} this turn)",
                    usage.token_usage.total.total_tokens, self.turn_tokens
                )
            }
            _ => return,
        };
        if self.in_message {
            // Streamed text that no completed message closed (a retry, an error): end its
            // line so the next one starts on its own.
            self.in_message = false;
            let _newline = writeln!(err);
        }
        let _line = writeln!(err, "{line}");
    }
}

/// ANSI styles of the readable stream.
const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";

/// The last few lines of output, indented, for the progress stream.
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines.len().saturating_sub(5);
    let mut text = String::new();
    if start > 0 {
        text.push_str(&format!("\n  … {start} more lines"));
    }
    for line in &lines[start..] {
        text.push_str(&format!("\n  {line}"));
    }
    text
}
