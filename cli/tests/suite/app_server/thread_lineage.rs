//! Thread lineage and `thread/list`'s filters, as Codex 0.171's clients use them: the TUI asks
//! for a thread's sub-agents after every turn (`ancestorThreadId` with `sourceKinds:
//! ["subAgentThreadSpawn"]`) and lists interactive threads by default; every other field of
//! the request does what Codex's does, and what Keel cannot filter on is answered as Codex
//! answers it.

use anyhow::Context;
use keel_test_support::{
    AppServerProcess, CapturedRequest, MockModelServer, Turn, assistant_message, function_call,
};
use serde_json::{Value, json};

use super::common::World;
use crate::suite::agents::input_text;

/// A parent that spawns a kid that spawns a grandkid, each waiting for its child; any other
/// prompt gets a plain answer.
fn family(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    let spawned = |call: &str| {
        request
            .tool_output(call)
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .and_then(|v| v["agent_id"].as_str().map(str::to_string))
    };
    let delegate = |spawn: &str, wait: &str, task: &str, done: &str| {
        if request.tool_output(spawn).is_some() && spawned(spawn).is_none() {
            return Turn::new([assistant_message("could not spawn")]);
        }
        let Some(id) = spawned(spawn) else {
            return Turn::new([function_call(
                spawn,
                "spawn_agent",
                json!({ "message": task }).to_string(),
            )]);
        };
        if request.tool_output(wait).is_none() {
            return Turn::new([function_call(
                wait,
                "wait_agent",
                json!({"ids": [id], "timeout_ms": 60000}).to_string(),
            )]);
        }
        Turn::new([assistant_message(done)])
    };
    Some(if text.contains("GRAND-JOB") {
        Turn::new([assistant_message("grandkid done")])
    } else if text.contains("KID-TASK") {
        delegate("s2", "w2", "GRAND-JOB: answer", "kid done")
    } else if text.contains("delegate") {
        delegate("s1", "w1", "KID-TASK: ask your own helper", "parent done")
    } else {
        Turn::new([assistant_message("ok")])
    })
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|thread| thread["id"].as_str().map(str::to_string))
        .collect()
}

async fn list(server: &mut AppServerProcess, params: Value) -> anyhow::Result<Vec<String>> {
    Ok(ids(&server.request("thread/list", params).await?))
}

/// The error `thread/list` answers `params` with: its code and message.
async fn refused(server: &mut AppServerProcess, params: Value) -> anyhow::Result<(i64, String)> {
    match server.request("thread/list", params.clone()).await {
        Ok(page) => anyhow::bail!("{params} was listed: {page}"),
        Err(keel_test_support::Error::JsonRpc { error, .. }) => Ok((
            error["code"].as_i64().unwrap_or_default(),
            error["message"].as_str().unwrap_or_default().to_string(),
        )),
        Err(err) => Err(err.into()),
    }
}

async fn turn(server: &mut AppServerProcess, thread: &str, prompt: &str) -> anyhow::Result<()> {
    let turn = server.start_turn(thread, prompt).await?;
    let completed = server.read_turn_completed(&turn).await?;
    anyhow::ensure!(
        completed["turn"]["status"] == "completed",
        "turn on {thread}: {completed}"
    );
    Ok(())
}

/// The threads a server announced with `thread/started` that `parent` spawned.
async fn spawned_by(server: &mut AppServerProcess, parent: &str) -> anyhow::Result<String> {
    let started = server
        .read_until("a spawned thread", |message| {
            message["method"] == "thread/started"
                && message["params"]["thread"]["parentThreadId"] == parent
        })
        .await?;
    started["params"]["thread"]["id"]
        .as_str()
        .map(str::to_string)
        .context("spawned thread id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_list_shows_each_thread_its_own_agents_and_interactive_threads_by_default()
-> anyhow::Result<()> {
    let mock = MockModelServer::builder().responder(family).start().await?;
    let world = World::with_mock(
        mock,
        &[
            ("agents.max_depth", toml::Value::Integer(2)),
            (
                "model_providers.other.base_url",
                toml::Value::String("http://127.0.0.1:9/v1".into()),
            ),
            (
                "model_providers.other.name",
                toml::Value::String("other".into()),
            ),
        ],
    )?;
    let mut server = world.server().await?;

    // A thread whose agent spawns a kid, whose agent spawns a grandkid.
    let parent = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&parent, "delegate this").await?;
    let kid = spawned_by(&mut server, &parent).await?;
    let grandkid = spawned_by(&mut server, &kid).await?;
    let completed = server.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "completed", "{completed}");
    // An unrelated thread, then a `keel exec` run in the same home.
    let other = server.start_thread(world.thread_params()).await?;
    turn(&mut server, &other, "hello").await?;
    let out =
        crate::suite::exec::keel_exec(world.home.path(), world.ws(), &["hello"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let exec = list(&mut server, json!({"sourceKinds": ["exec"]})).await?;
    assert_eq!(exec.len(), 1, "{exec:?}");

    // By default: interactive threads only (the app-server records `vscode`, as Codex's).
    let listed = server.request("thread/list", json!({})).await?;
    assert_eq!(ids(&listed), [other.as_str(), parent.as_str()]);
    assert_eq!(listed["data"][0]["source"], "vscode");
    assert_eq!(listed["data"][0]["modelProvider"], "mock");
    assert_eq!(
        list(&mut server, json!({"sourceKinds": []})).await?,
        ids(&listed)
    );

    // What the 0.171 TUI asks after every turn: this thread's agents, at any depth.
    let agents = json!({"ancestorThreadId": parent, "sourceKinds": ["subAgentThreadSpawn"]});
    let page = server.request("thread/list", agents).await?;
    assert_eq!(ids(&page), [grandkid.as_str(), kid.as_str()]);
    assert_eq!(page["data"][1]["parentThreadId"], parent.as_str());
    assert_eq!(
        page["data"][1]["source"]["subAgent"]["thread_spawn"]["parent_thread_id"],
        parent.as_str()
    );
    assert_eq!(page["data"][0]["parentThreadId"], kid.as_str());
    let unrelated = json!({"ancestorThreadId": other, "sourceKinds": ["subAgentThreadSpawn"]});
    assert_eq!(list(&mut server, unrelated).await?, Vec::<String>::new());
    // Without `sourceKinds`, a thread's agents are listed whatever their kind.
    let any_kind = json!({"ancestorThreadId": parent});
    assert_eq!(
        list(&mut server, any_kind).await?,
        [grandkid.as_str(), kid.as_str()]
    );
    let interactive_kids = json!({"parentThreadId": parent, "sourceKinds": ["vscode"]});
    assert_eq!(
        list(&mut server, interactive_kids).await?,
        Vec::<String>::new()
    );
    let direct = json!({"parentThreadId": parent, "sourceKinds": ["subAgentThreadSpawn"]});
    assert_eq!(list(&mut server, direct).await?, [kid.as_str()]);
    let kinds = json!({"sourceKinds": ["exec", "subAgentThreadSpawn"]});
    assert_eq!(
        list(&mut server, kinds).await?,
        [exec[0].as_str(), grandkid.as_str(), kid.as_str()]
    );

    // Ids, directories and providers.
    let empty: Vec<String> = Vec::new();
    assert_eq!(
        list(&mut server, json!({"includedThreadIds": []})).await?,
        empty
    );
    let only = json!({"includedThreadIds": [other, kid]});
    assert_eq!(list(&mut server, only).await?, [other.as_str()]);
    let without = json!({"excludedThreadIds": [other]});
    assert_eq!(list(&mut server, without).await?, [parent.as_str()]);
    let cwds = json!({"cwd": [world.ws(), "/nowhere"]});
    assert_eq!(list(&mut server, cwds).await?, ids(&listed));
    assert_eq!(list(&mut server, json!({"cwd": []})).await?, empty);
    let mock_only = json!({"modelProviders": ["mock"]});
    assert_eq!(list(&mut server, mock_only).await?, ids(&listed));
    let other_only = json!({"modelProviders": ["other"]});
    assert_eq!(list(&mut server, other_only).await?, empty);
    let any_provider = json!({"modelProviders": []});
    assert_eq!(list(&mut server, any_provider).await?, ids(&listed));

    // Order and pages: oldest first; by last change; a page at a time, and back.
    let oldest_first = json!({"sortDirection": "asc"});
    assert_eq!(
        list(&mut server, oldest_first).await?,
        [parent.as_str(), other.as_str()]
    );
    turn(&mut server, &parent, "hello again").await?;
    let by_update = json!({"sortKey": "updated_at"});
    assert_eq!(
        list(&mut server, by_update).await?,
        [parent.as_str(), other.as_str()]
    );
    let recency = json!({"sortKey": "recency_at", "sortDirection": "asc"});
    assert_eq!(
        list(&mut server, recency).await?,
        [other.as_str(), parent.as_str()]
    );
    for sort_key in ["created_at", "updated_at"] {
        let first = server
            .request("thread/list", json!({"limit": 1, "sortKey": sort_key}))
            .await?;
        let cursor = first["nextCursor"].as_str().context("a next page")?;
        let second = server
            .request(
                "thread/list",
                json!({"limit": 1, "sortKey": sort_key, "cursor": cursor}),
            )
            .await?;
        assert_eq!(second["nextCursor"], Value::Null, "{second}");
        // From the second page's start, the other way: the second thread, then the first.
        let back = second["backwardsCursor"].as_str().context("backwards")?;
        let reversed = json!({"sortKey": sort_key, "sortDirection": "asc", "cursor": back});
        let mut expected = ids(&second);
        expected.extend(ids(&first));
        assert_eq!(list(&mut server, reversed).await?, expected, "{sort_key}");
    }
    assert_eq!(list(&mut server, json!({"limit": 0})).await?.len(), 1);

    // Sections, projects and accounts: Keel has none.
    assert_eq!(list(&mut server, json!({"sectionId": "abc"})).await?, empty);
    let unsectioned = json!({"sectionId": null, "sortKey": "section_position"});
    assert_eq!(list(&mut server, unsectioned).await?.len(), 2);
    let with = json!({
        "currentAccountOnly": true,
        "useStateDbOnly": true,
        "originators": [],
        "includeAttachedThreads": true,
        "projectId": null
    });
    assert_eq!(list(&mut server, with).await?.len(), 2);
    let attached = json!({"attachedToThreadId": parent});
    assert_eq!(list(&mut server, attached).await?, empty);

    // What it refuses, with Codex's codes and words.
    let too_many: Vec<String> = (0..101)
        .map(|n| format!("01a21a7b-0000-7000-8000-{n:012}"))
        .collect();
    for (params, code, message) in [
        (
            json!({"originators": ["codex_vscode"]}),
            -32602,
            "originator filtering is not supported by the local app-server",
        ),
        (
            json!({"includedThreadIds": too_many}),
            -32602,
            "includedThreadIds accepts at most 100 entries",
        ),
        (
            json!({"excludedThreadIds": too_many}),
            -32602,
            "excludedThreadIds accepts at most 100 entries",
        ),
        (
            json!({"includedThreadIds": ["not-a-uuid"]}),
            -32602,
            "invalid included thread id",
        ),
        (
            json!({"parentThreadId": parent, "ancestorThreadId": parent}),
            -32600,
            "parentThreadId and ancestorThreadId are mutually exclusive",
        ),
        (
            json!({"ancestorThreadId": "bad"}),
            -32600,
            "invalid ancestor thread id",
        ),
        (
            json!({"attachedToThreadId": parent, "parentThreadId": parent}),
            -32600,
            "attachedToThreadId cannot be combined with parentThreadId or ancestorThreadId",
        ),
        (
            json!({"sortKey": "section_position"}),
            -32600,
            "section-position sorting requires a section filter",
        ),
        (json!({"projectId": "p1"}), -32602, "project not found: p1"),
        (json!({"cursor": "bogus"}), -32600, "invalid cursor: bogus"),
        (
            json!({"sourceKinds": ["bogus"]}),
            -32602,
            "unknown variant `bogus`",
        ),
    ] {
        let (got_code, got_message) = refused(&mut server, params.clone()).await?;
        assert_eq!(got_code, code, "{params}: {got_message}");
        assert!(got_message.contains(message), "{params}: {got_message}");
    }
    server.kill().await?;

    // Another server later: lineage comes back from the records, on resume and on fork.
    let mut later = world.server().await?;
    let resumed = later
        .request("thread/resume", json!({"threadId": kid}))
        .await?;
    assert_eq!(resumed["thread"]["parentThreadId"], parent.as_str());
    assert_eq!(
        resumed["thread"]["source"]["subAgent"]["thread_spawn"]["depth"],
        1
    );
    let forked = later
        .request("thread/fork", json!({"threadId": kid}))
        .await?;
    let fork = forked["thread"]["id"]
        .as_str()
        .context("fork id")?
        .to_string();
    assert_eq!(forked["thread"]["parentThreadId"], parent.as_str());
    turn(&mut later, &fork, "hello from the fork").await?;
    let agents = json!({"ancestorThreadId": parent, "sourceKinds": ["subAgentThreadSpawn"]});
    let listed = list(&mut later, agents).await?;
    assert_eq!(listed, [fork.as_str(), grandkid.as_str(), kid.as_str()]);
    // A fork of a top-level thread is the forking client's.
    let forked = later
        .request("thread/fork", json!({"threadId": other}))
        .await?;
    assert_eq!(forked["thread"]["source"], "vscode");
    assert_eq!(forked["thread"]["parentThreadId"], Value::Null);
    Ok(())
}
