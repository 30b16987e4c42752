//! The readable progress stream `keel exec` prints on stderr.

use std::io::Write;

use keel_protocol::{EventMsg, SessionConfiguredEvent, StepStatus};

/// Turns events into short human-readable lines.
#[derive(Default)]
pub struct HumanRenderer {
    in_message: bool,
}

impl HumanRenderer {
    /// Prints what the session runs with.
    pub fn session_configured(&mut self, event: &SessionConfiguredEvent) {
        eprintln!(
            "keel {} | model {} ({}) | cwd {} | session {}",
            env!("CARGO_PKG_VERSION"),
            event.model,
            event.model_provider_id,
            event.cwd.display(),
            event.session_id
        );
    }

    /// Prints one event, if it is worth showing.
    pub fn event(&mut self, msg: &EventMsg) {
        let mut err = std::io::stderr().lock();
        if self.in_message && !matches!(msg, EventMsg::AgentMessageDelta(_)) {
            let _newline = writeln!(err);
            self.in_message = false;
        }
        let line = match msg {
            EventMsg::AgentMessageDelta(delta) => {
                self.in_message = true;
                let _partial = write!(err, "{}", delta.delta);
                return;
            }
            EventMsg::AgentReasoning(reasoning) => format!("thinking: {}", reasoning.text),
            EventMsg::ExecCommandBegin(begin) => format!("$ {}", shell_words(&begin.command)),
            EventMsg::ExecCommandEnd(end) => format!(
                "  exit {} in {:.1}s{}",
                end.exit_code,
                end.duration.as_secs_f64(),
                tail(&end.aggregated_output)
            ),
            EventMsg::PatchApplyEnd(end) if end.success => {
                format!("patch applied:\n{}", end.stdout.trim_end())
            }
            EventMsg::PatchApplyEnd(end) => format!("patch failed: {}", end.stderr.trim_end()),
            EventMsg::PlanUpdate(plan) => {
                let mut text = String::from("plan:");
                for item in &plan.plan {
                    let mark = match item.status {
                        StepStatus::Completed => "[x]",
                        StepStatus::InProgress => "[>]",
                        StepStatus::Pending => "[ ]",
                    };
                    text.push_str(&format!("\n  {mark} {}", item.step));
                }
                text
            }
            EventMsg::ExecApprovalRequest(request) => format!(
                "approval needed for `{}`; denied (keel exec cannot ask)",
                shell_words(&request.command)
            ),
            EventMsg::ApplyPatchApprovalRequest(_) => {
                "patch approval needed; denied (keel exec cannot ask)".to_string()
            }
            EventMsg::StreamError(notice) => format!("retrying: {}", notice.message),
            EventMsg::Warning(warning) => format!("warning: {}", warning.message),
            EventMsg::BackgroundEvent(event) => event.message.clone(),
            EventMsg::Error(error) => format!("error: {}", error.message),
            EventMsg::TurnAborted(_) => "turn interrupted".to_string(),
            EventMsg::TokenCount(count) => match &count.info {
                Some(info) => format!("tokens used: {}", info.total_token_usage.total_tokens),
                None => return,
            },
            _ => return,
        };
        let _line = writeln!(err, "{line}");
    }
}

fn shell_words(argv: &[String]) -> String {
    match argv {
        [shell, flag, script] if (flag == "-lc" || flag == "-c") && shell.ends_with("sh") => {
            script.clone()
        }
        _ => argv.join(" "),
    }
}

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
