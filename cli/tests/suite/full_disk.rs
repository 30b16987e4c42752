//! A disk that fills up is heard: a failed rollout or agent-job database write stops the turn
//! with an error naming the file and `keel exec` exits non-zero, with what was recorded before
//! still readable; a `config.toml` edit on a full disk is refused naming the file, which stays
//! as it was. The tests mount small tmpfs filesystems of their own (root only).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use keel_test_support::{
    AppServerProcess, MockModelServer, ProcessBuilder, Script, Turn, assistant_message, shell_call,
    write_config,
};
use serde_json::json;

use super::agents::{WorkerScript, job_mock, report_call};
use super::exec::keel_exec;

/// A tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A tmpfs of `size` (`64k`, `1m`), or why one cannot be mounted here.
    fn mount(size: &str) -> anyhow::Result<Result<Self, String>> {
        let dir = tempfile::tempdir()?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()?;
        if !out.status.success() {
            return Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
        }
        Ok(Ok(Self { dir }))
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Takes every byte left, so the next write that needs a new block fails.
    fn fill(&self) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut file = std::fs::File::create(self.path().join("filler"))?;
        let block = vec![b'x'; 4096];
        loop {
            match file.write_all(&block) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::StorageFull => return Ok(()),
                Err(err) => return Err(err),
            }
        }
    }
}

/// A small disk, or `None` (the test is skipped) where one cannot be mounted outside CI.
fn small_disk(size: &str) -> anyhow::Result<Option<SmallDisk>> {
    match SmallDisk::mount(size)? {
        Ok(disk) => Ok(Some(disk)),
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: cannot mount a tmpfs here ({why}); .ci/run runs as root");
            Ok(None)
        }
        Err(why) => anyhow::bail!("cannot mount a tmpfs ({why}); this test needs root"),
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_mid_turn_stops_the_turn_and_keel_exec_says_why() -> anyhow::Result<()> {
    let Some(disk) = small_disk("64k")? else {
        return Ok(());
    };
    // The command's output (200 KB) does not fit in what is left of the 64 KiB disk.
    let script = Script::new([
        Turn::new([shell_call(
            "big",
            ["bash", "-c", "head -c 200000 /dev/zero | tr '\\0' a"],
        )]),
        Turn::new([assistant_message("should not be reached")]),
    ]);
    let mock = MockModelServer::start(script).await?;
    let ws = tempfile::tempdir()?;
    write_config(disk.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(disk.path(), ws.path(), &["fill it"], None).await?;
    assert_ne!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("can no longer be recorded") && out.stderr.contains("rollout file"),
        "{}",
        out.stderr
    );
    // The turn stopped: the model was not asked again.
    assert_eq!(mock.requests().len(), 1);
    // What was recorded before the disk filled is still there and readable.
    let sessions: Vec<PathBuf> = walk(&disk.path().join("sessions"))?;
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let text = std::fs::read_to_string(&sessions[0])?;
    let first = text.lines().next().unwrap_or_default();
    let meta: serde_json::Value = serde_json::from_str(first)?;
    assert_eq!(meta["type"], "session_meta");
    Ok(())
}

/// The agent-job database lives in `sqlite_home` (here a 1 MiB disk that fills up while the
/// first worker runs): the row cannot be recorded, so the job stops its workers, the turn
/// stops naming the database, and `keel exec` exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_database_on_a_full_disk_stops_the_turn_and_names_the_file() -> anyhow::Result<()> {
    let Some(disk) = small_disk("1m")? else {
        return Ok(());
    };
    let disk = Arc::new(disk);
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(ws.path().join("rows.csv"), "name\na\nb\nc\n")?;
    let filled = disk.clone();
    let worker: WorkerScript = Arc::new(move |worker, request| {
        if request.tool_output_call_ids().is_empty() {
            // The job is created and this row claimed; now the disk fills up.
            if let Err(err) = filled.fill() {
                eprintln!("could not fill the disk: {err}");
            }
            (report_call(worker, "1", json!({"ok": true}), false), false)
        } else {
            (Turn::new([assistant_message("done")]), true)
        }
    });
    let args = json!({"csv_path": "rows.csv", "instruction": "Check {name}", "max_concurrency": 1});
    let (mock, stats) = job_mock(vec![("job", "spawn_agents_on_csv", args)], worker).await?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "sqlite_home",
                toml::Value::from(disk.path().display().to_string()),
            ),
            ("agents.max_threads", toml::Value::from(2)),
        ],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["run the job"], None).await?;
    assert_ne!(out.code, Some(0), "{}", out.stderr);
    let database = disk.path().join("agent_jobs.sqlite3");
    assert!(
        out.stderr
            .contains(&format!("the agent job database {}", database.display()))
            && out.stderr.contains("the turn was stopped"),
        "{}",
        out.stderr
    );
    // The job stopped at the first row it could not record: no other worker started, and
    // the model was not asked to go on.
    assert_eq!(
        stats.first_requests().len(),
        1,
        "{:?}",
        stats.first_requests()
    );
    assert!(
        mock.requests()
            .iter()
            .all(|request| request.tool_output("job").is_none()),
        "the model saw the job end"
    );
    Ok(())
}

/// `config/value/write` on a full disk: a JSON-RPC error naming `config.toml`, the file as it
/// was, no temporary file left, and the server still serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_edit_on_a_full_disk_is_refused_and_leaves_the_file() -> anyhow::Result<()> {
    let Some(disk) = small_disk("64k")? else {
        return Ok(());
    };
    let mock = MockModelServer::start(Script::new([])).await?;
    let ws = tempfile::tempdir()?;
    write_config(disk.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let config_file = disk.path().join("config.toml");
    let before = std::fs::read_to_string(&config_file)?;
    let builder = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .arg("app-server")
        .home_path(disk.path())
        .home_var("KEEL_HOME")
        .cwd(ws.path())
        .env_remove("RUST_LOG");
    let mut server = AppServerProcess::spawn(builder)?;
    server.initialize().await?;
    disk.fill()?;
    // A value long enough to need a block of its own.
    let long = "x".repeat(8192);
    let id = server
        .send_request(
            "config/value/write",
            json!({"keyPath": "developer_instructions", "value": long, "mergeStrategy": "replace"}),
        )
        .await?;
    let response = server.read_response(id).await?;
    let error = &response["error"];
    assert_eq!(error["code"], -32600, "{response}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&config_file.display().to_string()) && message.contains("No space left"),
        "{response}"
    );
    assert_eq!(std::fs::read_to_string(&config_file)?, before);
    let mut names: Vec<String> = std::fs::read_dir(disk.path())?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    assert!(
        names.iter().all(|name| !name.starts_with(".config.toml")),
        "{names:?}"
    );
    // Still serving: a read answers.
    let read = server.request("config/read", json!({})).await?;
    assert!(read.get("config").is_some(), "{read}");
    Ok(())
}

/// Every file under `dir`.
fn walk(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(walk(&path)?);
        } else {
            files.push(path);
        }
    }
    Ok(files)
}
