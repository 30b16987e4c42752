use anyhow::Context;
use keel_test_support::{Script, Turn, apply_patch_call, assistant_message, reasoning, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_turn_with_a_command_and_a_patch() -> anyhow::Result<()> {
    let patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch";
    let script = Script::new([
        Turn::new([
            reasoning("plan it"),
            shell_call("c1", ["bash", "-lc", "echo ran"]),
        ]),
        Turn::new([apply_patch_call("p1", patch)]),
        Turn::new([assistant_message("All done")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let start = server
        .request("thread/start", world.thread_params())
        .await?;
    let thread_id = start["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(start["model"], "mock-model");
    assert_eq!(start["approvalPolicy"], "never");
    assert_eq!(start["sandbox"]["type"], "dangerFullAccess");
    assert_eq!(start["thread"]["status"]["type"], "idle");
    let started = server.read_notification("thread/started").await?;
    assert_eq!(started["params"]["thread"]["id"], thread_id.as_str());

    let turn_id = server.start_turn(&thread_id, "do the work").await?;
    let messages = until_turn_completed(&mut server, &turn_id).await?;
    let methods = methods(&messages);
    let first = methods.iter().position(|m| m == "turn/started");
    assert!(first.is_some(), "{methods:?}");
    for expected in [
        "item/started",
        "item/completed",
        "item/agentMessage/delta",
        "item/commandExecution/outputDelta",
        "item/reasoning/summaryTextDelta",
        "turn/diff/updated",
        "thread/tokenUsage/updated",
    ] {
        assert!(
            methods.iter().any(|m| m == expected),
            "missing {expected}: {methods:?}"
        );
    }
    let completed = messages.last().cloned().unwrap_or_default();
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    let items = completed["params"]["turn"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| i["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "userMessage",
            "reasoning",
            "commandExecution",
            "fileChange",
            "agentMessage"
        ]
    );
    let command = &items[2];
    assert_eq!(command["id"], "c1");
    assert_eq!(command["status"], "completed");
    assert_eq!(command["exitCode"], 0);
    assert_eq!(command["aggregatedOutput"], "ran\n");
    let change = &items[3];
    assert_eq!(change["status"], "completed");
    assert_eq!(change["changes"][0]["kind"]["type"], "add");
    assert_eq!(items[4]["text"], "All done");
    assert_eq!(
        std::fs::read_to_string(world.ws_file("hello.txt"))?,
        "hello\n"
    );

    // Item ids are stable from started to completed.
    for message in messages.iter().filter(|m| m["method"] == "item/started") {
        let id = &message["params"]["item"]["id"];
        assert!(
            messages
                .iter()
                .any(|m| m["method"] == "item/completed" && &m["params"]["item"]["id"] == id),
            "item {id} never completed"
        );
    }
    world.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_ends_the_turn_as_interrupted() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([shell_call("long", ["sleep", "30"])])]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "wait").await?;
    server
        .read_until("command started", |m| {
            m["method"] == "item/started" && m["params"]["item"]["type"] == "commandExecution"
        })
        .await?;
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "interrupted");
    // The killed command's item is completed too, not left running in the client's view.
    let item = server
        .read_until("the command's item/completed", |m| {
            m["method"] == "item/completed" && m["params"]["item"]["id"] == "long"
        })
        .await?;
    assert_ne!(item["params"]["item"]["status"], "inProgress", "{item}");
    let read = server
        .request(
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await?;
    let command = read["thread"]["turns"][0]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["id"] == "long")
        .cloned()
        .unwrap_or_default();
    assert_ne!(command["status"], "inProgress", "{read}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_adds_input_to_the_running_turn() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "sleep 0.5; echo slow"])]),
        Turn::new([assistant_message("steered answer")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "start").await?;
    server.read_notification("turn/started").await?;
    let steer = server
        .request(
            "turn/steer",
            json!({"threadId": thread_id, "expectedTurnId": turn_id, "input": [{"type": "text", "text": "also do X"}]}),
        )
        .await?;
    assert_eq!(steer["turnId"], turn_id.as_str());
    let wrong = server
        .send_request(
            "turn/steer",
            json!({"threadId": thread_id, "expectedTurnId": "nope", "input": [{"type": "text", "text": "x"}]}),
        )
        .await?;
    let error = server.read_response(wrong).await?;
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expected turn nope"),
        "{error}"
    );
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    let requests = world.mock.requests();
    let last_input = serde_json::to_string(requests.last().map(|r| r.input()).unwrap_or_default())?;
    assert!(last_input.contains("also do X"), "{last_input}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_turn_reports_the_error() -> anyhow::Result<()> {
    let script = Script::new([Turn::failing(keel_test_support::Fault::http_with_body(
        400,
        "bad request body",
    ))]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "hi").await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "failed");
    let message = completed["turn"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("bad request body"), "{completed}");
    assert_eq!(completed["turn"]["error"]["codexErrorInfo"], "badRequest");
    Ok(())
}

/// Each kind of provider failure is named for clients (`codexErrorInfo`, as in Codex 0.169)
/// and its message says what to do next; the same text reaches `keel exec`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_failures_are_named_and_say_what_to_do() -> anyhow::Result<()> {
    let cases = [
        (
            401,
            r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#,
            json!("unauthorized"),
            "check the API key",
        ),
        (
            429,
            r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
            json!("usageLimitExceeded"),
            "quota is used up",
        ),
        (
            404,
            r#"{"error":{"message":"The model `nope` does not exist","code":"model_not_found"}}"#,
            json!("modelNotFound"),
            "no such model",
        ),
        (
            400,
            r#"{"error":{"message":"Your input exceeds the context window","code":"context_length_exceeded"}}"#,
            json!("contextWindowExceeded"),
            "start a new thread",
        ),
        (
            400,
            r#"{"error":{"message":"This request was flagged","code":"cyber_policy"}}"#,
            json!("cyberPolicy"),
            "safety policy refused",
        ),
        (
            400,
            r#"{"error":{"message":"This request was flagged","code":"bio_policy"}}"#,
            json!("bioPolicy"),
            "safety policy refused",
        ),
    ];
    for (status, body, kind, step) in cases {
        // Context overflows are compacted and retried once: the retry fails the same way.
        let script = Script::new([
            Turn::failing(keel_test_support::Fault::http_with_body(status, body)),
            Turn::new([assistant_message("SUMMARY")]),
            Turn::failing(keel_test_support::Fault::http_with_body(status, body)),
        ]);
        let world = World::new(script, &[]).await?;
        let mut server = world.server().await?;
        let thread_id = server.start_thread(world.thread_params()).await?;
        let turn_id = server.start_turn(&thread_id, "hi").await?;
        let error = server.read_notification("error").await?;
        assert_eq!(error["params"]["error"]["codexErrorInfo"], kind, "{error}");
        let completed = server.read_turn_completed(&turn_id).await?;
        let turn_error = &completed["turn"]["error"];
        assert_eq!(turn_error["codexErrorInfo"], kind, "{completed}");
        let message = turn_error["message"].as_str().unwrap_or_default();
        assert!(message.contains(step), "{status}: {message}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_turn_start_while_one_runs_is_refused() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message("only one")])]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let input = json!([{"type": "text", "text": "go"}]);
    // Sent back to back: the second arrives before the first turn has started.
    let first = server
        .send_request("turn/start", json!({"threadId": thread_id, "input": input}))
        .await?;
    let second = server
        .send_request("turn/start", json!({"threadId": thread_id, "input": input}))
        .await?;
    let first = server.read_response(first).await?;
    let second = server.read_response(second).await?;
    let (accepted, refused) = if first.get("result").is_some() {
        (first, second)
    } else {
        (second, first)
    };
    let turn_id = accepted["result"]["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("still running"),
        "{refused}"
    );
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert_eq!(world.mock.requests().len(), 1);
    Ok(())
}

/// A stream that breaks after its message was streamed and finished (but before
/// `response.completed`) is retried; the client gets one agent message item, completed with the
/// retry's text only, and an `error` with `willRetry` before the retry's deltas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_stream_leaves_one_message_with_the_retry_text() -> anyhow::Result<()> {
    // created, item added, part added, 5 deltas, text done, part done, item done: 11 events.
    let script = Script::new([
        Turn::new([assistant_message("partial answer text that is")])
            .with_fault(keel_test_support::Fault::disconnect_after(11)),
        Turn::new([assistant_message("RECOVERED")]),
    ]);
    let world = World::new(
        script,
        &[("model_providers.mock.stream_max_retries", 1.into())],
    )
    .await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "answer").await?;
    let seen = until_turn_completed(&mut server, &turn_id).await?;

    let completed: Vec<&Value> = seen
        .iter()
        .filter(|m| {
            m["method"] == "item/completed" && m["params"]["item"]["type"] == "agentMessage"
        })
        .collect();
    assert_eq!(completed.len(), 1, "{:?}", methods(&seen));
    assert_eq!(completed[0]["params"]["item"]["text"], "RECOVERED");
    let item_id = &completed[0]["params"]["item"]["id"];
    let retry_at = seen
        .iter()
        .position(|m| m["method"] == "error" && m["params"]["willRetry"] == true)
        .context("no retry notice")?;
    let after_retry: String = seen[retry_at..]
        .iter()
        .filter(|m| m["method"] == "item/agentMessage/delta")
        .inspect(|m| assert_eq!(&m["params"]["itemId"], item_id))
        .filter_map(|m| m["params"]["delta"].as_str())
        .collect();
    assert_eq!(after_retry, "RECOVERED");

    let read = server
        .request(
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await?;
    let texts: Vec<&Value> = read["thread"]["turns"][0]["items"]
        .as_array()
        .context("items")?
        .iter()
        .filter(|item| item["type"] == "agentMessage")
        .map(|item| &item["text"])
        .collect();
    assert_eq!(texts, vec!["RECOVERED"]);
    Ok(())
}
