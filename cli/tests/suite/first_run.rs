//! The mistakes a new user makes, through the real binary: each gets one `keel: ` line that
//! says what is wrong and the documented exit code (2 for usage and configuration, 1 for a
//! turn that failed).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use pretty_assertions::assert_eq;

const WAIT: Duration = Duration::from_secs(60);

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `keel ARGS` in `cwd` with `KEEL_HOME=home`, no log or API key variables unless
/// `env` sets them.
async fn keel(
    home: &Path,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<Output> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"));
    command
        .args(args)
        .current_dir(cwd)
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG")
        .env_remove("KEEL_LOG")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(WAIT, command.spawn()?.wait_with_output())
        .await
        .with_context(|| format!("keel {args:?} did not finish"))??;
    Ok(Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// The lines of `stderr` that report an error or warning, i.e. start with `keel: `.
fn keel_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("keel: "))
        .collect()
}

fn home_with(config: &str) -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), config)?;
    Ok(home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_key_is_a_warning_naming_the_closest_key() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message("ok")])])).await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), [("modle", "o3")])?;
    let out = keel(home.path(), home.path(), &["exec", "hi"], &[]).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "ok\n");
    let config = home.path().join("config.toml");
    assert_eq!(
        keel_lines(&out.stderr),
        [format!(
            "keel: warning: {}: unknown config key `modle` (did you mean `model`?); it is ignored",
            config.display()
        )]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_working_directory_is_a_usage_error() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let missing = home.path().join("no-such-dir");
    let missing_arg = missing.display().to_string();
    let out = keel(
        home.path(),
        home.path(),
        &["exec", "-C", &missing_arg, "hi"],
        &[],
    )
    .await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert_eq!(
        keel_lines(&out.stderr),
        [format!(
            "keel: -C {missing_arg}: No such file or directory (os error 2)"
        )]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_says_connection_refused_once_and_fails_the_turn() -> anyhow::Result<()> {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?.port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let home = tempfile::tempdir()?;
    write_config(home.path(), &url, Vec::<(&str, toml::Value)>::new())?;
    let out = keel(home.path(), home.path(), &["exec", "hi"], &[]).await?;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert_eq!(
        keel_lines(&out.stderr),
        [format!(
            "keel: could not reach the model provider at {url}/responses: tcp connect error: \
             Connection refused (os error 111)"
        )]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_without_a_scheme_fails_at_load() -> anyhow::Result<()> {
    let home = home_with(
        "model_provider = \"local\"\n[model_providers.local]\nbase_url = \"localhost:11434/v1\"\n",
    )?;
    let out = keel(home.path(), home.path(), &["exec", "hi"], &[]).await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert_eq!(
        keel_lines(&out.stderr),
        [format!(
            "keel: {}: model_providers.local.base_url: `localhost:11434/v1` has scheme \
             `localhost`; expected `http` or `https`",
            home.path().join("config.toml").display()
        )]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_file_names_line_and_column_without_protocol_codes() -> anyhow::Result<()> {
    let home = home_with("model = \"o3\"\nsandbox_mode = [\n")?;
    let out = keel(home.path(), home.path(), &["exec", "hi"], &[]).await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let lines = keel_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    let expected_start = format!(
        "keel: {}: TOML syntax error at line 2",
        home.path().join("config.toml").display()
    );
    assert!(lines[0].starts_with(&expected_start), "{}", out.stderr);
    assert!(!out.stderr.contains("code -32"), "{}", out.stderr);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_key_names_both_ways_to_a_model() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let out = keel(home.path(), home.path(), &["exec", "hi"], &[]).await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.starts_with(
            "keel: missing API key for model provider `OpenAI`: set the environment variable \
             `OPENAI_API_KEY`"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("export OPENAI_API_KEY=")
            && out.stderr.contains("keel exec --oss")
            && out.stderr.contains("quick start in README.md"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
    // The file it names does not exist yet: the message says so and how to start it.
    let file = home.path().join("config.toml");
    assert!(
        out.stderr.contains(&format!(
            "{}, which does not exist yet (KEEL_HOME moves it): create it with `mkdir -p {} && \
             $EDITOR {}`",
            file.display(),
            home.path().display(),
            file.display()
        )),
        "{}",
        out.stderr
    );
    Ok(())
}

/// Each cause is said once, without JSON-RPC codes, and a run refused before it starts
/// leaves no session behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_each_cause_once_and_refused_runs_leave_no_session() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let file = scratch.path().join("not-a-dir");
    std::fs::write(&file, "x")?;
    let out = keel(&file, scratch.path(), &["exec", "hi"], &[]).await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("Not a directory").count(),
        1,
        "{}",
        out.stderr
    );

    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message("ok")])])).await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    for args in [
        &["exec", "   "][..],
        &["exec", "-i", "missing.png", "hi"],
        &["exec", "--output-schema", "missing.json", "hi"],
        &["exec", "resume", "--last", "hi"],
    ] {
        let out = keel(home.path(), scratch.path(), args, &[]).await?;
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("(code -"), "{}", out.stderr);
        assert!(
            !home.path().join("sessions").exists(),
            "{args:?} left a session behind"
        );
    }
    let unknown = keel(
        home.path(),
        scratch.path(),
        &[
            "exec",
            "resume",
            "01a2139a-0000-7000-8000-000000000000",
            "hi",
        ],
        &[],
    )
    .await?;
    assert_eq!(unknown.code, Some(1), "{}", unknown.stderr);
    assert!(
        unknown
            .stderr
            .contains("01a2139a-0000-7000-8000-000000000000")
            && !unknown.stderr.contains("(code -"),
        "{}",
        unknown.stderr
    );
    assert!(mock.requests().is_empty());
    Ok(())
}

/// A port already taken is said once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_port_is_said_once() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("ws://{}", taken.local_addr()?);
    for server in ["exec-server", "app-server"] {
        let out = keel(home.path(), home.path(), &[server, "--listen", &url], &[]).await?;
        assert_ne!(out.code, Some(0), "{server}: {}", out.stderr);
        assert_eq!(
            out.stderr.matches("Address already in use").count(),
            1,
            "{server}: {}",
            out.stderr
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_every_command_and_exec_usage_has_no_placeholder() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let top = keel(home.path(), home.path(), &["--help"], &[]).await?;
    assert_eq!(top.code, Some(0));
    let about = top.stdout.lines().next().unwrap_or_default();
    for command in ["exec", "sandbox", "app-server", "exec-server", "mcp-server"] {
        assert!(about.contains(command), "{about}");
    }
    for command in [
        "exec",
        "sandbox",
        "app-server",
        "exec-server",
        "mcp-server",
        "doctor",
        "sessions",
        "archive",
        "unarchive",
        "delete",
        "apply",
        "mcp",
        "features",
        "completion",
    ] {
        assert!(
            top.stdout.contains(&format!("  {command} ")),
            "{}",
            top.stdout
        );
    }
    let exec = keel(home.path(), home.path(), &["exec", "--help"], &[]).await?;
    assert_eq!(exec.code, Some(0));
    assert!(
        exec.stdout
            .contains("Usage: keel exec [OPTIONS] [PROMPT]\n       keel exec [OPTIONS] resume"),
        "{}",
        exec.stdout
    );
    assert!(!exec.stdout.contains("[COMMAND]"), "{}", exec.stdout);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_log_sets_the_filter_without_colour_and_rust_log_is_the_fallback() -> anyhow::Result<()>
{
    let home = tempfile::tempdir()?;
    let missing = home.path().join("missing").display().to_string();
    let args = ["exec", "-C", missing.as_str(), "hi"];
    // `-C` fails after logging is set up and before any thread starts: a quick run.
    for env in [
        [("KEEL_LOG", "debug"), ("RUST_LOG", "off")],
        [("KEEL_LOG", ""), ("RUST_LOG", "debug")],
    ] {
        let out = keel(home.path(), home.path(), &args, &env).await?;
        assert_eq!(out.code, Some(2), "{}", out.stderr);
        assert!(out.stderr.contains("DEBUG"), "{env:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains('\u{1b}'),
            "colour codes: {}",
            out.stderr
        );
    }
    let quiet = keel(home.path(), home.path(), &args, &[("KEEL_LOG", "off")]).await?;
    assert!(!quiet.stderr.contains("DEBUG"), "{}", quiet.stderr);
    Ok(())
}
