//! `thread/queue/*` and `keel queue`: messages kept for a thread, in order, across processes
//! and restarts, and delivered as its next turns once a server has it loaded and idle; every
//! method answers as Codex 0.171's does, errors included.

use anyhow::Context;
use keel_test_support::{
    AppServerProcess, CapturedRequest, MockModelServer, Turn, assistant_message,
};
use serde_json::{Value, json};

use super::common::World;
use crate::suite::agents::input_text;

/// Answers every prompt with `echo: <the last user message>`.
fn echo(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    let last = text
        .lines()
        .rev()
        .find(|line| line.starts_with("msg-"))
        .unwrap_or("none");
    Some(Turn::new([assistant_message(format!("echo: {last}"))]))
}

fn text(message: &str) -> Value {
    json!([{"type": "text", "text": message, "text_elements": []}])
}

async fn refused(
    server: &mut AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<(i64, String)> {
    match server.request(method, params.clone()).await {
        Ok(answer) => anyhow::bail!("{method} {params} answered {answer}"),
        Err(keel_test_support::Error::JsonRpc { error, .. }) => Ok((
            error["code"].as_i64().unwrap_or_default(),
            error["message"].as_str().unwrap_or_default().to_string(),
        )),
        Err(err) => Err(err.into()),
    }
}

/// Waits for the end of the turn an `item/completed` belongs to.
async fn turn_completed(server: &mut AppServerProcess, item: &Value) -> anyhow::Result<()> {
    let turn = item["params"]["turnId"]
        .as_str()
        .context("turn id")?
        .to_string();
    server.read_turn_completed(&turn).await?;
    Ok(())
}

fn listed(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["input"][0]["text"].as_str().map(str::to_string))
        .collect()
}

/// The user messages the model was sent, in order, one per request that ended a turn.
fn prompts(mock: &MockModelServer) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|request| {
            input_text(request)
                .lines()
                .rev()
                .find(|line| line.starts_with("msg-"))
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_wait_for_the_thread_and_run_in_order() -> anyhow::Result<()> {
    let mock = MockModelServer::builder().responder(echo).start().await?;
    let world = World::with_mock(mock, &[])?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "msg-0").await?;
    server.read_turn_completed(&turn).await?;
    server.kill().await?;

    // Another server, the thread not loaded: the queue is kept and edited, nothing runs.
    let mut server = world.server().await?;
    let mut ids = Vec::new();
    for message in ["msg-1", "msg-2", "msg-3"] {
        let added = server
            .request(
                "thread/queue/add",
                json!({"threadId": thread, "clientUserMessageId": format!("c-{message}"), "input": text(message)}),
            )
            .await?;
        assert_eq!(
            added["queuedSubmission"]["clientUserMessageId"],
            format!("c-{message}")
        );
        ids.push(
            added["queuedSubmission"]["id"]
                .as_str()
                .context("id")?
                .to_string(),
        );
    }
    let page = server
        .request("thread/queue/list", json!({"threadId": thread, "limit": 2}))
        .await?;
    assert_eq!(listed(&page), ["msg-1", "msg-2"]);
    assert_eq!(page["nextCursor"], "2");
    let rest = server
        .request(
            "thread/queue/list",
            json!({"threadId": thread, "cursor": "2"}),
        )
        .await?;
    assert_eq!(
        (listed(&rest), rest["nextCursor"].clone()),
        (vec!["msg-3".to_string()], Value::Null)
    );
    let reordered = server
        .request(
            "thread/queue/reorder",
            json!({"threadId": thread, "queuedSubmissionIds": [ids[2], ids[0], ids[1]]}),
        )
        .await?;
    assert_eq!(reordered, json!({}));
    let updated = server
        .request(
            "thread/queue/update",
            json!({"threadId": thread, "queuedSubmissionId": ids[0], "input": text("msg-1b")}),
        )
        .await?;
    assert_eq!(
        updated["queuedSubmission"]["clientUserMessageId"],
        "c-msg-1"
    );
    let deleted = server
        .request(
            "thread/queue/delete",
            json!({"threadId": thread, "queuedSubmissionId": ids[1]}),
        )
        .await?;
    assert_eq!(deleted, json!({"deleted": true}));
    let again = server
        .request(
            "thread/queue/delete",
            json!({"threadId": thread, "queuedSubmissionId": ids[1]}),
        )
        .await?;
    assert_eq!(again, json!({"deleted": false}));
    let page = server
        .request("thread/queue/list", json!({"threadId": thread}))
        .await?;
    assert_eq!(listed(&page), ["msg-3", "msg-1b"]);
    for (method, params, code, message) in [
        (
            "thread/queue/start",
            json!({"threadId": thread}),
            -32600,
            "resume the thread before starting a queued message",
        ),
        (
            "thread/queue/reorder",
            json!({"threadId": thread, "queuedSubmissionIds": [ids[2]]}),
            -32600,
            "queue reorder must include every queued submission exactly once",
        ),
        (
            "thread/queue/update",
            json!({"threadId": thread, "queuedSubmissionId": "nope", "input": text("x")}),
            -32600,
            "queued submission not found: nope",
        ),
        (
            "thread/queue/add",
            json!({"threadId": "01a21a7b-0000-7000-8000-000000000001", "clientUserMessageId": "c", "input": text("x")}),
            -32600,
            "no thread with id",
        ),
        ("thread/queue/list", json!({"threadId": "bad"}), -32600, ""),
    ] {
        let (got_code, got) = refused(&mut server, method, params.clone()).await?;
        assert_eq!(got_code, code, "{method} {params}: {got}");
        assert!(got.contains(message), "{method} {params}: {got}");
    }
    assert_eq!(
        prompts(&world.mock).len(),
        1,
        "nothing ran while the thread was not loaded"
    );

    // Resumed: the queue runs, in its order, one turn per message.
    server
        .request("thread/resume", json!({"threadId": thread}))
        .await?;
    for expected in ["echo: msg-3", "echo: msg-1b"] {
        let done = server
            .read_until("a queued turn", |m| {
                m["method"] == "item/completed" && m["params"]["item"]["type"] == "agentMessage"
            })
            .await?;
        assert_eq!(done["params"]["item"]["text"], expected);
    }
    server.read_notification("turn/completed").await?;
    assert_eq!(prompts(&world.mock), ["msg-0", "msg-3", "msg-1b"]);
    server.read_notification("thread/queue/changed").await?;
    let page = server
        .request("thread/queue/list", json!({"threadId": thread}))
        .await?;
    assert_eq!(listed(&page), Vec::<String>::new());

    // On an idle loaded thread, a message added runs at once; `start` has nothing left.
    server
        .request(
            "thread/queue/add",
            json!({"threadId": thread, "clientUserMessageId": "c4", "input": text("msg-4")}),
        )
        .await?;
    let done = server
        .read_until("the added message's answer", |m| {
            m["method"] == "item/completed" && m["params"]["item"]["text"] == "echo: msg-4"
        })
        .await?;
    assert_eq!(done["params"]["threadId"], thread.as_str());
    turn_completed(&mut server, &done).await?;
    let (code, message) = refused(
        &mut server,
        "thread/queue/start",
        json!({"threadId": thread}),
    )
    .await?;
    assert_eq!((code, message.as_str()), (-32600, "queue is empty"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_queue_keeps_a_message_and_resume_runs_it() -> anyhow::Result<()> {
    let mock = MockModelServer::builder().responder(echo).start().await?;
    let world = World::with_mock(mock, &[])?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "msg-0").await?;
    server.read_turn_completed(&turn).await?;
    server.kill().await?;

    let keel = |args: Vec<String>| {
        let home = world.home.path().to_path_buf();
        let cwd = world.ws().to_path_buf();
        async move {
            let output = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
                    .args(&args)
                    .current_dir(cwd)
                    .env("KEEL_HOME", home)
                    .env_remove("RUST_LOG")
                    .kill_on_drop(true)
                    .output(),
            )
            .await
            .context("keel queue did not finish")??;
            anyhow::Ok((
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ))
        }
    };
    let args = |message: &str, resume: bool| {
        let mut args = vec![
            "queue".to_string(),
            "--thread".into(),
            thread.clone(),
            "--message".into(),
            message.into(),
        ];
        if resume {
            args.push("--resume".into());
        }
        args
    };
    let (code, stdout, stderr) = keel(args("msg-1", false)).await?;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with("Queued message ")
            && stdout
                .trim_end()
                .ends_with(&format!("for thread {thread}.")),
        "{stdout}"
    );
    assert_eq!(prompts(&world.mock).len(), 1, "queued, not run");
    let (code, _, stderr) = keel(args("msg-2", true)).await?;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("Ran 2 queued message(s)"), "{stderr}");
    assert_eq!(prompts(&world.mock), ["msg-0", "msg-1", "msg-2"]);
    let (code, _, stderr) = keel(vec![
        "queue".into(),
        "--thread".into(),
        "no-such-thread".into(),
        "--message".into(),
        "x".into(),
    ])
    .await?;
    assert_eq!(code, Some(2), "{stderr}");
    Ok(())
}
