//! `fuzzyFileSearch` and its sessions (the `@` file picker): matches by name, ignore files
//! honoured, highlights, errors that name the bad root, and session notifications.

use keel_test_support::{AppServerProcess, Script};
use serde_json::{Value, json};

use super::common::World;

/// A small project: sources, docs, an ignored build directory and a git directory.
fn project(world: &World) -> anyhow::Result<String> {
    for dir in ["src/main", "docs", "target", ".git/objects", ".github"] {
        std::fs::create_dir_all(world.ws_file(dir))?;
    }
    for file in [
        "src/main.rs",
        "src/main/mod.rs",
        "src/lib.rs",
        "docs/maintenance.md",
        "target/main.o",
        ".git/objects/main",
        ".github/main.yml",
        "README.md",
    ] {
        std::fs::write(world.ws_file(file), "")?;
    }
    std::fs::write(world.ws_file(".gitignore"), "target/\n")?;
    Ok(world.ws().display().to_string())
}

fn paths(files: &Value) -> Vec<String> {
    files
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        .collect()
}

async fn refused(
    server: &mut AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let id = server.send_request(method, params).await?;
    let answer = server.read_response(id).await?;
    anyhow::ensure!(
        answer.get("error").is_some(),
        "{method} succeeded: {answer}"
    );
    Ok(answer["error"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_found_by_name_without_ignored_ones() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let root = project(&world)?;
    let mut server = world.server().await?;
    let found = server
        .request("fuzzyFileSearch", json!({"query": "main", "roots": [root]}))
        .await?;
    let files = &found["files"];
    let mut got = paths(files);
    got.sort();
    assert_eq!(
        got,
        [
            ".github/main.yml",
            "docs/maintenance.md",
            "src/main",
            "src/main.rs",
            "src/main/mod.rs"
        ],
        "{found}"
    );
    let scores: Vec<u64> = files
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["score"].as_u64())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    let main_rs = files
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["path"] == "src/main.rs")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        main_rs,
        json!({
            "root": root, "path": "src/main.rs", "match_type": "file", "file_name": "main.rs",
            "score": main_rs["score"], "indices": [4, 5, 6, 7]
        })
    );
    let dir = files
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["path"] == "src/main")
        .cloned()
        .unwrap_or_default();
    assert_eq!(dir["match_type"], "directory");

    // A link out of the root is not followed: what lies behind it is never listed.
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("secret-credentials.txt"), "")?;
    std::os::unix::fs::symlink(outside.path(), world.ws_file("escape"))?;
    let behind = server
        .request(
            "fuzzyFileSearch",
            json!({"query": "credentials", "roots": [root]}),
        )
        .await?;
    assert_eq!(behind, json!({"files": []}));

    // Nothing typed, nothing found; a bad root is named.
    let empty = server
        .request("fuzzyFileSearch", json!({"query": "  ", "roots": [root]}))
        .await?;
    assert_eq!(empty, json!({"files": []}));
    // Typed characters are matched as they are (no fzf operators): `!main` is not "every file
    // without main", and a lone `^` is not "everything".
    for query in ["!main", "^"] {
        let none = server
            .request("fuzzyFileSearch", json!({"query": query, "roots": [root]}))
            .await?;
        assert_eq!(none, json!({"files": []}), "{query}");
    }
    let error = refused(
        &mut server,
        "fuzzyFileSearch",
        json!({"query": "x", "roots": [root, "relative/dir"]}),
    )
    .await?;
    assert_eq!(error["code"], -32602);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("roots[1]") && m.contains("relative/dir")),
        "{error}"
    );
    let missing = format!("{root}/no-such-dir");
    let error = refused(
        &mut server,
        "fuzzyFileSearch",
        json!({"query": "x", "roots": [missing]}),
    )
    .await?;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("not a directory")),
        "{error}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_each_query_with_notifications() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let root = project(&world)?;
    let mut server = world.server().await?;
    let started = server
        .request(
            "fuzzyFileSearch/sessionStart",
            json!({"sessionId": "s1", "roots": [root]}),
        )
        .await?;
    assert_eq!(started, json!({}));
    let updated = server
        .request(
            "fuzzyFileSearch/sessionUpdate",
            json!({"sessionId": "s1", "query": "mod"}),
        )
        .await?;
    assert_eq!(updated, json!({}));
    let results = server
        .read_notification("fuzzyFileSearch/sessionUpdated")
        .await?;
    assert_eq!(results["params"]["sessionId"], "s1");
    assert_eq!(results["params"]["query"], "mod");
    assert_eq!(paths(&results["params"]["files"]), ["src/main/mod.rs"]);
    let done = server
        .read_notification("fuzzyFileSearch/sessionCompleted")
        .await?;
    assert_eq!(done["params"], json!({"sessionId": "s1"}));

    // The listing is kept: a file created after the walk is not in the session's results.
    std::fs::write(world.ws_file("src/model.rs"), "")?;
    server
        .request(
            "fuzzyFileSearch/sessionUpdate",
            json!({"sessionId": "s1", "query": "mod"}),
        )
        .await?;
    let again = server
        .read_notification("fuzzyFileSearch/sessionUpdated")
        .await?;
    assert_eq!(paths(&again["params"]["files"]), ["src/main/mod.rs"]);
    server
        .read_notification("fuzzyFileSearch/sessionCompleted")
        .await?;

    let error = refused(
        &mut server,
        "fuzzyFileSearch/sessionUpdate",
        json!({"sessionId": "nope", "query": "mod"}),
    )
    .await?;
    assert_eq!(error["code"], -32600);
    assert_eq!(
        error["message"],
        "fuzzy file search session not found: nope"
    );
    for _ in 0..2 {
        let stopped = server
            .request("fuzzyFileSearch/sessionStop", json!({"sessionId": "s1"}))
            .await?;
        assert_eq!(stopped, json!({}));
    }
    let error = refused(
        &mut server,
        "fuzzyFileSearch/sessionUpdate",
        json!({"sessionId": "s1", "query": "mod"}),
    )
    .await?;
    assert_eq!(error["code"], -32600);
    Ok(())
}
