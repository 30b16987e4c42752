//! Running processes through the client library against the real binary, on both
//! transports: exit codes, environment, PTY behaviour, extensions and limits.

use anyhow::Context;
use keel_exec_server::{ExecServerClient, ExecServerError};
use keel_protocol::exec_server::{
    CloseStdinParams, ResizeParams, SnapshotParams, TerminateMode, TerminateParams, WaitParams,
    WriteParams,
};
use keel_protocol::{Base64Bytes, ExecSessionId, INVALID_REQUEST};
use pretty_assertions::assert_eq;

use super::harness::{Server, Transport, both_transports, collect, output_until, pipes, tty};

async fn connect(
    transport: Transport,
    flags: &[&str],
) -> anyhow::Result<(Server, ExecServerClient)> {
    let mut server = Server::start(transport, flags).await?;
    let client = server.client().await?;
    Ok((server, client))
}

fn rpc_error(result: Result<impl std::fmt::Debug, ExecServerError>) -> (i64, String) {
    match result {
        Err(ExecServerError::Rpc { error, .. }) => (error.code, error.message),
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

async fn exit_codes_are_reported(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    for (script, expected) in [
        ("exit 0", 0),
        ("exit 3", 3),
        ("kill -KILL $$", 137),
        ("kill -TERM $$", 143),
    ] {
        let session = client.exec(pipes(&["sh", "-c", script])).await?.session_id;
        let collected = collect(&mut events, &session).await?;
        assert_eq!(collected.exit_code, Some(expected), "{script}");
    }
    Ok(())
}

async fn output_streams_cwd_env_and_arg0(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let dir = tempfile::tempdir()?;
    let mut params = pipes(&["sh", "-c", "pwd; echo \"$KEEL_TEST_VAR\"; echo oops >&2"]);
    params.cwd = dir.path().canonicalize()?;
    params
        .env
        .insert("KEEL_TEST_VAR".to_string(), "from-params".to_string());
    let session = client.exec(params).await?.session_id;
    let collected = collect(&mut events, &session).await?;
    assert_eq!(
        collected.stdout_text(),
        format!("{}\nfrom-params\n", dir.path().canonicalize()?.display())
    );
    assert_eq!(collected.stderr, b"oops\n".to_vec());

    let mut params = pipes(&["cat", "/proc/self/cmdline"]);
    params.arg0 = Some("renamed-cat".to_string());
    let session = client.exec(params).await?.session_id;
    let collected = collect(&mut events, &session).await?;
    assert_eq!(
        collected.stdout,
        b"renamed-cat\0/proc/self/cmdline\0".to_vec()
    );
    Ok(())
}

async fn pty_echo_round_trip(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let session = client
        .exec(tty(&[
            "bash",
            "--noprofile",
            "--norc",
            "-c",
            "echo ready; read line; echo got:$line",
        ]))
        .await?
        .session_id;
    output_until(&mut events, &session, "ready").await?;
    let written = client
        .write(WriteParams {
            session_id: session.clone(),
            chunk: Base64Bytes(b"hello\n".to_vec()),
        })
        .await?;
    assert!(written.accepted);
    let collected = collect(&mut events, &session).await?;
    assert!(
        collected.stdout_text().contains("got:hello\r\n"),
        "{collected:?}"
    );
    assert_eq!(collected.exit_code, Some(0));
    Ok(())
}

async fn write_errors(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let session = client.exec(pipes(&["sleep", "1000"])).await?.session_id;
    let write = |session_id: ExecSessionId| {
        client.write(WriteParams {
            session_id,
            chunk: Base64Bytes(b"x".to_vec()),
        })
    };
    assert_eq!(
        rpc_error(write(session.clone()).await),
        (
            INVALID_REQUEST,
            format!("stdin is closed for session {session}")
        )
    );
    assert_eq!(
        rpc_error(write(ExecSessionId::new("session-999")).await),
        (
            INVALID_REQUEST,
            "unknown session id session-999".to_string()
        )
    );
    let (code, message) = rpc_error(
        client
            .resize(ResizeParams {
                session_id: session.clone(),
                rows: 10,
                cols: 10,
            })
            .await,
    );
    assert_eq!(
        (code, message.contains("not backed by a terminal")),
        (INVALID_REQUEST, true)
    );
    Ok(())
}

async fn terminate_reports_running(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let session = client.exec(pipes(&["sleep", "1000"])).await?.session_id;
    let terminate =
        |session_id: ExecSessionId, mode| client.terminate(TerminateParams { session_id, mode });
    assert!(terminate(session.clone(), None).await?.running);
    assert_eq!(collect(&mut events, &session).await?.exit_code, Some(143));
    assert!(!terminate(session.clone(), None).await?.running);
    assert!(
        !terminate(ExecSessionId::new("session-999"), None)
            .await?
            .running
    );

    // A process that ignores SIGTERM is killed after the graceful timeout.
    let stubborn = client
        .exec(pipes(&[
            "sh",
            "-c",
            "trap '' TERM; echo armed; while :; do sleep 1; done",
        ]))
        .await?
        .session_id;
    output_until(&mut events, &stubborn, "armed").await?;
    let mode = Some(TerminateMode::Graceful { timeout_ms: 200 });
    assert!(terminate(stubborn.clone(), mode).await?.running);
    assert_eq!(collect(&mut events, &stubborn).await?.exit_code, Some(137));

    let forced = client.exec(pipes(&["sleep", "1000"])).await?.session_id;
    assert!(
        terminate(forced.clone(), Some(TerminateMode::Force))
            .await?
            .running
    );
    assert_eq!(collect(&mut events, &forced).await?.exit_code, Some(137));
    Ok(())
}

async fn resize_is_visible_to_stty(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let session = client
        .exec(tty(&["sh", "-c", "stty size; echo go; read x; stty size"]))
        .await?
        .session_id;
    output_until(&mut events, &session, "go").await?;
    client
        .resize(ResizeParams {
            session_id: session.clone(),
            rows: 33,
            cols: 101,
        })
        .await?;
    client
        .write(WriteParams {
            session_id: session.clone(),
            chunk: Base64Bytes(b"\n".to_vec()),
        })
        .await?;
    let collected = collect(&mut events, &session).await?;
    let text = collected.stdout_text();
    assert!(text.contains("33 101"), "{text:?}");
    Ok(())
}

async fn close_stdin_ends_cat(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let session = client.exec(tty(&["cat"])).await?.session_id;
    client
        .write(WriteParams {
            session_id: session.clone(),
            chunk: Base64Bytes(b"line\n".to_vec()),
        })
        .await?;
    output_until(&mut events, &session, "line\r\nline\r\n").await?;
    client
        .close_stdin(CloseStdinParams {
            session_id: session.clone(),
        })
        .await?;
    assert_eq!(collect(&mut events, &session).await?.exit_code, Some(0));
    Ok(())
}

async fn wait_honours_its_timeout(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let session = client.exec(pipes(&["sleep", "1000"])).await?.session_id;
    let waited = client
        .wait(WaitParams {
            session_id: session.clone(),
            timeout_ms: Some(100),
        })
        .await?;
    assert_eq!((waited.exit_code, waited.timed_out), (None, true));
    client
        .terminate(TerminateParams {
            session_id: session.clone(),
            mode: Some(TerminateMode::Force),
        })
        .await?;
    let waited = client
        .wait(WaitParams {
            session_id: session.clone(),
            timeout_ms: None,
        })
        .await?;
    assert_eq!((waited.exit_code, waited.timed_out), (Some(137), false));
    Ok(())
}

async fn snapshot_keeps_head_and_tail(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &["--retained-output-bytes", "1000"]).await?;
    let mut events = client.subscribe();
    let session = client.exec(pipes(&["seq", "1", "10000"])).await?.session_id;
    let collected = collect(&mut events, &session).await?;
    let snapshot = client
        .snapshot(SnapshotParams {
            session_id: session.clone(),
        })
        .await?;
    assert!(snapshot.truncated);
    assert_eq!((snapshot.exit_code, snapshot.running), (Some(0), false));
    assert_eq!(snapshot.terminal, None);
    assert_eq!(snapshot.stderr, Some(Base64Bytes(Vec::new())));
    let stdout = snapshot.stdout.context("stdout retained")?.into_inner();
    assert_eq!(stdout.len(), 500);
    assert!(collected.stdout.starts_with(&stdout[..250]));
    assert!(collected.stdout.ends_with(&stdout[250..]));

    let small = client.exec(tty(&["echo", "tiny"])).await?.session_id;
    collect(&mut events, &small).await?;
    let snapshot = client
        .snapshot(SnapshotParams { session_id: small })
        .await?;
    assert_eq!(snapshot.terminal, Some(Base64Bytes(b"tiny\r\n".to_vec())));
    assert!(!snapshot.truncated);
    Ok(())
}

async fn process_limit_is_enforced(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &["--max-processes", "2"]).await?;
    let mut events = client.subscribe();
    let first = client.exec(pipes(&["sleep", "1000"])).await?.session_id;
    client.exec(pipes(&["sleep", "1000"])).await?;
    let (code, message) = rpc_error(client.exec(pipes(&["true"])).await);
    assert_eq!(code, INVALID_REQUEST);
    assert!(message.contains("process limit"), "{message}");
    client
        .terminate(TerminateParams {
            session_id: first.clone(),
            mode: Some(TerminateMode::Force),
        })
        .await?;
    collect(&mut events, &first).await?;
    client.exec(pipes(&["true"])).await?;
    Ok(())
}

async fn hundred_thousand_lines_arrive_in_order(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let session = client
        .exec(pipes(&["seq", "1", "100000"]))
        .await?
        .session_id;
    let collected = collect(&mut events, &session).await?;
    let expected: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(collected.exit_code, Some(0));
    assert!(
        collected.stdout_text() == expected,
        "output differs from seq 1 100000"
    );
    Ok(())
}

async fn many_short_processes_all_report_exit(transport: Transport) -> anyhow::Result<()> {
    let (_server, client) = connect(transport, &[]).await?;
    let mut events = client.subscribe();
    let mut sessions = std::collections::HashSet::new();
    for n in 0..50 {
        let params = pipes(&["sh", "-c", &format!("echo {n}; exit {}", n % 7)]);
        sessions.insert(client.exec(params).await?.session_id);
    }
    tokio::time::timeout(super::harness::DEADLINE, async {
        while !sessions.is_empty() {
            if let keel_exec_server::ExecServerEvent::Exited { session_id, .. } =
                events.recv().await?
            {
                sessions.remove(&session_id);
            }
        }
        anyhow::Ok(())
    })
    .await??;
    Ok(())
}

both_transports!(
    exit_codes_are_reported,
    output_streams_cwd_env_and_arg0,
    pty_echo_round_trip,
    write_errors,
    terminate_reports_running,
    resize_is_visible_to_stty,
    close_stdin_ends_cat,
    wait_honours_its_timeout,
    snapshot_keeps_head_and_tail,
    process_limit_is_enforced,
    hundred_thousand_lines_arrive_in_order,
    many_short_processes_all_report_exit,
);
