//! `keel sandbox linux`: the engine's sandbox on a command of the user's, run by the real
//! binary against the real kernel.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use pretty_assertions::assert_eq;
use tempfile::TempDir;

const WAIT: Duration = Duration::from_secs(60);

struct Output {
    code: Option<i32>,
    stderr: String,
}

/// A Keel home whose config.toml says `sandbox_mode` (and excludes the `/tmp` and `$TMPDIR`
/// roots of workspace-write, so a checkout under `/tmp` changes nothing), a workspace, and a
/// directory outside it, all under the target dir.
struct World {
    home: TempDir,
    workspace: TempDir,
    outside: TempDir,
}

impl World {
    fn new(sandbox_mode: &str) -> anyhow::Result<Self> {
        let tmp = env!("CARGO_TARGET_TMPDIR");
        let home = tempfile::tempdir_in(tmp)?;
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "sandbox_mode = \"{sandbox_mode}\"\n\
                 [sandbox_workspace_write]\n\
                 exclude_slash_tmp = true\n\
                 exclude_tmpdir_env_var = true\n"
            ),
        )?;
        Ok(Self {
            home,
            workspace: tempfile::tempdir_in(tmp)?,
            outside: tempfile::tempdir_in(tmp)?,
        })
    }

    async fn keel_sandbox(&self, args: &[&str]) -> anyhow::Result<Output> {
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["sandbox", "linux"])
            .args(args)
            .current_dir(self.workspace.path())
            .env("KEEL_HOME", self.home.path())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let output = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .with_context(|| format!("keel sandbox linux {args:?} did not finish"))??;
        let output = Output {
            code: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        anyhow::ensure!(
            output.code != Some(121),
            "the sandbox could not be set up (does this kernel have Landlock?): {}",
            output.stderr
        );
        Ok(output)
    }

    fn outside_file(&self) -> String {
        self.outside.path().join("f.txt").display().to_string()
    }
}

fn write(path: &str) -> String {
    format!("echo x > '{path}'")
}

#[tokio::test]
async fn exit_status_propagates() -> anyhow::Result<()> {
    let world = World::new("read-only")?;
    let output = world.keel_sandbox(&["--", "bash", "-c", "exit 3"]).await?;
    assert_eq!(output.code, Some(3), "{}", output.stderr);
    let output = world.keel_sandbox(&["--", "true"]).await?;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    Ok(())
}

#[tokio::test]
async fn workspace_write_denies_writes_outside() -> anyhow::Result<()> {
    let world = World::new("read-only")?;
    let outside = world.outside_file();
    let args = ["--sandbox", "workspace-write", "--", "bash", "-c"];
    let inside = world
        .keel_sandbox(&[&args[..], &[write("inside.txt").as_str()]].concat())
        .await?;
    assert_eq!(inside.code, Some(0), "{}", inside.stderr);
    assert!(world.workspace.path().join("inside.txt").exists());

    let denied = world
        .keel_sandbox(&[&args[..], &[write(&outside).as_str()]].concat())
        .await?;
    assert_eq!(denied.code, Some(1));
    assert!(
        denied.stderr.contains("Permission denied"),
        "{}",
        denied.stderr
    );
    assert!(!Path::new(&outside).exists());

    let root = world.outside.path().display().to_string();
    let allowed = world
        .keel_sandbox(&[
            "--sandbox",
            "workspace-write",
            "--writable-root",
            &root,
            "--",
            "bash",
            "-c",
            &write(&outside),
        ])
        .await?;
    assert_eq!(allowed.code, Some(0), "{}", allowed.stderr);
    assert!(Path::new(&outside).exists());
    Ok(())
}

#[tokio::test]
async fn default_is_the_configured_policy() -> anyhow::Result<()> {
    let world = World::new("read-only")?;
    let output = world
        .keel_sandbox(&["--", "bash", "-c", &write("inside.txt")])
        .await?;
    assert_eq!(output.code, Some(1));
    assert!(!world.workspace.path().join("inside.txt").exists());

    let world = World::new("workspace-write")?;
    let output = world
        .keel_sandbox(&["--", "bash", "-c", &write("inside.txt")])
        .await?;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    Ok(())
}

#[tokio::test]
async fn network_flag_needs_workspace_write() -> anyhow::Result<()> {
    let world = World::new("read-only")?;
    let output = world.keel_sandbox(&["--network", "--", "true"]).await?;
    assert_eq!(output.code, Some(2));
    assert!(
        output.stderr.contains("workspace-write"),
        "{}",
        output.stderr
    );
    Ok(())
}
