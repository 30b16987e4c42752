//! Three app-servers behind HAProxy sharing their threads in one PostgreSQL database, each
//! with its own Keel home: a thread started through the balancer runs a turn on one server,
//! which is killed mid-turn (`SIGKILL`) after the client saw a command complete; the client
//! reconnects through the balancer and resumes the thread on another server once the dead
//! server's lease lapses: the command and its output are there, the turn is recorded as
//! interrupted, and the next turn runs on the new server. Any server lists and searches it.

use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    Fault, Haproxy, JsonLinesProcess, MockModelServer, PostgresCluster, Script, Turn,
    assistant_message, shell_call, write_config,
};
use serde_json::{Value, json};

use super::fleet::{Socket, TOKEN, client, server_with, until, until_closed};

/// Sends request `id` and returns its answer, which must not be an error.
async fn call(socket: &mut Socket, id: u64, method: &str, params: Value) -> anyhow::Result<Value> {
    let answer = super::fleet::call(socket, id, method, params).await?;
    anyhow::ensure!(answer.get("error").is_none(), "{method} failed: {answer}");
    Ok(answer)
}

/// The lease each server takes on a thread while its turn runs.
const LEASE_SECONDS: &str = "2";

/// Servers on one database, each with its own home, named `k1`, `k2`, …
struct Fleet {
    servers: Vec<JsonLinesProcess>,
    addresses: Vec<String>,
    _homes: Vec<tempfile::TempDir>,
}

/// Starts `count` servers on `cluster`'s database, their model `mock`, with `extra` flags.
async fn fleet(
    cluster: &PostgresCluster,
    mock: &MockModelServer,
    workspace: &std::path::Path,
    count: usize,
    extra: &[&str],
) -> anyhow::Result<Fleet> {
    let store = cluster.url();
    let mut fleet = Fleet {
        servers: Vec::new(),
        addresses: Vec::new(),
        _homes: Vec::new(),
    };
    for n in 1..=count {
        let home = tempfile::tempdir()?;
        write_config(
            home.path(),
            &mock.uri(),
            std::iter::empty::<(&str, toml::Value)>(),
        )?;
        let name = format!("k{n}");
        let mut args = vec!["--thread-store", &store, "--server-name", &name];
        args.extend_from_slice(extra);
        let (process, address) = server_with(
            home.path(),
            workspace,
            &args,
            &[("PGPASSWORD", cluster.password())],
        )
        .await?;
        fleet.servers.push(process);
        fleet.addresses.push(address);
        fleet._homes.push(home);
    }
    Ok(fleet)
}

/// The command item `c1` of a turn, if the turn has it.
fn command_output(turn: &Value) -> Option<String> {
    turn["items"]
        .as_array()?
        .iter()
        .find(|item| item["type"] == "commandExecution" && item["id"] == "c1")
        .and_then(|item| item["aggregatedOutput"].as_str())
        .map(str::to_string)
}

/// Which server (its `--server-name`) holds `thread`'s lease now; the holder is the name and
/// a random part of that process's own.
fn holder(cluster: &PostgresCluster, thread: &str) -> anyhow::Result<String> {
    let holder = cluster.psql(&format!(
        "SELECT coalesce(lease_holder, '') FROM keel_threads WHERE id = '{thread}'"
    ))?;
    Ok(holder
        .trim()
        .split_once('#')
        .map_or(holder.trim(), |(name, _)| name)
        .to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(keel_haproxy, keel_postgres)),
    ignore = "needs HAProxy and PostgreSQL's server binaries (.ci/run installs both)"
)]
async fn a_thread_started_on_a_server_killed_mid_turn_is_resumed_on_another() -> anyhow::Result<()>
{
    let cluster = PostgresCluster::start_required()?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([shell_call("c1", ["echo", "seen-before-the-crash"])]),
        // The model's next answer never ends: the turn is running when its server dies.
        Turn::new([assistant_message("never finished")])
            .with_fault(Fault::stall_after(1, Duration::from_secs(600))),
        Turn::new([assistant_message("picked up on another server")]),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;
    let Fleet {
        mut servers,
        addresses,
        _homes,
    } = fleet(
        &cluster,
        &mock,
        workspace.path(),
        3,
        &["--thread-lease-seconds", LEASE_SECONDS],
    )
    .await?;
    let mut balancer = Haproxy::start(&addresses).await?;
    let through = balancer.address().to_string();

    // A client starts a thread through the balancer and runs a turn; it sees the command
    // complete, then the model stalls.
    let mut first = client(&through, TOKEN).await?;
    let started = call(
        &mut first,
        2,
        "thread/start",
        json!({"cwd": workspace.path()}),
    )
    .await?;
    let thread_id = started["result"]["thread"]["id"]
        .as_str()
        .context("a thread id")?
        .to_string();
    assert!(
        started["result"]["thread"]["path"].is_null(),
        "a shared thread has no file: {started}"
    );
    call(
        &mut first,
        3,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "run it and keep going"}]}),
    )
    .await?;
    let seen = until(&mut first, |m| {
        m["method"] == "item/completed" && m["params"]["item"]["id"] == "c1"
    })
    .await?;
    assert!(
        seen["params"]["item"]["aggregatedOutput"]
            .as_str()
            .is_some_and(|out| out.contains("seen-before-the-crash")),
        "{seen}"
    );

    // The server running the turn holds the thread's lease: that is the one killed.
    let running_on = holder(&cluster, &thread_id)?;
    let killed = running_on
        .strip_prefix('k')
        .and_then(|n| n.parse::<usize>().ok())
        .with_context(|| format!("lease holder {running_on:?}"))?;
    // Every other server shows the thread running while that server's lease holds it.
    let onlooker_address = &addresses[if killed == 1 { 1 } else { 0 }];
    let mut onlooker = client(onlooker_address, TOKEN).await?;
    let running = json!({"type": "active", "activeFlags": []});
    let listed = call(&mut onlooker, 2, "thread/list", json!({})).await?;
    assert_eq!(listed["result"]["data"][0]["id"], thread_id, "{listed}");
    assert_eq!(listed["result"]["data"][0]["status"], running, "{listed}");
    let read = call(
        &mut onlooker,
        3,
        "thread/read",
        json!({"threadId": thread_id}),
    )
    .await?;
    assert_eq!(read["result"]["thread"]["status"], running, "{read}");
    let found = call(
        &mut onlooker,
        4,
        "thread/search",
        json!({"searchTerm": "keep going"}),
    )
    .await?;
    assert_eq!(
        found["result"]["data"][0]["thread"]["status"], running,
        "{found}"
    );
    drop(onlooker);
    servers[killed - 1].kill().await?;
    balancer.wait_until_down(killed).await?;
    until_closed(&mut first).await?;

    // The client reconnects through the balancer and resumes its thread on another server
    // (the resume waits for the dead server's lease to lapse).
    let mut again = client(&through, TOKEN).await?;
    let resumed = call(
        &mut again,
        2,
        "thread/resume",
        json!({"threadId": thread_id}),
    )
    .await?;
    let turns = resumed["result"]["thread"]["turns"]
        .as_array()
        .with_context(|| format!("no turns: {resumed}"))?;
    let interrupted = turns.first().context("the first turn")?;
    assert_eq!(interrupted["status"], "interrupted", "{resumed}");
    assert!(
        command_output(interrupted).is_some_and(|out| out.contains("seen-before-the-crash")),
        "the command the client saw is recorded: {interrupted}"
    );

    // The next turn runs on the new server, which now holds the thread while it runs.
    call(
        &mut again,
        3,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "carry on"}]}),
    )
    .await?;
    let completed = until(&mut again, |m| m["method"] == "turn/completed").await?;
    assert_eq!(
        completed["params"]["turn"]["status"], "completed",
        "{completed}"
    );
    let request = mock
        .requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    assert!(
        request.contains("seen-before-the-crash"),
        "the new server's model request carries the recorded command output: {request}"
    );
    assert!(
        request.contains("<turn_aborted>"),
        "the model is told the previous turn did not finish: {request}"
    );

    // Another client, wherever it lands, lists and searches every thread.
    let mut third = client(&through, TOKEN).await?;
    let listed = call(&mut third, 2, "thread/list", json!({})).await?;
    let ids: Vec<&str> = listed["result"]["data"]
        .as_array()
        .context("a listing")?
        .iter()
        .filter_map(|thread| thread["id"].as_str())
        .collect();
    assert_eq!(ids, vec![thread_id.as_str()], "{listed}");
    assert_ne!(
        listed["result"]["data"][0]["status"]["type"], "active",
        "no turn runs anywhere: {listed}"
    );
    let found = call(
        &mut third,
        3,
        "thread/search",
        json!({"searchTerm": "KEEP GOING"}),
    )
    .await?;
    assert_eq!(
        found["result"]["data"][0]["thread"]["id"], thread_id,
        "{found}"
    );
    assert_eq!(
        holder(&cluster, &thread_id)?,
        "",
        "no turn runs: no lease held"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_client_hears_of_changes_another_server_makes_to_its_thread() -> anyhow::Result<()> {
    let cluster = PostgresCluster::start_required()?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("second answer, elsewhere")]),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;
    let Fleet {
        servers,
        addresses,
        _homes,
    } = fleet(&cluster, &mock, workspace.path(), 2, &[]).await?;

    // X runs a turn on server 1 and keeps the thread loaded there.
    let mut x = client(&addresses[0], TOKEN).await?;
    let started = call(&mut x, 2, "thread/start", json!({"cwd": workspace.path()})).await?;
    let thread_id = started["result"]["thread"]["id"]
        .as_str()
        .context("a thread id")?
        .to_string();
    call(
        &mut x,
        3,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    )
    .await?;
    let unread = until(&mut x, |m| m["method"] == "thread/readState/changed").await?;
    until(&mut x, |m| m["method"] == "turn/completed").await?;

    // The finished turn left the thread unread, as every server sees; Y, on server 2,
    // marks it read with the revision server 1 showed, and server 1 then shows that.
    let mut y = client(&addresses[1], TOKEN).await?;
    let on_one = call(&mut x, 4, "thread/read", json!({"threadId": thread_id})).await?;
    let revision = on_one["result"]["readState"]["revision"].clone();
    assert_eq!(
        revision, unread["params"]["readState"]["revision"],
        "{on_one}"
    );
    assert!(
        !on_one["result"]["readState"]["firstUnread"].is_null(),
        "{on_one}"
    );
    let on_two = call(&mut y, 2, "thread/read", json!({"threadId": thread_id})).await?;
    assert_eq!(on_two["result"]["readState"]["revision"], revision);
    let marked = call(
        &mut y,
        3,
        "thread/readState/update",
        json!({"threadId": thread_id, "operation": {"type": "read"}, "expectedRevision": revision}),
    )
    .await?;
    let stale = super::fleet::call(
        &mut x,
        5,
        "thread/readState/update",
        json!({"threadId": thread_id, "operation": {"type": "unread"}, "expectedRevision": revision}),
    )
    .await?;
    assert_eq!(
        stale["error"]["code"], -32600,
        "a stale revision is refused: {stale}"
    );
    let after = call(&mut x, 6, "thread/read", json!({"threadId": thread_id})).await?;
    assert_eq!(
        after["result"]["readState"], marked["result"]["readState"],
        "server 1 shows what server 2 recorded"
    );
    assert!(after["result"]["readState"]["firstUnread"].is_null());

    // Y names it: X hears the new name from its own server.
    call(
        &mut y,
        4,
        "thread/name/set",
        json!({"threadId": thread_id, "name": "Named elsewhere"}),
    )
    .await?;
    let renamed = until(&mut x, |m| m["method"] == "thread/name/updated").await?;
    assert_eq!(renamed["params"]["threadId"], thread_id.as_str());
    assert_eq!(renamed["params"]["threadName"], "Named elsewhere");

    // Y resumes it on server 2: server 1's copy is stale, so X is told it is closed there.
    let resumed = call(&mut y, 5, "thread/resume", json!({"threadId": thread_id})).await?;
    assert_eq!(
        resumed["result"]["thread"]["name"], "Named elsewhere",
        "{resumed}"
    );
    let status = until(&mut x, |m| m["method"] == "thread/status/changed").await?;
    assert_eq!(status["params"]["status"]["type"], "notLoaded", "{status}");
    until(&mut x, |m| m["method"] == "thread/closed").await?;
    let loaded = call(&mut x, 7, "thread/loaded/list", json!({})).await?;
    assert_eq!(loaded["result"]["data"], json!([]), "{loaded}");

    // The thread goes on on server 2, with the first turn's history.
    call(
        &mut y,
        6,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "go on"}]}),
    )
    .await?;
    let completed = until(&mut y, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    assert!(
        mock.requests()
            .last()
            .is_some_and(|request| request.body.to_string().contains("first answer")),
        "the second server's request carries the first turn"
    );
    // Loaded on server 2, shared: it is archived there like any recorded thread.
    call(&mut y, 7, "thread/archive", json!({"threadId": thread_id})).await?;
    let archived = call(&mut x, 8, "thread/list", json!({"archived": true})).await?;
    assert_eq!(
        archived["result"]["data"][0]["id"],
        thread_id.as_str(),
        "{archived}"
    );
    drop(servers);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn two_clients_resuming_one_thread_at_once_share_one_copy() -> anyhow::Result<()> {
    let cluster = PostgresCluster::start_required()?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("first")]),
        Turn::new([assistant_message("second")]),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;
    // Every part bound: what is not would be dropped (the process killed, its home removed).
    let Fleet {
        servers: _servers,
        addresses,
        _homes,
    } = fleet(&cluster, &mock, workspace.path(), 1, &[]).await?;
    let address = &addresses[0];

    // A thread with a turn, then left: it is unloaded.
    let mut starter = client(address, TOKEN).await?;
    let started = call(
        &mut starter,
        2,
        "thread/start",
        json!({"cwd": workspace.path()}),
    )
    .await?;
    let thread_id = started["result"]["thread"]["id"]
        .as_str()
        .context("a thread id")?
        .to_string();
    call(
        &mut starter,
        3,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    )
    .await?;
    until(&mut starter, |m| m["method"] == "turn/completed").await?;
    call(
        &mut starter,
        4,
        "thread/unsubscribe",
        json!({"threadId": thread_id}),
    )
    .await?;
    until(&mut starter, |m| m["method"] == "thread/closed").await?;

    // Two clients resume it at the same moment: both are answered, one copy is loaded.
    let mut first = client(address, TOKEN).await?;
    let mut second = client(address, TOKEN).await?;
    let resume = json!({"threadId": thread_id});
    let (a, b) = tokio::join!(
        call(&mut first, 2, "thread/resume", resume.clone()),
        call(&mut second, 2, "thread/resume", resume.clone()),
    );
    a?;
    b?;
    let loaded = call(&mut first, 3, "thread/loaded/list", json!({})).await?;
    assert_eq!(
        loaded["result"]["data"],
        json!([thread_id.as_str()]),
        "{loaded}"
    );

    // That copy can still record: a turn completes, and both clients see it.
    call(
        &mut second,
        3,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "again"}]}),
    )
    .await?;
    let done = until(&mut second, |m| m["method"] == "turn/completed").await?;
    assert_eq!(done["params"]["turn"]["status"], "completed", "{done}");
    let seen = until(&mut first, |m| m["method"] == "turn/completed").await?;
    assert_eq!(seen["params"]["turn"]["status"], "completed", "{seen}");
    Ok(())
}
