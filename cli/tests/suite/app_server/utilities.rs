use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use keel_test_support::Script;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

/// `fs/readFile` on a device or a FIFO answers at once that it is not a regular file, instead
/// of reading without end (`/dev/zero`) or waiting for a writer that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_read_file_refuses_devices_and_fifos() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let fifo = world.ws().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)?;
    let link = world.ws().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &link)?;
    for (path, what) in [
        (std::path::PathBuf::from("/dev/zero"), "character device"),
        (link, "character device"),
        (fifo, "FIFO"),
    ] {
        let id = server
            .send_request("fs/readFile", json!({"path": path}))
            .await?;
        let response = server.read_response(id).await?;
        assert_eq!(response["error"]["code"], -32600, "{response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(what) && message.contains("not a regular file"),
            "{path:?}: {response}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_methods_work_on_absolute_paths_and_reject_relative_ones() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let dir = world.ws().join("made/deep");
    server
        .request("fs/createDirectory", json!({"path": dir}))
        .await?;
    let file = dir.join("a.txt");
    server
        .request(
            "fs/writeFile",
            json!({"path": file, "dataBase64": STANDARD.encode("hello fs")}),
        )
        .await?;
    let read = server.request("fs/readFile", json!({"path": file})).await?;
    assert_eq!(
        STANDARD.decode(read["dataBase64"].as_str().unwrap_or_default())?,
        b"hello fs"
    );
    let meta = server
        .request("fs/getMetadata", json!({"path": file}))
        .await?;
    assert_eq!(meta["isFile"], true);
    assert_eq!(meta["isDirectory"], false);
    assert!(meta["modifiedAtMs"].as_i64().unwrap_or_default() > 0);
    let copy = world.ws().join("copy");
    server
        .request("fs/copy", json!({"sourcePath": world.ws().join("made"), "destinationPath": copy, "recursive": true}))
        .await?;
    assert_eq!(
        std::fs::read_to_string(copy.join("deep/a.txt"))?,
        "hello fs"
    );
    let listing = server
        .request("fs/readDirectory", json!({"path": dir}))
        .await?;
    assert_eq!(
        listing["entries"],
        json!([{"fileName": "a.txt", "isDirectory": false, "isFile": true}])
    );
    server
        .request("fs/remove", json!({"path": world.ws().join("made")}))
        .await?;
    assert!(!world.ws().join("made").exists());

    let relative = server
        .send_request("fs/readFile", json!({"path": "relative.txt"}))
        .await?;
    let response = server.read_response(relative).await?;
    assert_eq!(response["error"]["code"], -32602);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("must be an absolute path"),
        "{response}"
    );
    let missing = server
        .send_request("fs/readFile", json!({"path": world.ws().join("nope.txt")}))
        .await?;
    let response = server.read_response(missing).await?;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("nope.txt"),
        "{response}"
    );
    let dir_copy = server
        .send_request(
            "fs/copy",
            json!({"sourcePath": world.ws(), "destinationPath": world.ws().join("x")}),
        )
        .await?;
    let response = server.read_response(dir_copy).await?;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("recursive"),
        "{response}"
    );
    Ok(())
}

/// A server started with a variable that is not UTF-8 still runs commands (the variable is
/// left out of their environment) instead of panicking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_exec_survives_a_non_utf8_environment() -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let world = World::new(Script::new([]), &[]).await?;
    let builder = world.builder().env(
        "KEEL_TEST_NOT_UTF8",
        std::ffi::OsStr::from_bytes(b"caf\xe9"),
    );
    let mut server = world.server_with(builder).await?;
    let result = server
        .request(
            "command/exec",
            json!({"command": ["sh", "-c", "echo ${KEEL_TEST_NOT_UTF8-unset}"], "cwd": world.ws()}),
        )
        .await?;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], "unset\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_exec_round_trips() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let result = server
        .request(
            "command/exec",
            json!({"command": ["bash", "-c", "echo out; echo err >&2; exit 4"], "cwd": world.ws()}),
        )
        .await?;
    assert_eq!(
        result,
        json!({"exitCode": 4, "stdout": "out\n", "stderr": "err\n"})
    );

    // Streaming, interactive: write a line to a PTY command and read it back.
    let id = server
        .send_request(
            "command/exec",
            json!({"command": ["bash", "-c", "read line; echo got:$line"], "tty": true, "streamStdin": true,
                   "streamStdoutStderr": true, "processId": "p1"}),
        )
        .await?;
    // Wait until the process is registered by polling write until it succeeds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let write = server
            .send_request(
                "command/exec/write",
                json!({"processId": "p1", "deltaBase64": STANDARD.encode("hi\n")}),
            )
            .await?;
        let response = server.read_response(write).await?;
        if response.get("result").is_some() {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "process p1 never appeared: {response}"
        );
        tokio::task::yield_now().await;
    }
    let mut output = String::new();
    while !output.contains("got:hi") {
        let delta = server.read_notification("command/exec/outputDelta").await?;
        assert_eq!(delta["params"]["processId"], "p1");
        output.push_str(&String::from_utf8_lossy(
            &STANDARD.decode(delta["params"]["deltaBase64"].as_str().unwrap_or_default())?,
        ));
    }
    let done = server.read_response(id).await?;
    assert_eq!(done["result"]["exitCode"], 0, "{done}");

    let unknown = server
        .send_request("command/exec/terminate", json!({"processId": "ghost"}))
        .await?;
    let response = server.read_response(unknown).await?;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("ghost"),
        "{response}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_list_and_config_read_describe_the_configuration() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let models = server.request("model/list", json!({})).await?;
    assert_eq!(models["data"][0]["model"], "mock-model");
    assert_eq!(models["data"][0]["isDefault"], true);
    let config = server.request("config/read", json!({})).await?;
    assert_eq!(config["config"]["model"], "mock-model");
    assert_eq!(config["config"]["approval_policy"], "never");
    assert_eq!(config["config"]["sandbox_mode"], "danger-full-access");
    Ok(())
}

/// With `exec_server_url`, `command/exec` runs on that exec-server, like the model's commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_exec_runs_on_the_configured_exec_server() -> anyhow::Result<()> {
    let mut remote = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", remote.websocket_address().await?);
    let world = World::new(Script::new([]), &[("exec_server_url", url.into())]).await?;
    let mut server = world.server().await?;
    let result = server
        .request(
            "command/exec",
            json!({"command": ["echo", "remote-command-exec"], "cwd": world.ws()}),
        )
        .await?;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], "remote-command-exec\n");
    remote
        .wait_for_stderr_line("the remote start", |line| {
            line.contains("started") && line.contains("remote-command-exec")
        })
        .await?;
    Ok(())
}

/// `fs/watch`: a new file in a watched directory arrives as `fs/changed` with the watch's id;
/// a path that does not exist yet is reported when it appears, then watched itself;
/// `fs/unwatch` ends a watch (an unknown one is no error, as in Codex); relative and repeated
/// watches are refused naming why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_watch_reports_changes_until_unwatched() -> anyhow::Result<()> {
    use keel_protocol::app_server::{FsChangedNotification, server_notification::FsChanged};
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let dir = world.ws().join("watched");
    std::fs::create_dir_all(&dir)?;
    let watched = server
        .request("fs/watch", json!({"path": dir, "watchId": "w1"}))
        .await?;
    let canonical = std::fs::canonicalize(&dir)?;
    assert_eq!(watched, json!({"path": canonical}));

    std::fs::write(dir.join("new.txt"), "hello")?;
    let changed: FsChangedNotification = server
        .next_notification::<FsChanged>(|changed| changed.watch_id == "w1")
        .await?;
    assert!(
        changed
            .changed_paths
            .iter()
            .any(|path| path.ends_with("new.txt")),
        "{changed:?}"
    );

    // Not there yet: accepted, its creation reported, then its own entries.
    let later = world.ws().join("later");
    let answer = server
        .request("fs/watch", json!({"path": later, "watchId": "w2"}))
        .await?;
    assert_eq!(answer, json!({"path": later}));
    std::fs::create_dir(&later)?;
    let created = server
        .next_notification::<FsChanged>(|changed| changed.watch_id == "w2")
        .await?;
    assert_eq!(created.changed_paths, vec![later.clone()]);
    std::fs::write(later.join("inside.txt"), "x")?;
    let inside = server
        .next_notification::<FsChanged>(|changed| {
            changed.watch_id == "w2"
                && changed
                    .changed_paths
                    .iter()
                    .any(|path| path.ends_with("inside.txt"))
        })
        .await?;
    assert!(!inside.changed_paths.is_empty());

    for (params, code, expected) in [
        (
            json!({"path": "relative/dir", "watchId": "w3"}),
            -32602,
            "absolute",
        ),
        (
            json!({"path": dir, "watchId": "w1"}),
            -32600,
            "watchId already exists: w1",
        ),
    ] {
        let id = server.send_request("fs/watch", params.clone()).await?;
        let response = server.read_response(id).await?;
        assert_eq!(response["error"]["code"], code, "{params}: {response}");
        assert!(
            response["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains(expected)),
            "{params}: {response}"
        );
    }
    for _ in 0..2 {
        let unwatched = server
            .request("fs/unwatch", json!({"watchId": "w1"}))
            .await?;
        assert_eq!(unwatched, json!({}));
    }
    Ok(())
}
