use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::app_server::{ServerNotification, ServerRequest, ThreadItem, TurnStatus};
use keel_protocol::exec_server::ExecOutputStream;
use keel_protocol::{
    AgentMessageDeltaEvent, AgentMessageEvent, Base64Bytes, CallId, ErrorEvent, Event, EventMsg,
    ExecApprovalRequestEvent, ExecCommandBeginEvent, ExecCommandEndEvent,
    ExecCommandOutputDeltaEvent, ExecCommandSource, ExecCommandStatus, SubmissionId,
    TaskCompleteEvent, TaskStartedEvent, TurnId, UserMessageEvent,
};
use pretty_assertions::assert_eq;

use super::{Output, Translator};

fn event(msg: EventMsg) -> Event {
    Event {
        id: SubmissionId::new("t1"),
        msg,
    }
}

fn notifications(outputs: Vec<Output>) -> Vec<ServerNotification> {
    outputs
        .into_iter()
        .filter_map(|o| match o {
            Output::Notify(n) => Some(*n),
            Output::Approval { .. }
            | Output::UserInput { .. }
            | Output::ClientTool { .. }
            | Output::Elicitation { .. } => None,
        })
        .collect()
}

fn start(translator: &mut Translator) {
    translator.handle(&event(EventMsg::TaskStarted(TaskStartedEvent {
        turn_id: TurnId::new("t1"),
        model_context_window: None,
        started_at: Some(1_795_370_211),
    })));
}

#[test]
fn agent_message_keeps_one_item_id_from_delta_to_completion() {
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    start(&mut translator);
    let first = notifications(translator.handle(&event(EventMsg::AgentMessageDelta(
        AgentMessageDeltaEvent {
            delta: "Hel".into(),
        },
    ))));
    let ServerNotification::ItemStarted(started) = &first[0] else {
        panic!("{first:?}")
    };
    let id = started.item.id().to_string();
    let ServerNotification::AgentMessageDelta(delta) = &first[1] else {
        panic!("{first:?}")
    };
    assert_eq!(delta.item_id, id);
    let second = notifications(translator.handle(&event(EventMsg::AgentMessageDelta(
        AgentMessageDeltaEvent { delta: "lo".into() },
    ))));
    assert_eq!(second.len(), 1, "no second item/started");
    let done = notifications(translator.handle(&event(EventMsg::AgentMessage(
        AgentMessageEvent {
            message: "Hello".into(),
        },
    ))));
    let ServerNotification::ItemCompleted(completed) = &done[0] else {
        panic!("{done:?}")
    };
    assert_eq!(
        completed.item,
        ThreadItem::AgentMessage {
            id,
            text: "Hello".into(),
            phase: None,
            delivery: None,
            questions: None,
        }
    );
}

#[test]
fn command_approval_starts_the_item_once_and_end_completes_it() {
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    start(&mut translator);
    let call = CallId::new("c1");
    let argv = vec!["bash".to_string(), "-lc".to_string(), "echo hi".to_string()];
    let outputs = translator.handle(&event(EventMsg::ExecApprovalRequest(
        ExecApprovalRequestEvent {
            call_id: call.clone(),
            turn_id: TurnId::new("t1"),
            command: argv.clone(),
            cwd: PathBuf::from("/w"),
            reason: Some("why".into()),
            parsed_cmd: Vec::new(),
            process_id: None,
        },
    )));
    assert!(matches!(
        &outputs[0],
        Output::Notify(notification) if matches!(**notification, ServerNotification::ItemStarted(_))
    ));
    let Output::Approval {
        request: ServerRequest::CommandExecutionRequestApproval(params),
        is_patch,
        ..
    } = &outputs[1]
    else {
        panic!("{outputs:?}")
    };
    assert!(!is_patch);
    assert_eq!(params.command.as_deref(), Some("bash -lc 'echo hi'"));
    assert_eq!(params.item_id, "c1");
    let begin = notifications(translator.handle(&event(EventMsg::ExecCommandBegin(
        ExecCommandBeginEvent {
            call_id: call.clone(),
            turn_id: TurnId::new("t1"),
            command: argv.clone(),
            cwd: PathBuf::from("/w"),
            parsed_cmd: Vec::new(),
            source: ExecCommandSource::Agent,
            process_id: None,
        },
    ))));
    assert!(
        begin.is_empty(),
        "already started by the approval: {begin:?}"
    );
    let delta = notifications(translator.handle(&event(EventMsg::ExecCommandOutputDelta(
        ExecCommandOutputDeltaEvent {
            call_id: call.clone(),
            stream: ExecOutputStream::Stdout,
            chunk: Base64Bytes::from(b"hi\n".as_slice()),
        },
    ))));
    assert!(
        matches!(&delta[0], ServerNotification::CommandExecutionOutputDelta(d) if d.delta == "hi\n")
    );
    let end = notifications(translator.handle(&event(EventMsg::ExecCommandEnd(
        ExecCommandEndEvent {
            call_id: call,
            turn_id: TurnId::new("t1"),
            command: argv,
            cwd: PathBuf::from("/w"),
            parsed_cmd: Vec::new(),
            source: ExecCommandSource::Agent,
            process_id: None,
            stdout: "hi\n".into(),
            stderr: String::new(),
            aggregated_output: "hi\n".into(),
            exit_code: 0,
            duration: Duration::from_millis(1500),
            formatted_output: "hi\n".into(),
            status: ExecCommandStatus::Completed,
        },
    ))));
    let ServerNotification::ItemCompleted(done) = &end[0] else {
        panic!("{end:?}")
    };
    let ThreadItem::CommandExecution {
        exit_code,
        duration_ms,
        ..
    } = &done.item
    else {
        panic!()
    };
    assert_eq!((*exit_code, *duration_ms), (Some(0), Some(1500)));
}

#[test]
fn turn_completion_carries_every_item_and_the_status() {
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    start(&mut translator);
    translator.handle(&event(EventMsg::UserMessage(UserMessageEvent {
        message: "hi".into(),
        images: Vec::new(),
    })));
    translator.handle(&event(EventMsg::AgentMessage(AgentMessageEvent {
        message: "yo".into(),
    })));
    let done = notifications(translator.handle(&event(EventMsg::TaskComplete(
        TaskCompleteEvent {
            turn_id: TurnId::new("t1"),
            last_agent_message: Some("yo".into()),
            completed_at: Some(1_795_370_216),
            duration_ms: Some(5365),
        },
    ))));
    let ServerNotification::TurnCompleted(completed) = &done[0] else {
        panic!("{done:?}")
    };
    assert_eq!(completed.turn.status, TurnStatus::Completed);
    assert_eq!(completed.turn.items.len(), 2);
    // The engine's recorded times reach the turn, for live and replayed turns alike.
    assert_eq!(
        (
            completed.turn.started_at,
            completed.turn.completed_at,
            completed.turn.duration_ms
        ),
        (Some(1_795_370_211), Some(1_795_370_216), Some(5365))
    );
    assert_eq!(translator.turns.len(), 1);
    assert_eq!(translator.active_turn_id(), None);
}

#[test]
fn an_error_fails_the_turn_with_its_message() {
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    start(&mut translator);
    let outputs =
        notifications(translator.handle(&event(EventMsg::Error(ErrorEvent::new("HTTP 401")))));
    assert!(matches!(&outputs[0], ServerNotification::Error(e) if !e.will_retry));
    let ServerNotification::TurnCompleted(completed) = &outputs[1] else {
        panic!("{outputs:?}")
    };
    assert_eq!(completed.turn.status, TurnStatus::Failed);
    assert_eq!(
        completed.turn.error.as_ref().map(|e| e.message.as_str()),
        Some("HTTP 401")
    );
}

#[test]
fn an_error_about_another_submission_leaves_the_turn_running() {
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    start(&mut translator);
    let refused = Event {
        id: SubmissionId::new("rollback-7"),
        msg: EventMsg::Error(ErrorEvent::new("cannot roll back while a turn is running")),
    };
    // The thread's pump asks the same question: its approvals and status stay as they are.
    assert_eq!(translator.boundary(&refused), None);
    let outputs = notifications(translator.handle(&refused));
    assert_eq!(outputs.len(), 1);
    assert!(matches!(&outputs[0], ServerNotification::Error(_)));
    assert_eq!(translator.active_turn_id(), Some("t1"));
}

#[test]
fn output_deltas_keep_characters_split_across_chunks() {
    let mut translator = Translator::new("th".into(), Vec::new());
    start(&mut translator);
    let call = CallId::new("c9");
    let text = "€ 世界";
    let mut shown = String::new();
    for byte in text.as_bytes() {
        for note in notifications(translator.handle(&event(EventMsg::ExecCommandOutputDelta(
            ExecCommandOutputDeltaEvent {
                call_id: call.clone(),
                stream: ExecOutputStream::Stdout,
                chunk: Base64Bytes::from(std::slice::from_ref(byte)),
            },
        )))) {
            if let ServerNotification::CommandExecutionOutputDelta(delta) = note {
                shown.push_str(&delta.delta);
            }
        }
    }
    assert_eq!(shown, text);
}

#[test]
fn an_engine_warning_reaches_the_client_as_a_warning_notification() {
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    start(&mut translator);
    let out = notifications(translator.handle(&event(EventMsg::Warning(
        keel_protocol::WarningEvent {
            message: "command not run: the sandbox is unavailable".into(),
        },
    ))));
    assert_eq!(
        out,
        vec![ServerNotification::Warning(
            keel_protocol::app_server::WarningNotification {
                message: "command not run: the sandbox is unavailable".into(),
                thread_id: Some("thread-1".into()),
            }
        )]
    );
}

/// A command still running when its turn ended (a background session) completes in that
/// turn when its end arrives during a later turn; after that turn is rolled back, an end of
/// the same id no longer reaches back into it.
#[test]
fn a_command_left_running_completes_in_the_turn_that_started_it() {
    let in_turn = |turn: &str, msg: EventMsg| Event {
        id: SubmissionId::new(turn),
        msg,
    };
    let argv = vec!["sleep".to_string(), "9".to_string()];
    let end = |turn: &str| {
        EventMsg::ExecCommandEnd(ExecCommandEndEvent {
            call_id: CallId::new("bg"),
            turn_id: TurnId::new(turn),
            command: argv.clone(),
            cwd: PathBuf::from("/w"),
            parsed_cmd: Vec::new(),
            source: ExecCommandSource::Agent,
            process_id: None,
            stdout: String::new(),
            stderr: String::new(),
            aggregated_output: String::new(),
            exit_code: 0,
            duration: Duration::from_millis(9000),
            formatted_output: String::new(),
            status: ExecCommandStatus::Completed,
        })
    };
    let mut translator = Translator::new("thread-1".into(), Vec::new());
    for turn in ["t1", "t2"] {
        translator.handle(&in_turn(
            turn,
            EventMsg::TaskStarted(TaskStartedEvent {
                turn_id: TurnId::new(turn),
                model_context_window: None,
                started_at: None,
            }),
        ));
        if turn == "t1" {
            translator.handle(&in_turn(
                turn,
                EventMsg::ExecCommandBegin(ExecCommandBeginEvent {
                    call_id: CallId::new("bg"),
                    turn_id: TurnId::new(turn),
                    command: argv.clone(),
                    cwd: PathBuf::from("/w"),
                    parsed_cmd: Vec::new(),
                    source: ExecCommandSource::Agent,
                    process_id: None,
                }),
            ));
            translator.handle(&in_turn(
                turn,
                EventMsg::TaskComplete(TaskCompleteEvent {
                    turn_id: TurnId::new(turn),
                    last_agent_message: None,
                    completed_at: None,
                    duration_ms: None,
                }),
            ));
        }
    }
    let status = |translator: &Translator| match &translator.turns[0].items[..] {
        [ThreadItem::CommandExecution { status, .. }] => *status,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        status(&translator),
        keel_protocol::app_server::CommandExecutionStatus::InProgress
    );
    let left_running = translator.turns.clone();
    let done = notifications(translator.handle(&in_turn("t2", end("t1"))));
    let [ServerNotification::ItemCompleted(completed)] = &done[..] else {
        panic!("{done:?}")
    };
    assert_eq!(completed.turn_id, "t1");
    assert_eq!(
        status(&translator),
        keel_protocol::app_server::CommandExecutionStatus::Completed
    );

    // Rolled back: the earlier turn is gone, and so is what it left running.
    let mut rolled = Translator::new("thread-1".into(), left_running);
    assert!(rolled.lingering.contains("bg"));
    rolled.drop_last_turns(1);
    assert!(rolled.turns.is_empty() && rolled.lingering.is_empty());
}

/// Every event in the engine's schema (`docs/schema/EventMsg.json`) is either matched by the
/// translator or named, with its reason, in `NOT_TRANSLATED`: a new engine event cannot be
/// dropped silently.
#[test]
fn every_engine_event_is_translated_or_named_as_not_translated() -> anyhow::Result<()> {
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/schema/EventMsg.json"
    ))?)?;
    let tags: Vec<String> = schema["oneOf"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("EventMsg.json has no oneOf"))?
        .iter()
        .filter_map(|variant| variant["properties"]["type"]["const"].as_str())
        .map(str::to_string)
        .collect();
    assert!(tags.len() > 40, "only {} tags read", tags.len());
    let source = include_str!("translate.rs");
    let mut missing = Vec::new();
    for tag in &tags {
        let variant: String = tag
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                    .unwrap_or_default()
            })
            .collect();
        let ignored = super::NOT_TRANSLATED.iter().any(|(name, _)| name == tag);
        let matched = source.contains(&format!("EventMsg::{variant}("))
            || source.contains(&format!("EventMsg::{variant} "))
            || source.contains(&format!("EventMsg::{variant}\n"));
        // Exactly one of the two: a listed event the translator matches is a stale entry.
        if matched == ignored {
            missing.push(tag.clone());
        }
    }
    for (name, _) in super::NOT_TRANSLATED {
        assert!(
            tags.iter().any(|tag| tag == name),
            "`{name}` is not an engine event"
        );
    }
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "each event must be translated or listed (once) in NOT_TRANSLATED"
    );
    Ok(())
}
