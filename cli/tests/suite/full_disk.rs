//! A disk that fills up mid-turn is heard: the rollout write fails, the turn stops with an
//! error naming the file, `keel exec` exits non-zero, and what was recorded before stays
//! readable. The test mounts a small tmpfs of its own as the Keel home (root only).

use std::path::{Path, PathBuf};
use std::process::Command;

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, shell_call, write_config,
};

use super::exec::keel_exec;

/// A tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A 64 KiB tmpfs, or why one cannot be mounted here.
    fn mount() -> anyhow::Result<Result<Self, String>> {
        let dir = tempfile::tempdir()?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
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
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_mid_turn_stops_the_turn_and_keel_exec_says_why() -> anyhow::Result<()> {
    let disk = match SmallDisk::mount()? {
        Ok(disk) => disk,
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: cannot mount a tmpfs here ({why}); .ci/run runs as root");
            return Ok(());
        }
        Err(why) => anyhow::bail!("cannot mount a tmpfs ({why}); this test needs root"),
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
