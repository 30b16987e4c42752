//! The `patch.v1` extension over the wire: `patch/plan` answers what a patch would change and
//! where each write lands, `patch/apply` writes it all or nothing, refuses a write through a
//! symlink out of the writable roots, and refuses a patch whose files changed since the
//! approved plan (`expectedBefore`).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::{Server, Transport, both_transports};

/// `workspace-write` rooted at the cwd, with `/tmp` and `$TMPDIR` left out.
fn policy() -> Value {
    json!({
        "type": "workspace-write",
        "writable_roots": [],
        "network_access": false,
        "exclude_tmpdir_env_var": true,
        "exclude_slash_tmp": true,
    })
}

async fn patches_are_planned_checked_and_applied_on_the_server(
    transport: Transport,
) -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let outside = tempfile::tempdir()?;
    std::fs::write(ws.path().join("a.txt"), "old\n")?;
    std::os::unix::fs::symlink(outside.path(), ws.path().join("escape"))?;
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;
    peer.initialize().await?;
    let cwd = ws.path().display().to_string();
    let update = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n";

    let plan = peer
        .request(
            10,
            "patch/plan",
            json!({"patch": update, "cwd": cwd, "sandboxPolicy": policy()}),
        )
        .await?;
    let plan = &plan["result"];
    assert_eq!(plan["status"], "planned", "{plan}");
    let file = ws.path().join("a.txt").display().to_string();
    assert_eq!(plan["writes"][0]["path"], file, "{plan}");
    assert_eq!(plan["writes"][0]["before"], "old\n", "{plan}");
    assert_eq!(plan["writes"][0]["after"], "new\n", "{plan}");
    assert_eq!(plan["changes"][&file]["type"], "update", "{plan}");
    assert!(
        plan["writableRoots"]
            .as_array()
            .is_some_and(|roots| roots.iter().any(|root| root == &json!(cwd))),
        "{plan}"
    );

    // The file changes after the plan, in a way the patch still applies to: applying what was
    // approved fails, and nothing is written.
    std::fs::write(ws.path().join("a.txt"), "old\nadded meanwhile\n")?;
    let stale = peer
        .request(
            11,
            "patch/apply",
            json!({
                "patch": update, "cwd": cwd, "sandboxPolicy": policy(),
                "expectedBefore": {&file: "old\n"},
            }),
        )
        .await?;
    assert_eq!(stale["result"]["status"], "failed", "{stale}");
    assert!(
        stale["result"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("changed after the patch was checked")),
        "{stale}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt"))?,
        "old\nadded meanwhile\n"
    );

    // Unchanged since the plan: written.
    std::fs::write(ws.path().join("a.txt"), "old\n")?;
    let applied = peer
        .request(
            12,
            "patch/apply",
            json!({
                "patch": update, "cwd": cwd, "sandboxPolicy": policy(),
                "expectedBefore": {&file: "old\n"},
            }),
        )
        .await?;
    assert_eq!(applied["result"]["status"], "applied", "{applied}");
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt"))?, "new\n");

    // Through a link out of the roots: refused by plan and by apply.
    let escape = "*** Begin Patch\n*** Add File: escape/pwned.txt\n+no\n*** End Patch\n";
    for (id, method) in [(13, "patch/plan"), (14, "patch/apply")] {
        let refused = peer
            .request(
                id,
                method,
                json!({"patch": escape, "cwd": cwd, "sandboxPolicy": policy()}),
            )
            .await?;
        assert_eq!(refused["result"]["status"], "refused", "{refused}");
        assert!(
            refused["result"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("symlink")),
            "{refused}"
        );
    }
    assert!(!outside.path().join("pwned.txt").exists());

    // A FIFO is refused at once, not waited on (the server's `fs/read` refuses it too).
    nix::unistd::mkfifo(&ws.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU)?;
    let fifo = "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch";
    let refused = peer
        .request(17, "patch/plan", json!({"patch": fifo, "cwd": cwd}))
        .await?;
    assert_eq!(refused["result"]["status"], "invalid", "{refused}");
    assert!(
        refused["result"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("it is a FIFO, not a regular file")),
        "{refused}"
    );

    // A malformed patch and a relative cwd are answered, not fatal.
    let invalid = peer
        .request(
            15,
            "patch/plan",
            json!({"patch": "not a patch", "cwd": cwd}),
        )
        .await?;
    assert_eq!(invalid["result"]["status"], "invalid", "{invalid}");
    let relative = peer
        .request(16, "patch/apply", json!({"patch": update, "cwd": "ws"}))
        .await?;
    assert_eq!(relative["result"]["status"], "failed", "{relative}");
    Ok(())
}

both_transports!(patches_are_planned_checked_and_applied_on_the_server);
