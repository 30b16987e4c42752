//! The PostgreSQL thread store as servers on several hosts share it, each server a store
//! connected to one real cluster: what one records, another lists, searches, names, archives
//! and resumes; one writer at a time, fenced by the thread's epoch; a running turn's lease
//! makes another server wait, and lapses when its server stops renewing it.

use std::time::Duration;

use anyhow::Context;
use keel_core::{
    CoreError, ListSort, PostgresThreadStore, RolloutItem, RolloutStore, SessionMeta,
    ThreadCatalog, ThreadFilter, ThreadLease, ThreadSearch,
};
use keel_protocol::ConversationId;
use keel_test_support::PostgresCluster;
use serde_json::json;

/// One server's store: its name, a lease of `lease`, waiting up to `wait` for another's turn.
async fn server(
    cluster: &PostgresCluster,
    name: &str,
    lease: Duration,
    wait: Duration,
) -> anyhow::Result<PostgresThreadStore> {
    // The password in the URL (the test's own cluster); deployments use a password file.
    let url = cluster
        .url()
        .replacen("@", &format!(":{}@", cluster.password()), 1);
    let store = PostgresThreadStore::connect(
        &url,
        ThreadLease {
            holder: name.to_string(),
            length: lease,
            wait,
        },
    )
    .await?;
    Ok(store)
}

fn meta(id: ConversationId, cwd: &str) -> SessionMeta {
    SessionMeta {
        id,
        timestamp: "2026-11-29T08:00:00.000Z".to_string(),
        cwd: cwd.into(),
        model: Some("mock-model".to_string()),
        originator: "keel-test".to_string(),
        cli_version: "0.0.0".to_string(),
        forked_from: None,
        dynamic_tools: Vec::new(),
        source: None,
        model_provider: Some("mock".to_string()),
    }
}

fn event(payload: serde_json::Value) -> anyhow::Result<RolloutItem> {
    Ok(serde_json::from_value(
        json!({"type": "event_msg", "payload": payload}),
    )?)
}

fn turn_started(turn: &str) -> anyhow::Result<RolloutItem> {
    event(json!({"type": "task_started", "turn_id": turn}))
}

fn turn_complete(turn: &str) -> anyhow::Result<RolloutItem> {
    event(json!({"type": "task_complete", "turn_id": turn, "last_agent_message": null}))
}

fn user(text: &str) -> anyhow::Result<RolloutItem> {
    event(json!({"type": "user_message", "message": text, "images": []}))
}

fn agent(text: &str) -> anyhow::Result<RolloutItem> {
    event(json!({"type": "agent_message", "message": text}))
}

/// A search of the live threads for `term`, first page.
fn live(term: &str) -> ThreadSearch {
    ThreadSearch {
        term: term.to_string(),
        archived: false,
        cursor: None,
        limit: 10,
    }
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn what_one_server_records_every_server_lists_searches_names_and_loads() -> anyhow::Result<()>
{
    let cluster = PostgresCluster::start_required()?;
    let a = server(&cluster, "server-a", LONG, LONG).await?;
    let b = server(&cluster, "server-b", LONG, LONG).await?;

    let mut ids = Vec::new();
    for (n, words) in ["the kiwi orchard", "a plum tree", "more kiwi_fruit 100%"]
        .iter()
        .enumerate()
    {
        let id = ConversationId::new();
        let sink = a.create(meta(id, &format!("/work/{n}"))).await?;
        sink.record(&[
            turn_started("t1")?,
            user(&format!("please look at {words}"))?,
            agent(&format!("done with {words}"))?,
            turn_complete("t1")?,
        ])
        .await?;
        ids.push(id);
    }
    // A thread without a turn is not listed (as with files).
    let empty = ConversationId::new();
    a.create(meta(empty, "/work/empty")).await?;

    // Server B lists what A recorded, newest first, a page at a time.
    let first = b
        .list(ThreadFilter {
            limit: 2,
            ..ThreadFilter::default()
        })
        .await?;
    let listed: Vec<_> = first.items.iter().map(|s| s.id).collect();
    anyhow::ensure!(listed.len() == 2, "first page: {listed:?}");
    let cursor = first.next_cursor.context("a second page")?;
    let second = b
        .list(ThreadFilter {
            limit: 2,
            cursor: Some(keel_core::ListCursor::decode(&cursor, ListSort::Created)?),
            ..ThreadFilter::default()
        })
        .await?;
    let mut all: Vec<_> = listed
        .into_iter()
        .chain(second.items.iter().map(|s| s.id))
        .collect();
    anyhow::ensure!(second.next_cursor.is_none(), "two pages only");
    all.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(all, expected, "every thread with a turn, once");
    let summary = second
        .items
        .first()
        .or(first.items.first())
        .context("a summary")?;
    assert!(summary.has_turns && summary.preview.starts_with("please look at"));

    // A filter Rust applies (the cwd) answers alike.
    let by_cwd = b
        .list(ThreadFilter {
            limit: 10,
            cwds: Some(vec!["/work/1".into()]),
            ..ThreadFilter::default()
        })
        .await?;
    assert_eq!(
        by_cwd.items.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![ids[1]]
    );

    // Source kinds and providers are filtered in the database, as clients send them.
    use keel_protocol::app_server::ThreadSourceKind;
    let interactive = b
        .list(ThreadFilter {
            limit: 10,
            source_kinds: vec![ThreadSourceKind::Cli, ThreadSourceKind::Vscode],
            model_providers: vec!["mock".to_string()],
            excluded: vec![ids[0]],
            ..ThreadFilter::default()
        })
        .await?;
    let mut kept: Vec<_> = interactive.items.iter().map(|s| s.id).collect();
    kept.sort();
    let mut want_kept = vec![ids[1], ids[2]];
    want_kept.sort();
    assert_eq!(
        kept, want_kept,
        "recorded without a source: an interactive CLI"
    );
    let editors_only = b
        .list(ThreadFilter {
            limit: 10,
            source_kinds: vec![ThreadSourceKind::Vscode],
            ..ThreadFilter::default()
        })
        .await?;
    assert!(editors_only.items.is_empty(), "{:?}", editors_only.items);

    // Search: case-insensitive substrings of user and assistant messages; `%` and `_` are
    // literal characters, not wildcards.
    let kiwi = b.search(live("KIWI")).await?;
    let mut hits: Vec<_> = kiwi.items.iter().map(|h| h.summary.id).collect();
    hits.sort();
    let mut want = vec![ids[0], ids[2]];
    want.sort();
    assert_eq!(hits, want);
    assert!(
        kiwi.items
            .iter()
            .all(|h| h.snippet.to_lowercase().contains("kiwi")),
        "{:?}",
        kiwi.items
    );
    let literal = b.search(live("100%")).await?;
    assert_eq!(
        literal
            .items
            .iter()
            .map(|h| h.summary.id)
            .collect::<Vec<_>>(),
        vec![ids[2]]
    );
    let wildcard = b.search(live("kiwi_f")).await?;
    assert_eq!(wildcard.items.len(), 1, "`_` is literal");
    let bad_cursor = b
        .search(ThreadSearch {
            cursor: Some("not-a-cursor".to_string()),
            ..live("kiwi")
        })
        .await;
    assert!(
        matches!(
            bad_cursor,
            Err(keel_core::ThreadCatalogError::UnknownCursor(_))
        ),
        "{bad_cursor:?}"
    );

    // B names a thread A recorded; the name is found by search and in A's summary.
    assert!(b.rename(ids[1], "Orchard Plans".to_string()).await?);
    let named = a.find(ids[1], false).await?.context("found")?;
    assert_eq!(named.name.as_deref(), Some("Orchard Plans"));
    let by_name = a.search(live("orchard plans")).await?;
    assert_eq!(
        by_name.items.first().map(|h| h.snippet.as_str()),
        Some("Orchard Plans")
    );

    // Archive on B, unarchive on A, delete on B.
    assert!(b.archive(ids[0]).await?);
    assert!(!b.archive(ids[0]).await?, "already archived");
    assert!(a.find(ids[0], false).await?.is_none());
    assert!(a.find(ids[0], true).await?.is_some());
    let back = a.unarchive(ids[0]).await?.context("unarchived")?;
    assert_eq!(back.id, ids[0]);
    assert!(b.delete(ids[2]).await?);
    assert!(a.load(ids[2]).await?.is_none());
    assert!(!b.delete(ids[2]).await?);

    // Every item is loaded back, in order, by the other server.
    let items = b.load(ids[1]).await?.context("loaded")?;
    assert!(matches!(items.first(), Some(RolloutItem::SessionMeta(m)) if m.id == ids[1]));
    assert!(matches!(items.last(), Some(RolloutItem::ThreadName(name)) if name == "Orchard Plans"));
    assert_eq!(items.len(), 6);
    b.ready().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_server_that_lost_its_thread_cannot_append_and_a_running_turn_makes_others_wait()
-> anyhow::Result<()> {
    let cluster = PostgresCluster::start_required()?;
    let a = server(&cluster, "server-a", LONG, LONG).await?;
    let b = server(&cluster, "server-b", LONG, Duration::from_millis(300)).await?;
    let id = ConversationId::new();
    let on_a = a.create(meta(id, "/work")).await?;
    on_a.record(&[turn_started("t1")?, user("hello")?]).await?;

    // A runs a turn: B's resume waits its bound, then names the holder.
    let held = b.open(id).await;
    match held {
        Err(CoreError::ThreadHeld {
            holder,
            retry_after_secs,
            ..
        }) => {
            assert_eq!(holder, "server-a");
            assert!((1..=30).contains(&retry_after_secs), "{retry_after_secs}");
        }
        other => anyhow::bail!(
            "expected the thread to be held: {:?}",
            other.map(|s| s.is_some())
        ),
    }

    // The turn ends; B takes the thread; A's next append is refused, B's is kept.
    on_a.record(&[agent("hi")?, turn_complete("t1")?]).await?;
    let on_b = b.open(id).await?.context("B opens it")?;
    let refused = on_a.record(&[user("from the old writer")?]).await;
    assert!(
        matches!(refused, Err(CoreError::LeaseLost(lost)) if lost == id),
        "{refused:?}"
    );
    on_b.record(&[turn_started("t2")?, user("from the new writer")?])
        .await?;
    let items = a.load(id).await?.context("loaded")?;
    let texts: Vec<String> = items
        .iter()
        .filter_map(|item| match item {
            RolloutItem::EventMsg(keel_protocol::EventMsg::UserMessage(m)) => {
                Some(m.message.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["hello", "from the new writer"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_dead_servers_lease_lapses_and_another_server_takes_the_thread() -> anyhow::Result<()> {
    let cluster = PostgresCluster::start_required()?;
    let lease = Duration::from_millis(1500);
    let a = server(&cluster, "server-a", lease, lease).await?;
    let b = server(&cluster, "server-b", lease, Duration::from_secs(20)).await?;
    let id = ConversationId::new();
    let on_a = a.create(meta(id, "/work")).await?;
    on_a.record(&[turn_started("t1")?, user("hello")?]).await?;

    // While A lives, its renewals keep the lease: B, waiting less than A keeps renewing,
    // is told who holds it.
    let impatient = server(&cluster, "server-c", lease, Duration::from_millis(2500)).await?;
    assert!(
        matches!(impatient.open(id).await, Err(CoreError::ThreadHeld { .. })),
        "A renews its lease while its turn runs"
    );

    // A dies mid-turn (its sink and renewals are gone): B's resume gets the thread once the
    // lease lapses, well within its wait.
    drop(on_a);
    drop(a);
    let started = std::time::Instant::now();
    let on_b = tokio::time::timeout(Duration::from_secs(30), b.open(id))
        .await
        .context("B's open returns")??
        .context("B opens it")?;
    assert!(started.elapsed() < Duration::from_secs(20));
    on_b.record(&[user("resumed")?]).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_server_hears_what_other_servers_do_to_threads_but_not_its_own() -> anyhow::Result<()> {
    let cluster = PostgresCluster::start_required()?;
    let a = server(&cluster, "server-a", LONG, LONG).await?;
    let b = server(&cluster, "server-b", LONG, LONG).await?;
    let mut heard = a.changes().context("a shared store announces changes")?;
    let id = ConversationId::new();
    let sink = a.create(meta(id, "/work")).await?;
    sink.record(&[turn_started("t1")?, user("hello")?, turn_complete("t1")?])
        .await?;
    // A's own rename is not announced back to A.
    assert!(a.rename(id, "mine".to_string()).await?);
    assert!(b.rename(id, "theirs".to_string()).await?);
    assert!(b.archive(id).await?);
    assert!(b.unarchive(id).await?.is_some());
    b.open(id).await?.context("B opens it")?;
    assert!(b.delete(id).await?);
    let mut kinds = Vec::new();
    while kinds.len() < 5 {
        let change = tokio::time::timeout(Duration::from_secs(10), heard.recv())
            .await
            .context("a change in time")??;
        assert_eq!(change.id, id);
        assert!(change.by.starts_with("server-b#"), "{}", change.by);
        kinds.push(change.kind);
    }
    use keel_core::ThreadChangeKind::*;
    assert_eq!(kinds, vec![Renamed, Archived, Unarchived, Opened, Deleted]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_note_changes_only_when_it_still_reads_what_its_writer_saw() -> anyhow::Result<()> {
    use keel_core::NoteSwap;
    let cluster = PostgresCluster::start_required()?;
    let a = server(&cluster, "server-a", LONG, LONG).await?;
    let b = server(&cluster, "server-b", LONG, LONG).await?;
    let id = ConversationId::new();
    a.create(meta(id, "/work")).await?;
    let (a_notes, b_notes) = (
        a.notes().context("notes on a")?,
        b.notes().context("notes on b")?,
    );
    assert_eq!(a_notes.note(id, "k").await?, None);
    assert_eq!(
        a_notes.swap_note(id, "k", None, Some("one".into())).await?,
        NoteSwap::Done
    );
    // B saw nothing yet: its write is refused and told what is there now.
    assert_eq!(
        b_notes.swap_note(id, "k", None, Some("two".into())).await?,
        NoteSwap::Changed(Some("one".into()))
    );
    assert_eq!(
        b_notes
            .swap_note(id, "k", Some("one".into()), Some("two".into()))
            .await?,
        NoteSwap::Done
    );
    assert_eq!(a_notes.note(id, "k").await?.as_deref(), Some("two"));
    // A note of a thread the store does not hold is never written.
    let stranger = ConversationId::new();
    assert_eq!(
        a_notes
            .swap_note(stranger, "k", None, Some("x".into()))
            .await?,
        NoteSwap::Changed(None)
    );
    // Deleting the thread deletes its notes.
    assert!(a.delete(id).await?);
    assert_eq!(b_notes.note(id, "k").await?, None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_postgres),
    ignore = "needs PostgreSQL's server binaries (.ci/run installs them)"
)]
async fn a_turn_that_fails_gives_up_its_lease_and_a_taken_over_writer_stays_fenced()
-> anyhow::Result<()> {
    let cluster = PostgresCluster::start_required()?;
    let a = server(&cluster, "server-a", LONG, LONG).await?;
    let b = server(&cluster, "server-b", LONG, Duration::from_millis(300)).await?;
    let id = ConversationId::new();
    let on_a = a.create(meta(id, "/work")).await?;
    on_a.record(&[turn_started("t1")?, user("hello")?]).await?;
    // The model failed: the turn ends with its error, and the thread is free at once.
    on_a.record(&[event(
        json!({"type": "error", "message": "the model failed"}),
    )?])
    .await?;
    b.open(id).await?.context("B opens it without waiting")?;
    for _ in 0..2 {
        let refused = on_a.record(&[user("again")?]).await;
        assert!(
            matches!(refused, Err(CoreError::LeaseLost(_))),
            "{refused:?}"
        );
    }
    Ok(())
}
