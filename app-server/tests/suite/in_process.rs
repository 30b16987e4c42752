//! The in-process client drives the same server without a transport.

use keel_app_server::{InProcessAppServerClient, InProcessEvent, ServerConfig};
use keel_protocol::app_server::{
    ClientInfo, ServerNotification, ThreadStartParams, TurnStartParams, TurnStatus, UserInput,
    client_request,
};
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use pretty_assertions::assert_eq;

/// An in-process server on `home` (with a config already written) for a client named `test`.
async fn start_client(
    home: &std::path::Path,
    workspace: &std::path::Path,
) -> anyhow::Result<InProcessAppServerClient> {
    Ok(InProcessAppServerClient::start(
        ServerConfig {
            keel_home: home.to_path_buf(),
            cli_overrides: Vec::new(),
            cwd: workspace.to_path_buf(),
            session_source: keel_protocol::app_server::SessionSource::Vscode,
            deliver_queued_messages: true,
            client_backends: Default::default(),
            threads: Default::default(),
        },
        ClientInfo {
            name: "test".into(),
            title: None,
            version: "1".into(),
        },
        None,
    )
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_client_runs_a_turn() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message(
        "in-process hello",
    )])]))
    .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let client = start_client(home.path(), workspace.path()).await?;
    assert!(client.initialize.user_agent.contains("test/1"));
    let thread = client
        .request::<client_request::ThreadStart>(ThreadStartParams::default())
        .await?;
    let turn = client
        .request::<client_request::TurnStart>(TurnStartParams {
            thread_id: thread.thread.id.clone(),
            input: vec![UserInput::Text {
                text: "hi".into(),
                text_elements: Vec::new(),
            }],
            cwd: None,
            approval_policy: None,
            sandbox_policy: None,
            permissions: None,
            model: None,
            effort: None,
            output_schema: None,
            collaboration_mode: None,
            environments: None,
        })
        .await?;
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), client.next_event())
            .await?
            .ok_or_else(|| anyhow::anyhow!("server stopped"))?;
        if let InProcessEvent::Notification(ServerNotification::TurnCompleted(done)) = event
            && done.turn.id == turn.turn.id
        {
            assert_eq!(done.turn.status, TurnStatus::Completed);
            break;
        }
    }
    let bad = client
        .request::<client_request::ThreadRead>(keel_protocol::app_server::ThreadReadParams {
            thread_id: "not-a-uuid".into(),
            include_turns: false,
        })
        .await;
    assert!(bad.is_err_and(|err| err.to_string().contains("invalid thread id")));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_stops_its_threads_and_their_commands() -> anyhow::Result<()> {
    let workspace = tempfile::tempdir()?;
    // The command holds the FIFO's write end; reading it to EOF waits for the command to die.
    let fifo = workspace.path().join("alive");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status()?;
    anyhow::ensure!(made.success(), "mkfifo failed");
    let command = format!("exec sleep 600 > {}", fifo.display());
    let mock = MockModelServer::start(Script::new([Turn::new([keel_test_support::shell_call(
        "c1",
        ["bash", "-c", command.as_str()],
    )])]))
    .await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let client = start_client(home.path(), workspace.path()).await?;
    let mut params = ThreadStartParams::default();
    params.overrides.approval_policy = Some(keel_protocol::AskForApproval::Never);
    params.overrides.sandbox = Some(keel_protocol::SandboxMode::DangerFullAccess);
    let thread = client
        .request::<client_request::ThreadStart>(params)
        .await?;
    let reader_fifo = fifo.clone();
    let (opened_tx, opened_rx) = tokio::sync::oneshot::channel();
    let alive = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        // Opening blocks until the command opens the write end.
        let mut held = std::fs::File::open(reader_fifo)?;
        let _ = opened_tx.send(());
        let mut rest = Vec::new();
        held.read_to_end(&mut rest)
    });
    client
        .request::<client_request::TurnStart>(TurnStartParams {
            thread_id: thread.thread.id.clone(),
            input: vec![UserInput::Text {
                text: "run it".into(),
                text_elements: Vec::new(),
            }],
            cwd: None,
            approval_policy: None,
            sandbox_policy: None,
            permissions: None,
            model: None,
            effort: None,
            output_schema: None,
            collaboration_mode: None,
            environments: None,
        })
        .await?;
    if tokio::time::timeout(std::time::Duration::from_secs(20), opened_rx)
        .await
        .is_err()
    {
        // Unblock the reader so the runtime can shut down, then fail.
        drop(std::fs::OpenOptions::new().write(true).open(&fifo)?);
        anyhow::bail!("the command never started");
    }
    drop(client);
    tokio::time::timeout(std::time::Duration::from_secs(20), alive)
        .await
        .map_err(|_| anyhow::anyhow!("the command outlived the dropped client"))???;
    Ok(())
}

/// The delivery contract: a consumer that reads nothing while a turn streams thousands of
/// deltas loses only deltas (and is told how many), never the completions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_stops_reading_still_gets_every_completion() -> anyhow::Result<()> {
    // One delta per word: more than the consumer's queue holds.
    let words = keel_app_server::IN_PROCESS_EVENT_CAPACITY + 2000;
    let text: String = (0..words).map(|i| format!("w{i} ")).collect();
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message(text.as_str())])]))
        .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let client = start_client(home.path(), workspace.path()).await?;
    let thread = client
        .request::<client_request::ThreadStart>(ThreadStartParams::default())
        .await?;
    let turn = client
        .request::<client_request::TurnStart>(TurnStartParams {
            thread_id: thread.thread.id.clone(),
            input: vec![UserInput::Text {
                text: "talk".into(),
                text_elements: Vec::new(),
            }],
            cwd: None,
            approval_policy: None,
            sandbox_policy: None,
            permissions: None,
            model: None,
            effort: None,
            output_schema: None,
            collaboration_mode: None,
            environments: None,
        })
        .await?;
    // Not reading events: requests still work, and say when the turn is over.
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let read = client
                .request::<client_request::ThreadRead>(
                    keel_protocol::app_server::ThreadReadParams {
                        thread_id: thread.thread.id.clone(),
                        include_turns: false,
                    },
                )
                .await?;
            if read.thread.status == keel_protocol::app_server::ThreadStatus::Idle
                && !mock.requests().is_empty()
            {
                return anyhow::Ok(());
            }
            tokio::task::yield_now().await;
        }
    })
    .await??;

    let mut lagged = 0;
    let mut completed_text = None;
    let mut started = Vec::new();
    let outcome = loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), client.next_event())
            .await?
            .ok_or_else(|| anyhow::anyhow!("server stopped"))?;
        match event {
            InProcessEvent::Lagged { skipped } => lagged += skipped,
            InProcessEvent::Notification(ServerNotification::TurnStarted(_)) => {
                started.push("turn".to_string());
            }
            InProcessEvent::Notification(ServerNotification::ItemStarted(item)) => {
                started.push(format!("{:?}", std::mem::discriminant(&item.item)));
            }
            InProcessEvent::Notification(ServerNotification::ItemCompleted(done)) => {
                if let keel_protocol::app_server::ThreadItem::AgentMessage { text, .. } = done.item
                {
                    completed_text = Some(text);
                }
            }
            InProcessEvent::Notification(ServerNotification::TurnCompleted(done))
                if done.turn.id == turn.turn.id =>
            {
                break done.turn.status;
            }
            _ => {}
        }
    };
    assert_eq!(outcome, TurnStatus::Completed);
    assert_eq!(completed_text.as_deref(), Some(text.as_str()));
    // The oldest events, which a ring buffer would have dropped first, arrived too.
    assert_eq!(
        started.first().map(String::as_str),
        Some("turn"),
        "{started:?}"
    );
    assert!(
        started.len() >= 3,
        "turn, user message, agent message: {started:?}"
    );
    assert!(lagged > 0, "the consumer's queue never filled");
    Ok(())
}

/// `thread/queue/start` on a server that does not deliver queued messages by itself (an
/// embedder's choice): the named message runs now as the thread's next turn, and leaves the
/// queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_start_runs_a_queued_message_now() -> anyhow::Result<()> {
    use keel_protocol::app_server::{
        ThreadQueueAddParams, ThreadQueueListParams, ThreadQueueStartParams,
    };
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("queued answer")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let client = InProcessAppServerClient::start(
        ServerConfig {
            keel_home: home.path().to_path_buf(),
            cli_overrides: Vec::new(),
            cwd: workspace.path().to_path_buf(),
            session_source: keel_protocol::app_server::SessionSource::Vscode,
            deliver_queued_messages: false,
            client_backends: Default::default(),
            threads: Default::default(),
        },
        ClientInfo {
            name: "test".into(),
            title: None,
            version: "1".into(),
        },
        None,
    )
    .await?;
    let thread = client
        .request::<client_request::ThreadStart>(ThreadStartParams::default())
        .await?
        .thread
        .id;
    let text = |text: &str| {
        vec![UserInput::Text {
            text: text.into(),
            text_elements: Vec::new(),
        }]
    };
    let first = client
        .request::<client_request::TurnStart>(TurnStartParams {
            thread_id: thread.clone(),
            input: text("first"),
            ..TurnStartParams::default()
        })
        .await?
        .turn
        .id;
    completed(&client, &first).await?;
    let added = client
        .request::<client_request::ThreadQueueAdd>(ThreadQueueAddParams {
            thread_id: thread.clone(),
            client_user_message_id: "m-1".into(),
            input: text("run me now"),
            responsesapi_client_metadata: None,
        })
        .await?;
    let started = client
        .request::<client_request::ThreadQueueStart>(ThreadQueueStartParams {
            thread_id: thread.clone(),
            queued_submission_id: Some(added.queued_submission.id.clone()),
        })
        .await?;
    assert_eq!(started.turn.status, TurnStatus::InProgress);
    completed(&client, &started.turn.id).await?;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("run me now"));
    let left = client
        .request::<client_request::ThreadQueueList>(ThreadQueueListParams {
            thread_id: thread,
            cursor: None,
            limit: None,
        })
        .await?;
    assert!(left.data.is_empty(), "{left:?}");
    Ok(())
}

/// Reads events until `turn/completed` for `turn`.
async fn completed(client: &InProcessAppServerClient, turn: &str) -> anyhow::Result<()> {
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            match client.next_event().await {
                Some(InProcessEvent::Notification(ServerNotification::TurnCompleted(done)))
                    if done.turn.id == turn =>
                {
                    assert_eq!(done.turn.status, TurnStatus::Completed);
                    return Ok(());
                }
                Some(_) => {}
                None => anyhow::bail!("the server closed"),
            }
        }
    })
    .await?
}
