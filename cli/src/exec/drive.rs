//! One turn of `keel exec`: start it, print what happens in the chosen output format,
//! answer what nobody is there to answer, and end on the turn's own completion.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use keel_app_server::{AppServerClient, InProcessEvent};
use keel_protocol::MethodTable;
use keel_protocol::app_server::{
    ReviewStartParams, ReviewTarget, ServerNotification, ServerRequest, ThreadItem,
    ThreadStartResponse, TurnInterruptParams, TurnStartParams, UserInput, client_request,
};
use keel_protocol::exec_events::ExecEvent;

use super::args::UnattendedElicitation;
use super::jsonl::JsonlStream;
use super::outcome::{TurnOutcome, turn_outcome};
use super::render::HumanRenderer;
use crate::failure::usage;

/// Longest `keel exec` waits at its end for the session to shut down (its `SessionEnd`
/// hooks).
const SESSION_END_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// `keel review`'s exit code when the reviewer judged the patch incorrect.
pub const REVIEW_FOUND_PROBLEMS: u8 = 3;

/// What stdout carries.
pub enum Output {
    /// Progress on stderr, the final message on stdout.
    Human(HumanRenderer),
    /// `codex exec --json`'s JSON Lines.
    Jsonl(JsonlStream),
    /// Keel's app-server notifications, one JSON line each.
    AppServerEvents,
}

/// What the turn is about.
pub struct TurnRequest<'a> {
    /// The thread, as started, resumed or forked.
    pub thread: ThreadStartResponse,
    /// The prompt and attachments (ignored for a review).
    pub input: Vec<UserInput>,
    /// Review this instead of running the prompt (`keel review`).
    pub review: Option<ReviewTarget>,
    /// The JSON Schema the answer must match.
    pub output_schema: Option<serde_json::Value>,
    /// Where `-o` writes the last message.
    pub last_message_file: Option<&'a Path>,
    /// Configuration warnings to show in the stream.
    pub warnings: Vec<String>,
    /// What an MCP server's question gets.
    pub elicitation: UnattendedElicitation,
}

/// Starts the turn and prints notifications until it completes.
pub async fn drive<C: AppServerClient>(
    client: &C,
    request: TurnRequest<'_>,
    mut output: Output,
) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let thread_id = request.thread.thread.id.clone();
    let last_message_file = request.last_message_file;
    let request_elicitation = request.elicitation;
    match &mut output {
        Output::Human(renderer) => renderer.thread_started(&request.thread),
        Output::Jsonl(stream) => {
            write_event(&stdout, &JsonlStream::thread_started(&thread_id))?;
            for warning in request.warnings {
                let line = stream.warning(warning);
                write_event(&stdout, &line)?;
            }
        }
        Output::AppServerEvents => {}
    }
    // Listening from before the turn starts, on one stream that queues deliveries: a Ctrl-C
    // is never lost between two waits.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")?;
    let turn = match request.review {
        Some(target) => {
            client
                .request::<client_request::ReviewStart>(ReviewStartParams {
                    thread_id: thread_id.clone(),
                    target,
                    delivery: None,
                })
                .await
                .map_err(|err| usage(err.to_string()))?
                .turn
        }
        None => {
            client
                .request::<client_request::TurnStart>(TurnStartParams {
                    thread_id: thread_id.clone(),
                    input: request.input,
                    cwd: None,
                    approval_policy: None,
                    sandbox_policy: None,
                    permissions: None,
                    model: None,
                    effort: None,
                    output_schema: request.output_schema,
                    collaboration_mode: None,
                    environments: None,
                })
                .await?
                .turn
        }
    };
    let turn_id = turn.id;
    let mut interrupted = false;
    // A review's verdict, once its report is in.
    let mut patch_incorrect = false;
    loop {
        let event = tokio::select! {
            event = client.next_event() => event.context("the in-process app-server stopped")?,
            _ = interrupts.recv() => {
                if interrupted {
                    // A second Ctrl-C: stop waiting for the turn to wind down (the commands'
                    // process groups are killed on the way out).
                    eprintln!("keel: interrupted again; exiting");
                    std::process::exit(130);
                }
                interrupted = true;
                eprintln!("interrupting…");
                client
                    .request::<client_request::TurnInterrupt>(TurnInterruptParams {
                        thread_id: thread_id.clone(),
                        turn_id: turn_id.clone(),
                    })
                    .await?;
                continue;
            }
        };
        let (id, asked) = match event {
            InProcessEvent::Notification(notification) => {
                // `keel exec` follows its own thread; sub-agents show only as a count.
                if notification
                    .thread_id()
                    .is_some_and(|id| id != thread_id.as_str())
                {
                    if let Output::Human(renderer) = &mut output {
                        renderer.sub_agent_notification(&notification);
                    }
                    continue;
                }
                match &mut output {
                    Output::Human(renderer) => renderer.notification(&notification),
                    Output::Jsonl(stream) => {
                        for line in stream.lines(&notification) {
                            write_event(&stdout, &line)?;
                        }
                    }
                    Output::AppServerEvents => {
                        let (method, params) = notification.clone().into_method_and_params()?;
                        write_line(
                            &stdout,
                            &serde_json::json!({"method": method, "params": params}).to_string(),
                        )?;
                    }
                }
                if let ServerNotification::ItemCompleted(done) = &notification
                    && let ThreadItem::ExitedReviewMode {
                        review_output: Some(output),
                        ..
                    } = &done.item
                {
                    patch_incorrect =
                        serde_json::from_value::<keel_protocol::ReviewOutput>(output.clone())
                            .is_ok_and(|output| output.is_patch_incorrect());
                }
                if let Some(outcome) = turn_outcome(&notification, &thread_id, &turn_id) {
                    if let (Some(file), TurnOutcome::Completed(message)) =
                        (last_message_file, &outcome)
                    {
                        // As `codex exec -o`: exactly the message, or an empty file (and a
                        // warning) when the turn ended without one; a failed turn leaves the
                        // file alone.
                        if message.is_none() {
                            eprintln!(
                                "keel: warning: no last agent message; wrote empty content to {}",
                                file.display()
                            );
                        }
                        std::fs::write(file, message.as_deref().unwrap_or_default()).with_context(
                            || format!("writing the last message to {}", file.display()),
                        )?;
                    }
                    if let Output::Human(_) = output {
                        match &outcome {
                            TurnOutcome::Completed(Some(message)) => write_line(&stdout, message)?,
                            TurnOutcome::Interrupted => eprintln!("keel: turn interrupted"),
                            _ => {}
                        }
                    }
                    // The session ends with the run: its end-of-session hooks finish first.
                    client.shutdown(SESSION_END_LIMIT).await;
                    let code = match outcome.exit_code() {
                        0 if patch_incorrect => REVIEW_FOUND_PROBLEMS,
                        code => code,
                    };
                    return Ok(ExitCode::from(code));
                }
                continue;
            }
            InProcessEvent::ServerRequest { id, request } => (id, request),
            InProcessEvent::Lagged { skipped } => {
                // Not expected: this client waits for its reader instead of skipping.
                tracing::warn!("{skipped} streaming updates were skipped");
                continue;
            }
        };
        client
            .respond(id, unattended_answer(asked, request_elicitation))
            .await?;
    }
}

/// The answer to a server request when nobody is there to ask: questions go unanswered,
/// approvals are declined, MCP questions declined or answered with their defaults as
/// `elicitation` says; each said on stderr.
pub(crate) fn unattended_answer(
    request: ServerRequest,
    elicitation: UnattendedElicitation,
) -> serde_json::Value {
    match request {
        ServerRequest::ToolRequestUserInput(asked) => {
            let questions: Vec<&str> = asked
                .questions
                .iter()
                .map(|q| q.question.as_str())
                .collect();
            eprintln!(
                "the model asked: {}; keel exec has no user to ask, so it was told nobody \
                 answered",
                questions.join(" / ")
            );
            serde_json::json!({"answers": {}})
        }
        ServerRequest::McpServerElicitation(asked) => {
            let defaults = (elicitation == UnattendedElicitation::AcceptDefaults)
                .then(|| form_defaults(&asked.requested_schema))
                .flatten();
            if let Some(content) = defaults {
                eprintln!(
                    "MCP server `{}` asked: {}; answered with the form's defaults \
                     (--mcp-elicitation accept-defaults)",
                    asked.server_name, asked.message
                );
                return serde_json::json!({"action": "accept", "content": content});
            }
            eprintln!(
                "MCP server `{}` asked: {}; keel exec has no user to ask, so it declined",
                asked.server_name, asked.message
            );
            serde_json::json!({"action": "decline"})
        }
        ServerRequest::DynamicToolCall(call) => {
            // keel exec registers no tools of its own, so no call should come here.
            let answer = keel_protocol::DynamicToolResponse::failure(format!(
                "keel exec has no tool `{}`",
                call.tool
            ));
            serde_json::to_value(answer).unwrap_or_default()
        }
        ServerRequest::CommandExecutionRequestApproval(p) => {
            eprintln!(
                "approval needed for command `{}`; declined (keel exec cannot ask)",
                p.command.clone().unwrap_or_default()
            );
            serde_json::json!({"decision": "decline"})
        }
        ServerRequest::FileChangeRequestApproval(_) => {
            eprintln!("approval needed for a patch; declined (keel exec cannot ask)");
            serde_json::json!({"decision": "decline"})
        }
    }
}

/// A form's answer made of its defaults: every property's `default`; `None` when a required
/// property has none (only a person could answer it).
fn form_defaults(schema: &serde_json::Value) -> Option<serde_json::Value> {
    let properties = schema.get("properties")?.as_object()?;
    let required = schema
        .get("required")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let all_required_defaulted = required.iter().all(|name| {
        name.as_str()
            .and_then(|name| properties.get(name))
            .is_some_and(|property| property.get("default").is_some())
    });
    if !all_required_defaulted {
        return None;
    }
    let content: serde_json::Map<String, serde_json::Value> = properties
        .iter()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    Some(serde_json::Value::Object(content))
}

/// Writes one event of the `--json` stream.
fn write_event(stdout: &std::io::Stdout, event: &ExecEvent) -> anyhow::Result<()> {
    write_line(stdout, &serde_json::to_string(event)?)
}

/// Writes one line to stdout; a closed pipe (e.g. `| head`) ends output quietly.
fn write_line(stdout: &std::io::Stdout, line: &str) -> anyhow::Result<()> {
    let mut lock = stdout.lock();
    match writeln!(lock, "{line}").and_then(|()| lock.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::form_defaults;
    use serde_json::json;

    #[test]
    fn a_form_is_answered_with_its_defaults_only_when_every_required_field_has_one() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"},
        }, "required": ["name"]});
        assert_eq!(
            form_defaults(&schema),
            Some(json!({"name": "John Doe", "age": 30}))
        );
        let needs_a_person = json!({"type": "object", "properties": {
            "note": {"type": "string"},
        }, "required": ["note"]});
        assert_eq!(form_defaults(&needs_a_person), None);
    }
}
