//! The session and config subcommands of `keel` on real rollouts and a real config file:
//! `sessions`, `archive`/`unarchive`/`delete` (by id and by thread name), `apply`, `mcp`,
//! `features`, `completion`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    MockModelServer, Script, Turn, apply_patch_call, assistant_message, write_config,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::exec::{Output, keel_exec};

const WAIT: Duration = Duration::from_secs(60);

/// Runs `keel ARGS` in `cwd` with `KEEL_HOME=home`.
pub(crate) async fn keel(home: &Path, cwd: &Path, args: &[&str]) -> anyhow::Result<Output> {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(args)
        .current_dir(cwd)
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .context("keel did not finish")??;
    Ok(Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// Runs one `keel exec --json` and returns its thread id.
pub(crate) async fn session(home: &Path, ws: &Path, prompt: &str) -> anyhow::Result<String> {
    let out = keel_exec(home, ws, &["--json", prompt], None).await?;
    anyhow::ensure!(out.code == Some(0), "{}", out.stderr);
    let first: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().unwrap_or_default())?;
    Ok(first["thread_id"].as_str().unwrap_or_default().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_archived_unarchived_and_deleted_by_id_or_name() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .script(Script::new([Turn::new([assistant_message("ok")])]))
        .repeat(true)
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let elsewhere = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let first = session(home.path(), ws.path(), "first task").await?;
    let second = session(home.path(), ws.path(), "second task").await?;
    let other = session(home.path(), elsewhere.path(), "task elsewhere").await?;

    // Newest first, this directory only unless --all.
    let listed = keel(home.path(), ws.path(), &["sessions"]).await?;
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let ids: Vec<&str> = listed
        .stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(ids, [second.as_str(), first.as_str()], "{}", listed.stdout);
    assert!(listed.stdout.contains("second task"));
    let all = keel(home.path(), ws.path(), &["sessions", "--all", "--json"]).await?;
    assert_eq!(all.stdout.lines().count(), 3, "{}", all.stdout);
    assert!(all.stdout.contains(&other));

    // A thread name (set as a client does) works wherever an id does.
    let mut server = super::hooks::app_server(home.path(), ws.path()).await?;
    server
        .request(
            "thread/name/set",
            json!({"threadId": first, "name": "release-notes"}),
        )
        .await?;
    drop(server);
    let archived = keel(home.path(), ws.path(), &["archive", "release-notes"]).await?;
    assert_eq!(archived.code, Some(0), "{}", archived.stderr);
    assert_eq!(archived.stdout, format!("archived {first}\n"));
    let listed = keel(home.path(), ws.path(), &["sessions"]).await?;
    assert!(!listed.stdout.contains(&first), "{}", listed.stdout);
    let listed = keel(home.path(), ws.path(), &["sessions", "--archived"]).await?;
    assert!(listed.stdout.contains("release-notes"), "{}", listed.stdout);
    let back = keel(home.path(), ws.path(), &["unarchive", &first]).await?;
    assert_eq!(back.code, Some(0), "{}", back.stderr);
    let listed = keel(home.path(), ws.path(), &["sessions"]).await?;
    assert!(listed.stdout.contains(&first), "{}", listed.stdout);

    // Delete by name removes the record for good.
    let deleted = keel(home.path(), ws.path(), &["delete", "release-notes"]).await?;
    assert_eq!(deleted.code, Some(0), "{}", deleted.stderr);
    assert_eq!(deleted.stdout, format!("deleted {first}\n"));
    let again = keel(home.path(), ws.path(), &["delete", &first]).await?;
    assert_eq!(again.code, Some(1), "{}", again.stderr);
    assert!(
        again.stderr.contains(&first) && !again.stderr.contains("code -"),
        "{}",
        again.stderr
    );
    let missing = keel(home.path(), ws.path(), &["archive", "no-such-name"]).await?;
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
    assert!(
        missing.stderr.contains("`no-such-name`"),
        "{}",
        missing.stderr
    );
    Ok(())
}

/// `keel apply` carries a session's last changes to another checkout with `git apply`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_puts_the_last_turns_changes_into_another_checkout() -> anyhow::Result<()> {
    let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n+text\n\
                 *** Update File: src/lib.txt\n@@\n-old\n+new\n*** Delete File: gone.txt\n\
                 *** End Patch\n";
    let mock = MockModelServer::start(Script::new([
        Turn::new([apply_patch_call("p1", patch)]),
        Turn::new([assistant_message("patched")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let seed = |dir: &Path| -> anyhow::Result<()> {
        std::fs::create_dir_all(dir.join("src"))?;
        std::fs::write(dir.join("src/lib.txt"), "keep\nold\nkeep\n")?;
        std::fs::write(dir.join("gone.txt"), "bye\n")?;
        Ok(())
    };
    let ran = tempfile::tempdir()?;
    seed(ran.path())?;
    let id = session(home.path(), ran.path(), "patch it").await?;

    let checkout = tempfile::tempdir()?;
    seed(checkout.path())?;
    let printed = keel(home.path(), checkout.path(), &["apply", &id, "--print"]).await?;
    assert_eq!(printed.code, Some(0), "{}", printed.stderr);
    assert!(
        printed.stdout.contains("+++ b/docs/new.md") && printed.stdout.contains("-old\n+new"),
        "{}",
        printed.stdout
    );
    assert_eq!(
        std::fs::read_to_string(checkout.path().join("src/lib.txt"))?,
        "keep\nold\nkeep\n"
    );
    let applied = keel(home.path(), checkout.path(), &["apply", &id]).await?;
    assert_eq!(applied.code, Some(0), "{}", applied.stderr);
    assert_eq!(
        std::fs::read_to_string(checkout.path().join("src/lib.txt"))?,
        "keep\nnew\nkeep\n"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.path().join("docs/new.md"))?,
        "# New\ntext\n"
    );
    assert!(!checkout.path().join("gone.txt").exists());
    // Applied twice, git refuses and nothing changes.
    let twice = keel(home.path(), checkout.path(), &["apply", &id]).await?;
    assert_eq!(twice.code, Some(1), "{}", twice.stderr);
    assert!(
        twice.stderr.contains("git apply refused"),
        "{}",
        twice.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_are_added_listed_and_removed_keeping_comments() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let config = home.path().join("config.toml");
    std::fs::write(&config, "# my settings\nmodel = \"o3\" # the usual\n")?;
    let added = keel(
        home.path(),
        ws.path(),
        &[
            "mcp",
            "add",
            "docs",
            "--env",
            "TOKEN=abc",
            "--",
            "docs-mcp",
            "--stdio",
        ],
    )
    .await?;
    assert_eq!(added.code, Some(0), "{}", added.stderr);
    let added = keel(
        home.path(),
        ws.path(),
        &[
            "mcp",
            "add",
            "web",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--bearer-token-env-var",
            "WEB_TOKEN",
        ],
    )
    .await?;
    assert_eq!(added.code, Some(0), "{}", added.stderr);
    let text = std::fs::read_to_string(&config)?;
    assert!(
        text.starts_with("# my settings\nmodel = \"o3\" # the usual\n"),
        "{text}"
    );

    let listed = keel(home.path(), ws.path(), &["mcp", "list"]).await?;
    assert_eq!(
        listed.stdout,
        "docs  docs-mcp --stdio\nweb  http://127.0.0.1:9/mcp\n"
    );
    let got = keel(home.path(), ws.path(), &["mcp", "get", "docs", "--json"]).await?;
    let got: serde_json::Value = serde_json::from_str(&got.stdout)?;
    assert_eq!(got["transport"]["command"], "docs-mcp");
    assert_eq!(got["transport"]["env"], json!({"TOKEN": "*****"}));
    let listed = keel(home.path(), ws.path(), &["mcp", "list", "--json"]).await?;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout)?;
    assert_eq!(
        listed["web"]["transport"]["bearer_token_env_var"],
        "WEB_TOKEN"
    );

    let removed = keel(home.path(), ws.path(), &["mcp", "remove", "docs"]).await?;
    assert_eq!(removed.code, Some(0), "{}", removed.stderr);
    let listed = keel(home.path(), ws.path(), &["mcp", "list"]).await?;
    assert_eq!(listed.stdout, "web  http://127.0.0.1:9/mcp\n");
    let again = keel(home.path(), ws.path(), &["mcp", "remove", "docs"]).await?;
    assert_eq!(again.code, Some(2), "{}", again.stderr);
    assert!(
        again.stderr.contains("no MCP server `docs`"),
        "{}",
        again.stderr
    );
    let bad = keel(home.path(), ws.path(), &["mcp", "add", "a.b", "--", "x"]).await?;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(std::fs::read_to_string(&config)?.contains("# the usual"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn features_are_listed_and_switched_in_config() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), "# mine\n")?;
    let listed = keel(home.path(), ws.path(), &["features", "list"]).await?;
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let line = |out: &str, name: &str| {
        out.lines().find(|line| line.starts_with(name)).map(|line| {
            line.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    assert_eq!(
        line(&listed.stdout, "shell_snapshot").as_deref(),
        Some("shell_snapshot stable true")
    );
    let off = keel(
        home.path(),
        ws.path(),
        &["features", "disable", "shell_snapshot"],
    )
    .await?;
    assert_eq!(off.code, Some(0), "{}", off.stderr);
    let listed = keel(home.path(), ws.path(), &["features", "list"]).await?;
    assert_eq!(
        line(&listed.stdout, "shell_snapshot").as_deref(),
        Some("shell_snapshot stable false")
    );
    let text = std::fs::read_to_string(home.path().join("config.toml"))?;
    assert!(
        text.contains("# mine\n") && text.contains("shell_snapshot = false"),
        "{text}"
    );
    let unknown = keel(
        home.path(),
        ws.path(),
        &["features", "enable", "warp_drive"],
    )
    .await?;
    assert_eq!(unknown.code, Some(2), "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("unified_exec"),
        "{}",
        unknown.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_scripts_cover_the_commands() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    for shell in ["bash", "zsh", "fish"] {
        let out = keel(home.path(), home.path(), &["completion", shell]).await?;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        for word in ["exec", "sessions", "apply", "output-last-message"] {
            assert!(out.stdout.contains(word), "{shell}: {word} missing");
        }
    }
    Ok(())
}
