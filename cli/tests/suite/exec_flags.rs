//! The `codex exec` flags `keel exec` accepts, each doing what Codex's does.

use std::path::{Path, PathBuf};

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, shell_call, write_config,
};
use pretty_assertions::assert_eq;

use super::exec::keel_exec;

/// A home and workspace under the target dir, with `/tmp` and `$TMPDIR` not writable under
/// workspace-write (so "outside the workspace" really is).
struct World {
    mock: MockModelServer,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

async fn world(script: Script, config: &[(&str, toml::Value)]) -> anyhow::Result<World> {
    let mock = MockModelServer::start(script).await?;
    let tmp = env!("CARGO_TARGET_TMPDIR");
    let home = tempfile::tempdir_in(tmp)?;
    let ws = tempfile::tempdir_in(tmp)?;
    let mut settings: Vec<(&str, toml::Value)> = vec![
        (
            "sandbox_workspace_write.exclude_slash_tmp",
            toml::Value::Boolean(true),
        ),
        (
            "sandbox_workspace_write.exclude_tmpdir_env_var",
            toml::Value::Boolean(true),
        ),
    ];
    settings.extend(config.iter().cloned());
    write_config(home.path(), &mock.uri(), settings)?;
    Ok(World { mock, home, ws })
}

fn rollouts(home: &Path) -> anyhow::Result<Vec<PathBuf>> {
    super::rollout_files(&home.join("sessions"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enable_and_disable_set_features() -> anyhow::Result<()> {
    let w = world(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--disable", "shell_tool", "--disable", "multi_agent", "hi"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let tools = w.mock.requests()[0].tool_names();
    for gone in ["shell", "exec_command", "spawn_agent"] {
        assert!(!tools.iter().any(|t| t == gone), "{gone} in {tools:?}");
    }

    let out = keel_exec(w.home.path(), w.ws.path(), &["--enable", "a.b", "hi"], None).await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("`a.b` is not a feature name"),
        "{}",
        out.stderr
    );
    Ok(())
}

/// A run refused at validation leaves no session behind (`resume --last` cannot pick it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_config_refuses_unknown_keys_and_leaves_no_session() -> anyhow::Result<()> {
    let w = world(
        Script::new([Turn::new([assistant_message("ok")])]),
        &[("modle", toml::Value::String("typo".into()))],
    )
    .await?;
    let out = keel_exec(w.home.path(), w.ws.path(), &["--strict-config", "hi"], None).await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--strict-config") && out.stderr.contains("`modle`"),
        "{}",
        out.stderr
    );
    assert!(w.mock.requests().is_empty());
    assert_eq!(rollouts(w.home.path())?, Vec::<PathBuf>::new());

    // Without the flag the key is a warning and the run goes ahead.
    let out = keel_exec(w.home.path(), w.ws.path(), &["hi"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown config key `modle`"),
        "{}",
        out.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_runs_keep_no_session() -> anyhow::Result<()> {
    let w = world(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    let out = keel_exec(w.home.path(), w.ws.path(), &["--ephemeral", "hi"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "ok\n");
    assert_eq!(rollouts(w.home.path())?, Vec::<PathBuf>::new());
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["resume", "--last", "again"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("no recorded sessions"),
        "{}",
        out.stderr
    );
    Ok(())
}

/// `--add-dir` makes one more directory writable under workspace-write; without it the same
/// write is refused by the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_dir_makes_another_directory_writable() -> anyhow::Result<()> {
    let extra = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let target = extra.path().join("written.txt");
    let write = format!("echo hello > {}", target.display());
    let turn = || {
        [
            Turn::new([shell_call("c1", ["bash", "-c", write.as_str()])]),
            Turn::new([assistant_message("done")]),
        ]
    };
    let w = world(Script::new(turn().into_iter().chain(turn())), &[]).await?;
    let extra_arg = extra.path().display().to_string();
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["-s", "workspace-write", "write it"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!target.exists(), "written without --add-dir");

    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["-s", "workspace-write", "--add-dir", &extra_arg, "write it"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&target)?, "hello\n");

    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--add-dir", "/no/such/dir", "write it"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--add-dir /no/such/dir"),
        "{}",
        out.stderr
    );
    Ok(())
}

/// With a read-only sandbox in config, `--dangerously-bypass-approvals-and-sandbox` runs the
/// command unconfined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bypass_runs_without_the_sandbox() -> anyhow::Result<()> {
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let target = outside.path().join("free.txt");
    let write = format!("echo free > {}", target.display());
    let w = world(
        Script::new([
            Turn::new([shell_call("c1", ["bash", "-c", write.as_str()])]),
            Turn::new([assistant_message("done")]),
        ]),
        &[("sandbox_mode", toml::Value::String("read-only".into()))],
    )
    .await?;
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--dangerously-bypass-approvals-and-sandbox", "write it"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&target)?, "free\n");
    Ok(())
}

/// `fork` starts a new session from a recorded one: the model sees the earlier turns, the
/// new id differs, and the original session is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_copies_a_session_into_a_new_one() -> anyhow::Result<()> {
    let w = world(
        Script::new([
            Turn::new([assistant_message("first answer")]),
            Turn::new([assistant_message("forked answer")]),
        ]),
        &[],
    )
    .await?;
    let first = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--json", "first question"],
        None,
    )
    .await?;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let line: serde_json::Value =
        serde_json::from_str(first.stdout.lines().next().unwrap_or_default())?;
    let original = line["thread_id"].as_str().unwrap_or_default().to_string();
    let original_file = rollouts(w.home.path())?;
    assert_eq!(original_file.len(), 1);
    let before = std::fs::read_to_string(&original_file[0])?;

    let forked = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--json", "fork", &original, "second question"],
        None,
    )
    .await?;
    assert_eq!(forked.code, Some(0), "{}", forked.stderr);
    let line: serde_json::Value =
        serde_json::from_str(forked.stdout.lines().next().unwrap_or_default())?;
    let copy = line["thread_id"].as_str().unwrap_or_default();
    assert!(!copy.is_empty() && copy != original, "{}", forked.stdout);
    assert!(forked.stdout.contains("forked answer"));
    let input = w.mock.requests()[1].body["input"].to_string();
    assert!(input.contains("first question") && input.contains("first answer"));
    assert_eq!(std::fs::read_to_string(&original_file[0])?, before);
    assert_eq!(rollouts(w.home.path())?.len(), 2);
    Ok(())
}

/// A prompt argument with piped input: the input goes along as a `<stdin>` block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_input_is_appended_to_the_prompt() -> anyhow::Result<()> {
    let w = world(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["summarize this"],
        Some("line one\nline two\n"),
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let input = w.mock.requests()[0].body["input"].to_string();
    assert!(
        input.contains("summarize this\\n\\n<stdin>\\nline one\\nline two\\n</stdin>"),
        "{input}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn color_always_styles_the_progress_stream() -> anyhow::Result<()> {
    let w = world(
        Script::new([
            Turn::new([shell_call("c1", ["bash", "-c", "exit 4"])]),
            Turn::new([assistant_message("done")]),
            Turn::new([shell_call("c1", ["bash", "-c", "exit 4"])]),
            Turn::new([assistant_message("done")]),
        ]),
        &[],
    )
    .await?;
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--color", "always", "go"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("\x1b[1m$ bash -c 'exit 4'\x1b[0m"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("\x1b[31mexit 4\x1b[0m"),
        "{}",
        out.stderr
    );
    let out = keel_exec(
        w.home.path(),
        w.ws.path(),
        &["--color", "never", "go"],
        None,
    )
    .await?;
    assert!(!out.stderr.contains('\x1b'), "{}", out.stderr);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_documents_exit_codes() -> anyhow::Result<()> {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec", "--help"])
        .output()
        .await?;
    let help = String::from_utf8(out.stdout)?;
    for text in [
        "Exit codes:",
        "  2    bad usage",
        "--add-dir",
        "--ephemeral",
        "fork",
    ] {
        assert!(help.contains(text), "{text} missing from: {help}");
    }
    Ok(())
}

/// A Codex 0.171 `config.toml` using every top-level key Codex 0.171 accepts loads under
/// `--strict-config`, and the turn runs on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_0171_config_with_every_key_loads_under_strict_config() -> anyhow::Result<()> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let config = std::fs::read_to_string(fixtures.join("codex-0.171-config.toml"))?;
    let keys = std::fs::read_to_string(fixtures.join("codex-0.171-config-keys.txt"))?;
    let parsed: toml::Table = config.parse()?;
    let keys: Vec<&str> = keys
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect();
    assert_eq!(keys.len(), 106);
    let missing: Vec<&&str> = keys
        .iter()
        .filter(|key| !parsed.contains_key(**key))
        .collect();
    assert!(missing.is_empty(), "the fixture lacks {missing:?}");

    let w = world(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    let config = config.replace("http://127.0.0.1:9/v1", &w.mock.uri());
    std::fs::write(w.home.path().join("config.toml"), config)?;
    // Keel reads `model_catalog_json`: one correction, in Codex's catalogue format.
    std::fs::write(
        w.home.path().join("catalog.json"),
        r#"{"models": [{"slug": "mock-model", "display_name": "Mock", "visibility": "list"}]}"#,
    )?;
    let out = keel_exec(w.home.path(), w.ws.path(), &["--strict-config", "hi"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "ok\n");
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    assert_eq!(w.mock.requests().len(), 1);
    Ok(())
}
