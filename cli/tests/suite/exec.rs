use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    Fault, MockModelServer, Script, Turn, assistant_message, shell_call, write_config,
};
use pretty_assertions::assert_eq;
use tokio::io::AsyncWriteExt;

const WAIT: Duration = Duration::from_secs(60);

pub(crate) struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub(crate) async fn keel_exec(
    home: &Path,
    cwd: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<Output> {
    let mut full = vec!["exec"];
    full.extend_from_slice(args);
    keel(home, cwd, &full, &[], stdin).await
}

/// `keel ARGS` in `cwd` with `KEEL_HOME=home`, no API key variables but those in `env`, and
/// `stdin` piped in (or none).
pub(crate) async fn keel(
    home: &Path,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
) -> anyhow::Result<Output> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"));
    command
        .args(args)
        .current_dir(cwd)
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn()?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).await?;
    }
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .context("keel did not finish")??;
    Ok(Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

async fn setup(
    script: Script,
) -> anyhow::Result<(MockModelServer, tempfile::TempDir, tempfile::TempDir)> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    Ok((mock, home, ws))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prints_progress_on_stderr_and_the_answer_on_stdout() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call(
            "c1",
            ["bash", "-lc", "echo from-shell > f.txt; cat f.txt"],
        )]),
        Turn::new([assistant_message("Wrote f.txt")]),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["write a file"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Wrote f.txt\n");
    assert!(
        out.stderr
            .contains("$ bash -lc 'echo from-shell > f.txt; cat f.txt'"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("exit 0"), "{}", out.stderr);
    assert!(ws.path().join("f.txt").exists());
    mock.verify()?;
    Ok(())
}

/// `--app-server-events` keeps Keel's own stream: every notification, deltas included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_events_prints_every_notification_as_a_line() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message("json answer")])]);
    let (_mock, home, ws) = setup(script).await?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--app-server-events", "-"],
        Some("prompt from stdin"),
    )
    .await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let methods: Vec<String> = out
        .stdout
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line)?;
            Ok(value["method"].as_str().unwrap_or_default().to_string())
        })
        .collect::<anyhow::Result<_>>()?;
    assert_eq!(methods.first().map(String::as_str), Some("thread/started"));
    assert_eq!(methods.last().map(String::as_str), Some("turn/completed"));
    assert!(
        methods.iter().any(|m| m == "item/agentMessage/delta"),
        "{methods:?}"
    );
    assert!(out.stdout.contains("prompt from stdin"));
    Ok(())
}

/// `-o FILE` (as `codex exec -o`): the last message is written to the file as well, in both
/// output modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_last_message_writes_the_answer_to_a_file() -> anyhow::Result<()> {
    for json in [false, true] {
        let script = Script::new([Turn::new([assistant_message("the final answer")])]);
        let (_mock, home, ws) = setup(script).await?;
        let file = ws.path().join("last.txt");
        let file_arg = file.display().to_string();
        let mut args = vec!["-o", file_arg.as_str()];
        if json {
            args.push("--json");
        }
        args.push("answer");
        let out = keel_exec(home.path(), ws.path(), &args, None).await?;
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        assert_eq!(
            std::fs::read_to_string(&file)?,
            "the final answer",
            "json: {json}"
        );
    }
    // A failed turn leaves the file as it was.
    let script = Script::new([Turn::failing(Fault::http(400))]);
    let (_mock, home, ws) = setup(script).await?;
    let file = ws.path().join("last.txt");
    std::fs::write(&file, "kept")?;
    let file_arg = file.display().to_string();
    let out = keel_exec(home.path(), ws.path(), &["-o", &file_arg, "answer"], None).await?;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert_eq!(std::fs::read_to_string(&file)?, "kept");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_turn_exits_non_zero_with_the_reason() -> anyhow::Result<()> {
    let script = Script::new([Turn::failing(Fault::http_with_body(401, "invalid api key"))]);
    let (_mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["hi"], None).await?;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("401") && out.stderr.contains("invalid api key"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
    Ok(())
}

/// The last `tokens used: TOTAL (TURN this turn)` line: the thread's and the turn's tokens.
fn tokens_used(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("tokens used: "))?;
    let (total, rest) = line.split_once(" (")?;
    let turn = rest.strip_suffix(" this turn)")?;
    Some((total.parse().ok()?, turn.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_last_continues_the_recorded_conversation() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first")]),
        Turn::new([assistant_message("second")]),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let first = keel_exec(
        home.path(),
        ws.path(),
        &["remember the word pineapple"],
        None,
    )
    .await?;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let second = keel_exec(
        home.path(),
        ws.path(),
        &["resume", "--last", "what was the word?"],
        None,
    )
    .await?;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert_eq!(second.stdout, "second\n");
    // The thread's total includes the first run; the turn's own count does not.
    let (total, turn) = tokens_used(&second.stderr).context("no token summary")?;
    let (first_total, first_turn) = tokens_used(&first.stderr).context("no token summary")?;
    assert_eq!(first_total, first_turn, "{}", first.stderr);
    assert_eq!(total, first_total + turn, "{}", second.stderr);
    let sent = serde_json::to_string(mock.requests()[1].input())?;
    assert!(
        sent.contains("pineapple") && sent.contains("what was the word?"),
        "{sent}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_is_a_usage_error_naming_the_key() -> anyhow::Result<()> {
    let (_mock, home, ws) = setup(Script::new([])).await?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["-c", "sandbox_mode=sideways", "hi"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("sandbox_mode"), "{}", out.stderr);
    Ok(())
}

/// `kill -9` of `keel exec` while a command runs leaves a call without an output in the
/// rollout; `resume --last` answers it as aborted (a request the real API accepts) and records
/// that, and the next turn completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_kill_answers_the_interrupted_call_as_aborted() -> anyhow::Result<()> {
    use tokio::io::AsyncBufReadExt;
    let scratch = tempfile::tempdir()?;
    let sleeper = keel_test_support::MarkedSleeper::new(scratch.path(), "kill-resume")?;
    let command = sleeper.nested_command(30);
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-c", command.as_str()])]),
        Turn::new([assistant_message("resumed fine")]),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec", "--app-server-events", "start the long command"])
        .current_dir(ws.path())
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await? {
            if line.contains("\"item/started\"") && line.contains("commandExecution") {
                return anyhow::Ok(());
            }
        }
        anyhow::bail!("keel exec ended before the command started")
    })
    .await??;
    child.start_kill()?;
    child.wait().await?;
    // The killed owner's command goes with it (its watchdog kills the group).
    sleeper.wait_until_gone(WAIT).await?;

    let resumed = keel_exec(
        home.path(),
        ws.path(),
        &["resume", "--last", "carry on"],
        None,
    )
    .await?;
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    assert_eq!(resumed.stdout, "resumed fine\n");
    let output = mock.requests()[1]
        .tool_output("c1")
        .and_then(|output| output.as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(output.starts_with("aborted"), "{output}");
    mock.verify()?;
    Ok(())
}

/// Every request names the conversation for prompt caching (`prompt_cache_key` and the
/// `session_id` header, the same across the turn), carries its own request id, and says
/// which program sent it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_the_conversation_and_client_identity() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "hi"])]),
        Turn::new([assistant_message("done")]),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["hi"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let mut request_ids = Vec::new();
    for request in &requests {
        let session = request.header("session_id").context("no session_id")?;
        assert_eq!(request.body["prompt_cache_key"], session);
        assert!(
            session.len() == 36 && session.matches('-').count() == 4,
            "a conversation id: {session}"
        );
        assert_eq!(Some(session), requests[0].header("session_id"));
        assert_eq!(request.header("originator"), Some("keel"));
        let agent = request.header("user-agent").unwrap_or_default();
        assert!(
            agent.starts_with(concat!("keel/", env!("CARGO_PKG_VERSION"), " (")),
            "{agent}"
        );
        request_ids.push(
            request
                .header("x-client-request-id")
                .context("no request id")?
                .to_string(),
        );
    }
    assert_ne!(request_ids[0], request_ids[1]);
    Ok(())
}

/// `--oss` talks to the local provider at `CODEX_OSS_BASE_URL` with `gpt-oss:20b` over the Chat
/// API, needs no key, and names the URL when nothing listens there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oss_uses_the_local_provider_and_names_its_url_when_nothing_listens() -> anyhow::Result<()>
{
    // The server lists the model `--oss` asks for, as a local server with it pulled does.
    let mock = MockModelServer::builder()
        .model("gpt-oss:20b")
        .script(Script::new([Turn::new([assistant_message("local hi")])]))
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let run = |url: String| {
        let home = home.path().to_path_buf();
        let ws = ws.path().to_path_buf();
        async move {
            let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
                .args(["exec", "--oss", "hello"])
                .current_dir(&ws)
                .env("KEEL_HOME", &home)
                .env("CODEX_OSS_BASE_URL", url)
                .env_remove("OPENAI_API_KEY")
                .env_remove("RUST_LOG")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output();
            let output = tokio::time::timeout(WAIT, output).await??;
            anyhow::Ok((
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ))
        }
    };
    let (code, stdout, stderr) = run(mock.uri()).await?;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "local hi\n");
    // The server was asked for its models first, then sampled.
    let all = mock.all_requests();
    assert!(all[0].path.ends_with("/models"), "{}", all[0].path);
    let request = &mock.requests()[0];
    assert!(
        request.path.ends_with("/chat/completions"),
        "{}",
        request.path
    );
    assert_eq!(request.body["model"], "gpt-oss:20b");

    // Nothing listens on this port (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let (code, _, stderr) = run(url.clone()).await?;
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(&format!("no local model server at {url}")),
        "{stderr}"
    );
    Ok(())
}
