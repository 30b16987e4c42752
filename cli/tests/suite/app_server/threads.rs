use keel_protocol::app_server::{
    ThreadIdParams, ThreadItem, ThreadListCwdFilter, ThreadListParams, ThreadListResponse,
    ThreadLoadedListParams, ThreadReadParams, ThreadSetNameParams, ThreadStatus,
    client_request as rq, server_notification as nt,
};
use keel_test_support::{Script, Turn, assistant_message, function_call, shell_call};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

fn two_turns() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["echo", "first-output"])]),
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("after restart")]),
        Turn::new([assistant_message("in the fork")]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_restart_keeps_history_and_fork_copies_it() -> anyhow::Result<()> {
    let world = World::new(two_turns(), &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "remember kiwi").await?;
    server.read_turn_completed(&turn_id).await?;
    drop(server);

    let mut server = world.server().await?;
    let resumed = server
        .request("thread/resume", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(resumed["thread"]["id"], thread_id.as_str());
    let turns = resumed["thread"]["turns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(turns.len(), 1, "{resumed}");
    let kinds: Vec<&str> = turns[0]["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["type"].as_str().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        kinds,
        vec!["userMessage", "commandExecution", "agentMessage"]
    );
    let turn_id = server.start_turn(&thread_id, "what fruit?").await?;
    server.read_turn_completed(&turn_id).await?;
    let sent = serde_json::to_string(world.mock.requests()[2].input())?;
    assert!(
        sent.contains("remember kiwi") && sent.contains("first-output"),
        "{sent}"
    );

    let forked = server
        .request("thread/fork", json!({"threadId": thread_id}))
        .await?;
    let fork_id = forked["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_ne!(fork_id, thread_id);
    assert_eq!(forked["thread"]["turns"].as_array().map(Vec::len), Some(2));
    let turn_id = server.start_turn(&fork_id, "fork question").await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["items"][1]["text"], "in the fork");
    let sent = serde_json::to_string(world.mock.requests()[3].input())?;
    assert!(
        sent.contains("remember kiwi") && sent.contains("what fruit?"),
        "{sent}"
    );
    world.mock.verify()?;
    Ok(())
}

/// A turn keeps the plan and the usage it last reported (Keel additions to `Turn`, so a
/// client redrawing a recorded thread can show them), and a resumed or forked thread's usage
/// is told again after the answer, with the turn it came from, as Codex does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_turn_keeps_its_plan_and_usage_and_resume_tells_the_usage() -> anyhow::Result<()>
{
    let first = json!({"plan": [{"step": "look", "status": "completed"}]});
    let second = json!({"explanation": "looked", "plan": [
        {"step": "look", "status": "completed"},
        {"step": "answer", "status": "in_progress"},
    ]});
    let script = Script::new([
        Turn::new([function_call("p1", "update_plan", first.to_string())]),
        Turn::new([function_call("p2", "update_plan", second.to_string())]),
        Turn::new([assistant_message("planned")]),
    ]);
    let world = World::new(
        script,
        &[("model_context_window", toml::Value::Integer(100_000))],
    )
    .await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "plan it").await?;
    let live_usage = server
        .next_notification::<nt::ThreadTokenUsageUpdated>(|_| true)
        .await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    let live_turn = completed["turn"].clone();
    assert_eq!(
        live_turn["plan"],
        json!({"explanation": "looked", "plan": [
            {"step": "look", "status": "completed"},
            {"step": "answer", "status": "inProgress"},
        ]}),
        "{completed}"
    );
    assert_eq!(live_turn["tokenUsage"]["modelContextWindow"], 100_000);
    assert!(live_usage.token_usage.total.total_tokens > 0);
    drop(server);

    // After a restart the recorded turn is the live one, and its usage is told again.
    let mut server = world.server().await?;
    let resumed = server
        .request("thread/resume", json!({"threadId": thread_id}))
        .await?;
    let turn = &resumed["thread"]["turns"][0];
    assert_eq!(turn["plan"], live_turn["plan"], "{resumed}");
    assert_eq!(turn["tokenUsage"], live_turn["tokenUsage"], "{resumed}");
    let told = server
        .next_notification::<nt::ThreadTokenUsageUpdated>(|told| told.thread_id == thread_id)
        .await?;
    assert_eq!(told.turn_id, turn_id);
    assert_eq!(
        serde_json::to_value(&told.token_usage)?,
        live_turn["tokenUsage"]
    );

    let forked = server
        .request("thread/fork", json!({"threadId": thread_id}))
        .await?;
    let fork_id = forked["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let told = server
        .next_notification::<nt::ThreadTokenUsageUpdated>(|told| told.thread_id == fork_id)
        .await?;
    assert_eq!(
        serde_json::to_value(&told.token_usage)?,
        live_turn["tokenUsage"]
    );
    Ok(())
}

/// A thread renamed while its turn is being recorded: the name goes through the thread's own
/// record (one writer per thread), so after a restart both the name and the whole turn are
/// there, every line of the record whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_during_a_running_turn_is_recorded_with_the_turn() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message(
        "a long answer streamed word by word while the thread is renamed",
    )])
    .with_event_delay(std::time::Duration::from_millis(20))]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "talk for a while").await?;
    server
        .next_notification::<nt::AgentMessageDelta>(|delta| delta.thread_id == thread_id)
        .await?;
    server
        .request(
            "thread/name/set",
            json!({"threadId": thread_id, "name": "Renamed mid-turn"}),
        )
        .await?;
    server.read_turn_completed(&turn_id).await?;
    let path = server
        .call::<rq::ThreadRead>(ThreadReadParams {
            thread_id: thread_id.clone(),
            include_turns: false,
        })
        .await?
        .thread
        .path
        .ok_or_else(|| anyhow::anyhow!("no rollout path"))?;
    drop(server);

    let text = std::fs::read_to_string(&path)?;
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .map_err(|err| anyhow::anyhow!("a torn line ({err}): {line}"))?;
    }
    assert_eq!(text.matches("\"thread_name\"").count(), 1, "{text}");
    let mut server = world.server().await?;
    let read = server
        .call::<rq::ThreadRead>(ThreadReadParams {
            thread_id: thread_id.clone(),
            include_turns: true,
        })
        .await?;
    assert_eq!(read.thread.name.as_deref(), Some("Renamed mid-turn"));
    assert_eq!(
        agent_texts(&read.thread.turns[0]),
        ["a long answer streamed word by word while the thread is renamed"]
    );
    // Not loaded here: named through the server's thread catalog; the last name wins.
    server
        .request(
            "thread/name/set",
            json!({"threadId": thread_id, "name": "Renamed at rest"}),
        )
        .await?;
    let listed = server
        .call::<rq::ThreadList>(ThreadListParams::default())
        .await?;
    assert_eq!(listed.data[0].name.as_deref(), Some("Renamed at rest"));
    Ok(())
}

/// The texts of a turn's agent messages.
fn agent_texts(turn: &keel_protocol::app_server::Turn) -> Vec<&str> {
    turn.items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The ids of listed threads, in order.
fn ids_of(list: &ThreadListResponse) -> Vec<&str> {
    list.data.iter().map(|thread| thread.id.as_str()).collect()
}

// Written with the typed client: params and results are the protocol's structs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_read_name_archive_and_unarchive() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let mut ids = Vec::new();
    for prompt in ["alpha task", "beta task"] {
        let id = server.start_thread(world.thread_params()).await?;
        let turn = server.start_turn(&id, prompt).await?;
        server.read_turn_completed(&turn).await?;
        ids.push(id);
    }
    let set_name = |thread_id: &str, name: &str| ThreadSetNameParams {
        thread_id: thread_id.to_string(),
        name: name.to_string(),
    };
    let thread = |thread_id: &str| ThreadIdParams {
        thread_id: thread_id.to_string(),
    };
    // A thread that never had a turn is not listed (as in Codex), even once named.
    let idle = server.start_thread(world.thread_params()).await?;
    server
        .call::<rq::ThreadSetName>(set_name(&idle, "never used"))
        .await?;
    server
        .next_notification::<nt::ThreadNameUpdated>(|n| n.thread_id == idle)
        .await?;
    let list = server
        .call::<rq::ThreadList>(ThreadListParams::default())
        .await?;
    assert_eq!(
        ids_of(&list),
        vec![ids[1].as_str(), ids[0].as_str()],
        "newest first"
    );
    assert_eq!(list.data[0].preview, "beta task");

    let page = server
        .call::<rq::ThreadList>(ThreadListParams {
            limit: Some(1),
            ..Default::default()
        })
        .await?;
    assert_eq!(page.data.len(), 1);
    let cursor = page.next_cursor.clone();
    assert!(cursor.is_some(), "{page:?}");
    let page2 = server
        .call::<rq::ThreadList>(ThreadListParams {
            limit: Some(1),
            cursor,
            ..Default::default()
        })
        .await?;
    assert_eq!(ids_of(&page2), vec![ids[0].as_str()]);

    let search = server
        .call::<rq::ThreadList>(ThreadListParams {
            search_term: Some("ALPHA".into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(ids_of(&search), vec![ids[0].as_str()]);
    let elsewhere = server
        .call::<rq::ThreadList>(ThreadListParams {
            cwd: Some(ThreadListCwdFilter::One("/nonexistent".into())),
            ..Default::default()
        })
        .await?;
    assert!(elsewhere.data.is_empty(), "{elsewhere:?}");

    server
        .call::<rq::ThreadSetName>(set_name(&ids[0], "Named"))
        .await?;
    let renamed = server
        .next_notification::<nt::ThreadNameUpdated>(|n| n.thread_id == ids[0])
        .await?;
    assert_eq!(renamed.thread_name.as_deref(), Some("Named"));
    let read = server
        .call::<rq::ThreadRead>(ThreadReadParams {
            thread_id: ids[0].clone(),
            include_turns: true,
        })
        .await?;
    assert_eq!(read.thread.name.as_deref(), Some("Named"));
    assert_eq!(agent_texts(&read.thread.turns[0]), vec!["one"]);

    // Loaded: the two threads with turns and the idle one.
    let loaded = server
        .call::<rq::ThreadLoadedList>(ThreadLoadedListParams::default())
        .await?;
    assert_eq!(loaded.data.len(), 3, "{loaded:?}");

    server.call::<rq::ThreadArchive>(thread(&ids[0])).await?;
    server
        .next_notification::<nt::ThreadArchived>(|n| n.thread_id == ids[0])
        .await?;
    let list = server
        .call::<rq::ThreadList>(ThreadListParams::default())
        .await?;
    assert_eq!(ids_of(&list), vec![ids[1].as_str()]);
    let archived = server
        .call::<rq::ThreadList>(ThreadListParams {
            archived: Some(true),
            ..Default::default()
        })
        .await?;
    assert_eq!(ids_of(&archived), vec![ids[0].as_str()]);
    let read = server
        .call::<rq::ThreadRead>(ThreadReadParams {
            thread_id: ids[0].clone(),
            include_turns: false,
        })
        .await?;
    assert_eq!(read.thread.status, ThreadStatus::NotLoaded);

    let back = server.call::<rq::ThreadUnarchive>(thread(&ids[0])).await?;
    assert_eq!(back.thread.id, ids[0]);
    let list = server
        .call::<rq::ThreadList>(ThreadListParams::default())
        .await?;
    assert_eq!(list.data.len(), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_unsubscribe_unloads_the_thread_and_opt_out_filters_methods() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("streamed")]),
        Turn::new([assistant_message("after resume")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = keel_test_support::AppServerProcess::spawn(world.builder())?;
    server
        .initialize_with(json!({"optOutNotificationMethods": ["item/agentMessage/delta"]}))
        .await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "one").await?;
    let messages = until_turn_completed(&mut server, &turn_id).await?;
    let seen = methods(&messages);
    assert!(
        !seen.iter().any(|m| m == "item/agentMessage/delta"),
        "{seen:?}"
    );
    assert!(seen.iter().any(|m| m == "item/completed"), "{seen:?}");

    // The only subscriber leaves: the thread is unloaded, and that client is told so.
    let status = server
        .request("thread/unsubscribe", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(status["status"], "unsubscribed");
    let changed = server
        .read_until("thread/status/changed to notLoaded", |m| {
            m["method"] == "thread/status/changed" && m["params"]["status"]["type"] == "notLoaded"
        })
        .await?;
    assert_eq!(changed["params"]["threadId"], thread_id.as_str());
    let closed = server.read_notification("thread/closed").await?;
    assert_eq!(closed["params"]["threadId"], thread_id.as_str());
    let again = server
        .request("thread/unsubscribe", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(again["status"], "notLoaded");
    let loaded = server.request("thread/loaded/list", json!({})).await?;
    assert_eq!(loaded["data"], json!([]));

    // Nothing is lost: resuming loads it from its file, history included, and it runs turns.
    let resumed = server
        .request("thread/resume", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(resumed["thread"]["turns"].as_array().map(Vec::len), Some(1));
    let turn_id = server.start_turn(&thread_id, "two").await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_threads_are_not_listed() -> anyhow::Result<()> {
    let world = World::new(Script::new([Turn::new([assistant_message("x")])]), &[]).await?;
    let mut server = world.server().await?;
    let start = server
        .request(
            "thread/start",
            json!({"cwd": world.ws(), "ephemeral": true}),
        )
        .await?;
    assert_eq!(start["thread"]["ephemeral"], true);
    assert!(start["thread"]["path"].is_null());
    let id = start["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let turn = server.start_turn(&id, "hi").await?;
    server.read_turn_completed(&turn).await?;
    let list = server.request("thread/list", json!({})).await?;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(0));
    Ok(())
}
