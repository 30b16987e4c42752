//! `thread/list`'s two ways of answering agree: the thread index's query and the filter applied
//! to every rollout's summary (what a server without a usable index does) give the same
//! threads in the same order, page after page, for every filter; and an index copied with its
//! home answers for the copy.

use std::path::Path;

use keel_core::{
    ConversationSummary, ListCursor, ListSort, ThreadFilter, ThreadIndex, list_conversations_in,
};
use keel_protocol::ConversationId;
use keel_protocol::app_server::ThreadSourceKind;
use pretty_assertions::assert_eq;

/// The id of synthetic thread `n`.
fn id(n: usize) -> ConversationId {
    format!("01a21a7b-0000-7000-8000-{n:012}")
        .parse()
        .unwrap_or_else(|err| panic!("id {n}: {err}"))
}

/// Thread `n`: created at minute `n`, last changed at a time that does not follow creation,
/// in one of two directories, under one of two providers; every third thread is a sub-agent
/// of the one before it, one in seven is an `exec` run,
/// one in eleven predates recorded sources.
fn write_rollout(home: &Path, n: usize) -> std::io::Result<()> {
    let created = format!("2026-11-20T10:{n:02}:00.000Z");
    let updated = format!("2026-11-21T{:02}:00:00.000Z", (n * 7) % 24);
    let cwd = if n.is_multiple_of(2) {
        "/work/a"
    } else {
        "/work/b"
    };
    let provider = if n.is_multiple_of(5) {
        "other"
    } else {
        "openai"
    };
    let source = if n.is_multiple_of(11) {
        String::new()
    } else if n % 3 == 2 {
        format!(
            r#","source":{{"subAgent":{{"thread_spawn":{{"parent_thread_id":"{}","depth":1}}}}}}"#,
            id(n - 1)
        )
    } else if n.is_multiple_of(7) {
        r#","source":"exec""#.to_string()
    } else {
        r#","source":"vscode""#.to_string()
    };
    let lines = [
        format!(
            r#"{{"timestamp":"{created}","type":"session_meta","payload":{{"id":"{}","timestamp":"{created}","cwd":"{cwd}","originator":"keel","cli_version":"0.1.0","model_provider":"{provider}"{source}}}}}"#,
            id(n)
        ),
        format!(
            r#"{{"timestamp":"{created}","type":"event_msg","payload":{{"type":"task_started","turn_id":"t","model_context_window":null}}}}"#
        ),
        format!(
            r#"{{"timestamp":"{created}","type":"event_msg","payload":{{"type":"user_message","message":"question {n} {}","images":[]}}}}"#,
            if n.is_multiple_of(4) {
                "deploy"
            } else {
                "build"
            }
        ),
        format!(
            r#"{{"timestamp":"{updated}","type":"event_msg","payload":{{"type":"agent_message","message":"done"}}}}"#
        ),
    ];
    let dir = home.join("sessions/2026/11/20");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join(format!("rollout-2026-11-20T10-{:02}-00-{}.jsonl", n, id(n))),
        lines.join("\n") + "\n",
    )
}

/// The ids on each page of a listing.
type Pages = Vec<Vec<ConversationId>>;

/// Every page of `filter` from the index, then from the summaries, as ids.
fn both_ways(
    index: &ThreadIndex,
    all: &[ConversationSummary],
    filter: &ThreadFilter,
) -> anyhow::Result<(Pages, Pages)> {
    let mut pages = (Vec::new(), Vec::new());
    for (indexed, out) in [(true, &mut pages.0), (false, &mut pages.1)] {
        let mut filter = filter.clone();
        loop {
            let page = if indexed {
                index.list(&filter)?
            } else {
                filter.page(all.to_vec())
            };
            out.push(page.items.iter().map(|s| s.id).collect());
            match page.next_cursor {
                Some(cursor) => filter.cursor = Some(ListCursor::decode(&cursor, filter.sort)?),
                None => break,
            }
        }
    }
    Ok(pages)
}

#[tokio::test]
async fn the_index_and_the_rollouts_list_the_same_threads() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    for n in 1..=40 {
        write_rollout(home.path(), n)?;
    }
    let all = list_conversations_in(&home.path().join("sessions"), 1000, None)
        .await?
        .items;
    assert_eq!(all.len(), 40);
    let index = ThreadIndex::open(home.path())?;
    let base = ThreadFilter {
        limit: 6,
        ..ThreadFilter::default()
    };
    let filters = [
        base.clone(),
        ThreadFilter {
            source_kinds: ThreadSourceKind::INTERACTIVE.to_vec(),
            ..base.clone()
        },
        ThreadFilter {
            source_kinds: vec![
                ThreadSourceKind::Exec,
                ThreadSourceKind::SubAgentThreadSpawn,
            ],
            ascending: true,
            ..base.clone()
        },
        ThreadFilter {
            sort: ListSort::Updated,
            ..base.clone()
        },
        ThreadFilter {
            sort: ListSort::Updated,
            ascending: true,
            cwds: Some(vec!["/work/a".into(), "/elsewhere".into()]),
            ..base.clone()
        },
        ThreadFilter {
            model_providers: vec!["other".to_string()],
            text: Some("DEPLOY".to_string()),
            ..base.clone()
        },
        ThreadFilter {
            included: Some((1..=20).map(id).collect()),
            excluded: vec![id(3), id(4)],
            ..base.clone()
        },
        ThreadFilter {
            ancestor: Some(id(1)),
            ..base.clone()
        },
        ThreadFilter {
            parent: Some(id(4)),
            ..base.clone()
        },
        ThreadFilter {
            included: Some(Vec::new()),
            ..base.clone()
        },
    ];
    for filter in &filters {
        let (indexed, scanned) = both_ways(&index, &all, filter)?;
        assert_eq!(indexed, scanned, "{filter:?}");
    }
    // The filters found something to compare: a sub-agent, an exec run, every thread.
    let (below_one, _) = both_ways(&index, &all, &filters[7])?;
    assert_eq!(below_one.concat(), [id(2)]);
    let (exec_and_agents, _) = both_ways(&index, &all, &filters[2])?;
    assert!(exec_and_agents.concat().contains(&id(7)));
    let (ids, _) = both_ways(&index, &all, &filters[0])?;
    assert_eq!(ids.concat().len(), 40);
    Ok(())
}

/// A home copied elsewhere with its index lists each thread once, from the copy: the index
/// notices it was built for another home and builds itself again.
#[tokio::test]
async fn an_index_copied_with_its_home_lists_each_thread_once() -> anyhow::Result<()> {
    let original = tempfile::tempdir()?;
    for n in 1..=4 {
        write_rollout(original.path(), n)?;
    }
    let listed = ThreadIndex::open(original.path())?.list(&ThreadFilter {
        limit: 50,
        ..ThreadFilter::default()
    })?;
    assert_eq!(listed.items.len(), 4);

    let copy = tempfile::tempdir()?;
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", original.path().display()))
        .arg(copy.path())
        .status()?;
    anyhow::ensure!(status.success(), "cp failed");
    let listed = ThreadIndex::open(copy.path())?.list(&ThreadFilter {
        limit: 50,
        ..ThreadFilter::default()
    })?;
    assert_eq!(listed.items.len(), 4, "{:?}", listed.items);
    assert!(
        listed.items.iter().all(|s| s.path.starts_with(copy.path())),
        "{:?}",
        listed.items
    );
    Ok(())
}

/// An index built before lineage was recorded (schema version 1) is rebuilt when opened: the
/// threads come back with their sources, sub-agents are hidden from the interactive listing,
/// and rollouts that predate sources count as top-level and interactive.
#[tokio::test]
async fn an_index_of_an_older_schema_is_rebuilt_with_lineage() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    for n in 1..=24 {
        write_rollout(home.path(), n)?;
    }
    let interactive = ThreadFilter {
        limit: 100,
        source_kinds: ThreadSourceKind::INTERACTIVE.to_vec(),
        ..ThreadFilter::default()
    };
    ThreadIndex::open(home.path())?.list(&interactive)?;
    {
        // What an index of the first schema looks like to this one: another version, and
        // rows without lineage.
        let db = rusqlite::Connection::open(home.path().join("thread-index.sqlite"))?;
        db.execute_batch("DELETE FROM threads; PRAGMA user_version = 1;")?;
    }
    let listed: Vec<ConversationId> = ThreadIndex::open(home.path())?
        .list(&interactive)?
        .items
        .iter()
        .map(|summary| summary.id)
        .collect();
    let all = list_conversations_in(&home.path().join("sessions"), 1000, None)
        .await?
        .items;
    let expected: Vec<ConversationId> = interactive
        .page(all)
        .items
        .iter()
        .map(|summary| summary.id)
        .collect();
    assert_eq!(listed, expected);
    for old in [id(11), id(22)] {
        assert!(
            listed.contains(&old),
            "a rollout without a source is interactive"
        );
    }
    for sub_agent in [id(2), id(5), id(8)] {
        assert!(!listed.contains(&sub_agent), "sub-agents are not listed");
    }
    Ok(())
}
