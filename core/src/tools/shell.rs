//! The `shell` tool: approval, `exec_command_*` events, and the output the model sees.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::{
    Base64Bytes, CallId, EventMsg, ExecApprovalRequestEvent, ExecCommandBeginEvent,
    ExecCommandEndEvent, ExecCommandOutputDeltaEvent, ExecCommandSource, ExecCommandStatus,
    ParsedCommand, ReviewDecision,
};
use serde::Deserialize;

use super::{ToolRouter, TurnDiffTracker};
use crate::approvals::{ExecDecision, decide_exec};
use crate::exec::{ExecOutcome, ExecRequest, ExecStop, run_command, truncate_for_model};
use crate::session::turn::TurnStop;

/// Default time a command may run before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Caps on the output shown to the model.
const MODEL_OUTPUT_MAX_BYTES: usize = 10 * 1024;
const MODEL_OUTPUT_MAX_LINES: usize = 256;

#[derive(Deserialize)]
struct ShellArgs {
    command: Vec<String>,
    #[serde(default)]
    workdir: Option<PathBuf>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    with_escalated_permissions: Option<bool>,
    #[serde(default)]
    justification: Option<String>,
}

impl ToolRouter<'_> {
    /// Runs a `shell` call (or the patch it carries) and returns the text for the model.
    pub(super) async fn shell(
        &self,
        call_id: &str,
        arguments: &str,
        diff: &mut TurnDiffTracker,
    ) -> Result<String, TurnStop> {
        let args: ShellArgs = match serde_json::from_str(arguments) {
            Ok(args) => args,
            Err(err) => return Ok(format!("failed to parse shell arguments: {err}")),
        };
        if args.command.is_empty() {
            return Ok("shell: `command` must not be empty".to_string());
        }
        let cwd = match &args.workdir {
            Some(dir) => self.context.cwd.join(dir),
            None => self.context.cwd.clone(),
        };
        if let Some(found) = crate::apply_patch::maybe_parse_apply_patch_from_argv(&args.command) {
            return match found {
                Ok(invocation) => {
                    let cwd = match &invocation.workdir {
                        Some(dir) => cwd.join(dir),
                        None => cwd,
                    };
                    self.apply_patch(call_id, &invocation.patch_text, &cwd, diff)
                        .await
                }
                Err(err) => Ok(format!("apply_patch: {err}")),
            };
        }
        let call_id = CallId::new(call_id);
        let argv = args.command;
        let decision = decide_exec(
            self.context.approval_policy,
            &argv,
            args.with_escalated_permissions.unwrap_or(false),
            args.justification.as_deref(),
            self.session.is_approved_for_session(&argv),
        );
        match decision {
            ExecDecision::Run => {}
            ExecDecision::Reject(reason) => return Ok(reason),
            ExecDecision::Ask(reason) => {
                let event = EventMsg::ExecApprovalRequest(ExecApprovalRequestEvent {
                    call_id: call_id.clone(),
                    turn_id: self.ids.turn_id.clone(),
                    command: argv.clone(),
                    cwd: cwd.clone(),
                    reason,
                    parsed_cmd: parse_command(&argv),
                });
                match self.request_approval(&call_id, event).await? {
                    ReviewDecision::Approved => {}
                    ReviewDecision::ApprovedForSession => {
                        self.session.approve_for_session(argv.clone());
                    }
                    ReviewDecision::Denied => {
                        return Ok("exec command rejected by user".to_string());
                    }
                    ReviewDecision::Abort => return Err(TurnStop::Interrupted),
                }
            }
        }
        let timeout = args
            .timeout_ms
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        self.run_exec(call_id, argv, cwd, timeout).await
    }

    /// Sends an approval request event and waits for the answer (or an interrupt).
    pub(super) async fn request_approval(
        &self,
        call_id: &CallId,
        event: EventMsg,
    ) -> Result<ReviewDecision, TurnStop> {
        let rx = self.session.register_approval(call_id.clone());
        self.session.send_event(&self.ids.sub_id, event).await;
        tokio::select! {
            () = self.cancel.cancelled() => {
                self.session.forget_approval(call_id);
                Err(TurnStop::Interrupted)
            }
            decision = rx => Ok(decision.unwrap_or(ReviewDecision::Denied)),
        }
    }

    async fn run_exec(
        &self,
        call_id: CallId,
        argv: Vec<String>,
        cwd: PathBuf,
        timeout: Duration,
    ) -> Result<String, TurnStop> {
        let parsed_cmd = parse_command(&argv);
        self.session
            .send_event(
                &self.ids.sub_id,
                EventMsg::ExecCommandBegin(ExecCommandBeginEvent {
                    call_id: call_id.clone(),
                    turn_id: self.ids.turn_id.clone(),
                    command: argv.clone(),
                    cwd: cwd.clone(),
                    parsed_cmd: parsed_cmd.clone(),
                    source: ExecCommandSource::Agent,
                }),
            )
            .await;
        let request = ExecRequest {
            argv: argv.clone(),
            cwd: cwd.clone(),
            env: self.context.shell_env.clone(),
            timeout,
        };
        let session = self.session;
        let sub_id = &self.ids.sub_id;
        let result = run_command(&request, self.cancel, |stream, bytes| {
            let delta = EventMsg::ExecCommandOutputDelta(ExecCommandOutputDeltaEvent {
                call_id: call_id.clone(),
                stream,
                chunk: Base64Bytes::from(bytes),
            });
            async move { session.send_event(sub_id, delta).await }
        })
        .await;
        let outcome = match result {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(ExecStop::Interrupted)) => return Err(TurnStop::Interrupted),
            Err(err) => ExecOutcome {
                exit_code: -1,
                stdout: String::new(),
                stderr: format!("failed to start `{}`: {err}", argv.join(" ")),
                aggregated: format!("failed to start `{}`: {err}", argv.join(" ")),
                duration: Duration::ZERO,
                timed_out: false,
            },
        };
        let mut shown = outcome.aggregated.clone();
        if outcome.timed_out {
            shown.push_str(&format!(
                "\ncommand timed out after {}ms",
                timeout.as_millis()
            ));
        }
        let formatted_output =
            truncate_for_model(&shown, MODEL_OUTPUT_MAX_BYTES, MODEL_OUTPUT_MAX_LINES);
        self.session
            .send_event(
                &self.ids.sub_id,
                EventMsg::ExecCommandEnd(ExecCommandEndEvent {
                    call_id,
                    turn_id: self.ids.turn_id.clone(),
                    command: argv,
                    cwd,
                    parsed_cmd,
                    source: ExecCommandSource::Agent,
                    stdout: outcome.stdout,
                    stderr: outcome.stderr,
                    aggregated_output: outcome.aggregated,
                    exit_code: outcome.exit_code,
                    duration: outcome.duration,
                    formatted_output: formatted_output.clone(),
                    status: if outcome.exit_code == 0 {
                        ExecCommandStatus::Completed
                    } else {
                        ExecCommandStatus::Failed
                    },
                }),
            )
            .await;
        Ok(serde_json::json!({
            "output": formatted_output,
            "metadata": {
                "exit_code": outcome.exit_code,
                "duration_seconds": (outcome.duration.as_secs_f64() * 10.0).round() / 10.0,
            }
        })
        .to_string())
    }
}

/// A best-effort reading of a command for display.
pub(crate) fn parse_command(argv: &[String]) -> Vec<ParsedCommand> {
    let script = match argv {
        [shell, flag, script] if (flag == "-lc" || flag == "-c") && shell.ends_with("sh") => {
            script.clone()
        }
        _ => shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" ")),
    };
    let words = shlex::split(&script).unwrap_or_default();
    let program = words.first().map(String::as_str).unwrap_or_default();
    let last = words.iter().skip(1).rfind(|w| !w.starts_with('-')).cloned();
    let simple = !script.contains(['|', ';', '&', '>', '<']);
    let parsed = match program {
        "cat" | "head" | "tail" | "nl" if simple && last.is_some() => {
            let path = last.unwrap_or_default();
            ParsedCommand::Read {
                cmd: script.clone(),
                name: std::path::Path::new(&path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.clone()),
                path: Some(PathBuf::from(path)),
            }
        }
        "ls" | "tree" if simple => ParsedCommand::ListFiles {
            cmd: script.clone(),
            path: last,
        },
        "rg" | "grep" if simple => {
            let positional: Vec<&String> = words
                .iter()
                .skip(1)
                .filter(|w| !w.starts_with('-'))
                .collect();
            ParsedCommand::Search {
                cmd: script.clone(),
                query: positional.first().map(|s| s.to_string()),
                path: positional.get(1).map(|s| s.to_string()),
            }
        }
        _ => ParsedCommand::Unknown {
            cmd: script.clone(),
        },
    };
    vec![parsed]
}
