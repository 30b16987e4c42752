//! `keel exec --remote`: a turn driven on an app-server in another process (Codex 0.171's
//! `exec --remote`), with its bearer token, its configuration and its records; what would
//! only change a local run is refused, and a token never goes over plain `ws://` to another
//! host.

use keel_test_support::{
    JsonLinesProcess, MockModelServer, ProcessBuilder, Script, Turn, assistant_message,
    write_config,
};

use super::exec::Output;

/// `keel exec ARGS` with an empty home of its own (so nothing local configures the turn) and
/// the server's token in `KEEL_TEST_TOKEN`.
async fn exec(cwd: &std::path::Path, args: &[&str], token: &str) -> anyhow::Result<Output> {
    let mut full = vec!["exec"];
    full.extend_from_slice(args);
    keel(cwd, &full, token).await
}

/// `keel ARGS`, as [`exec`] runs it.
async fn keel(cwd: &std::path::Path, args: &[&str], token: &str) -> anyhow::Result<Output> {
    let home = tempfile::tempdir()?;
    super::exec::keel(home.path(), cwd, args, &[("KEEL_TEST_TOKEN", token)], None).await
}

/// A mock, a home configured for it, and an app-server on it that wants a capability token.
struct Remote {
    mock: MockModelServer,
    home: tempfile::TempDir,
    _server: JsonLinesProcess,
    url: String,
}

async fn remote(script: Script) -> anyhow::Result<Remote> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    std::fs::write(home.path().join("ws-token"), "s3cret-token\n")?;
    let (server, url) = serve(home.path()).await?;
    Ok(Remote {
        mock,
        home,
        _server: server,
        url,
    })
}

/// An app-server on `home` that wants the token in `home/ws-token`, and its URL.
async fn serve(home: &std::path::Path) -> anyhow::Result<(JsonLinesProcess, String)> {
    let token_file = home.join("ws-token");
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token_file.to_string_lossy().as_ref())
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    Ok((server, url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_runs_on_a_token_protected_app_server() -> anyhow::Result<()> {
    let remote = remote(Script::new([
        Turn::new([assistant_message("done remotely")]),
        Turn::new([assistant_message("json remotely")]),
        Turn::new([assistant_message("resumed remotely")]),
        Turn::new([assistant_message(
            serde_json::json!({
                "findings": [],
                "overall_correctness": "patch is correct",
                "overall_explanation": "Reviewed remotely.",
                "overall_confidence_score": 0.9
            })
            .to_string(),
        )]),
        Turn::new([assistant_message("forked remotely")]),
    ]))
    .await?;
    let ws = tempfile::tempdir()?;
    let token = ["--remote-auth-token-env", "KEEL_TEST_TOKEN"];
    let with = |extra: &[&'static str]| {
        let mut args = vec!["--remote", remote.url.as_str()];
        args.extend(token);
        args.extend(extra.iter().copied());
        args
    };

    let out = exec(ws.path(), &with(&["hi there"]), "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "done remotely\n");
    // The server's model saw the prompt; the record is the server's.
    let requests = remote.mock.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].body.to_string().contains("hi there"));
    assert!(remote.home.path().join("sessions").is_dir());

    let out = exec(ws.path(), &with(&["--json", "again"]), "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let kinds: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|event| event["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("thread.started"));
    assert_eq!(kinds.last().map(String::as_str), Some("turn.completed"));
    let started: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().unwrap_or_default())?;
    let second_thread = started["thread_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // `resume --last` finds the newest thread in the server's records.
    let out = exec(
        ws.path(),
        &with(&["resume", "--last", "more"]),
        "s3cret-token",
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "resumed remotely\n");
    let resumed = remote.mock.requests();
    assert!(
        resumed[2].body.to_string().contains("again"),
        "the second thread's history"
    );

    // `keel review --remote`: the review runs on the server too.
    let mut review = vec!["--remote", remote.url.as_str()];
    review.extend(token);
    review.push("look at the naming");
    let mut review_command = vec!["review"];
    review_command.extend(review);
    let out = keel(ws.path(), &review_command, "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout.trim(),
        "Verdict: patch is correct. Reviewed remotely."
    );
    assert!(
        remote.mock.requests()[3]
            .body
            .to_string()
            .contains("look at the naming")
    );

    // `exec fork --remote`: a new thread on the server from a copy of the second one.
    let mut fork_args = with(&["--json", "fork"]);
    fork_args.extend([second_thread.as_str(), "branch off"]);
    let out = exec(ws.path(), &fork_args, "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let started: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().unwrap_or_default())?;
    let fork = started["thread_id"].as_str().unwrap_or_default();
    assert!(!fork.is_empty() && fork != second_thread, "{}", out.stdout);
    assert!(out.stdout.contains("forked remotely"), "{}", out.stdout);
    let forked = remote.mock.requests()[4].body.to_string();
    assert!(
        forked.contains("again") && forked.contains("branch off"),
        "the copy carries the second thread's history: {forked}"
    );

    // A wrong token is turned away by the server.
    let out = exec(ws.path(), &with(&["hi"]), "wrong-token").await?;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("401"), "{}", out.stderr);
    assert_eq!(remote.mock.requests().len(), 5);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_only_a_local_run_uses_is_refused_before_connecting() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    for (args, expected) in [
        (
            vec![
                "--remote",
                "ws://10.0.0.1:4500",
                "--remote-auth-token-env",
                "KEEL_TEST_TOKEN",
                "hi",
            ],
            "`--remote-auth-token-env` requires a `wss://` or loopback `ws://` remote",
        ),
        (
            vec!["--remote-auth-token-env", "KEEL_TEST_TOKEN", "hi"],
            "`--remote-auth-token-env` requires `--remote`",
        ),
        (
            vec!["--remote", "http://127.0.0.1:4500", "hi"],
            "invalid remote address `http://127.0.0.1:4500`",
        ),
        (
            vec!["--remote", "ws://127.0.0.1:4500", "-c", "model=\"x\"", "hi"],
            "-c/--config configure a run in this process",
        ),
        (
            vec![
                "--remote",
                "ws://127.0.0.1:4500",
                "--remote-auth-token-env",
                "KEEL_UNSET_VAR",
                "hi",
            ],
            "environment variable `KEEL_UNSET_VAR` is not set",
        ),
    ] {
        let out = exec(ws.path(), &args, "s3cret-token").await?;
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
    // Nothing listening: a clear failure, not a hang.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("ws://{}", closed.local_addr()?);
    drop(closed);
    let out = exec(ws.path(), &["--remote", &url, "hi"], "").await?;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("failed to connect to the app-server"),
        "{}",
        out.stderr
    );
    Ok(())
}

/// `--remote unix://PATH` reaches a server listening on a unix socket, and `unix://` alone the
/// socket `keel app-server --listen unix://` makes in the home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_runs_on_an_app_server_on_a_unix_socket() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("over the socket")]),
        Turn::new([assistant_message("over the home's socket")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen", "unix://"])
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .spawn()?;
    server
        .wait_for_stderr_line("the socket", |line| line.contains("listening on unix://"))
        .await?;
    let socket = home.path().join("app-server-control/app-server.sock");
    let ws = tempfile::tempdir()?;

    let url = format!("unix://{}", socket.display());
    let out = exec(ws.path(), &["--remote", &url, "hi"], "").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "over the socket\n");

    let out = super::exec::keel(
        home.path(),
        ws.path(),
        &["exec", "--remote", "unix://", "again"],
        &[],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "over the home's socket\n");
    assert_eq!(mock.requests().len(), 2);
    Ok(())
}

/// `keel queue --remote`: a message kept for a thread of the server (restarted, so nothing
/// has the thread loaded), then `--resume` runs every queued message there, from a machine
/// with no records of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_run_on_the_remote_server() -> anyhow::Result<()> {
    let mut remote = remote(Script::new([
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("queued answer 1")]),
        Turn::new([assistant_message("queued answer 2")]),
        Turn::new([assistant_message("queued answer 3")]),
    ]))
    .await?;
    let ws = tempfile::tempdir()?;
    let connect = |url: &str| {
        vec![
            "--remote".to_string(),
            url.to_string(),
            "--remote-auth-token-env".to_string(),
            "KEEL_TEST_TOKEN".to_string(),
        ]
    };
    let mut first = connect(&remote.url);
    first.extend(["--json".to_string(), "start here".to_string()]);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let out = exec(ws.path(), &first, "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let started: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().unwrap_or_default())?;
    let thread = started["thread_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    remote._server.kill().await?;
    let (server, url) = serve(remote.home.path()).await?;
    remote._server = server;
    let queue = |message: &str, resume: bool| {
        let mut args = vec![
            "queue".to_string(),
            "--thread".to_string(),
            thread.clone(),
            "--message".to_string(),
            message.to_string(),
        ];
        args.extend(connect(&url));
        if resume {
            args.push("--resume".to_string());
        }
        args
    };
    let args = queue("queued one", false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = keel(ws.path(), &args, "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.starts_with("Queued message "), "{}", out.stdout);

    let args = queue("queued two", true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = keel(ws.path(), &args, "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("Ran 2 queued message(s)"),
        "{}",
        out.stderr
    );
    let requests = remote.mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].body.to_string().contains("queued one"));
    let last = requests[2].body.to_string();
    assert!(
        last.contains("start here") && last.contains("queued one") && last.contains("queued two"),
        "both ran on the same thread, in order: {last}"
    );

    // With the thread still loaded on the server, a message may run before `--resume`
    // follows the thread: the command still sees it through and ends.
    let args = queue("queued three", true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = keel(ws.path(), &args, "s3cret-token").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("Ran 1 queued message(s)"),
        "{}",
        out.stderr
    );
    let requests = remote.mock.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests[3].body.to_string().contains("queued three"));
    Ok(())
}
