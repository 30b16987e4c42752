//! The sandbox helper against the real kernel: for each policy, a probe script (and a child
//! it starts, to show restrictions are inherited) tries writes inside and outside the
//! workspace, into `.git` and `$HOME`, a read of `/etc/passwd`, and a TCP connection to a
//! listener on 127.0.0.1. These tests fail (never skip) when the kernel cannot sandbox.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use keel_core::sandbox::{LINUX_SANDBOX_ARG0, SandboxCommand};
use keel_protocol::SandboxPolicy;
use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::common::{WAIT, sandbox_helper};

const PROBE: &str = r#"
who=$1; outside=$2; home=$3; port=$4
try() { if ( eval "$2" ) >/dev/null 2>&1; then echo "$who:$1=ok"; else echo "$who:$1=denied"; fi; }
try write_workspace "echo x > inside-$who.txt"
try write_outside "echo x > '$outside/$who.txt'"
try write_home "echo x > '$home-$who'"
try write_tmp 'f=$(mktemp /tmp/keel-probe.XXXXXX) && rm -f "$f"'
try append_git "echo x >> .git/config"
try create_in_git "touch .git/hooks/pre-commit-$who"
try read_passwd "head -c 4 /etc/passwd"
try write_dev_null "echo x > /dev/null"
try tcp_connect "exec 3<>/dev/tcp/127.0.0.1/$port"
if [ "$who" = parent ]; then bash "$0" child "$outside" "$home" "$port"; fi
"#;

/// A workspace (a git repository) and a directory outside the workspace, both under the
/// target dir. The target dir may itself be under `/tmp` (a checkout there), so tests that
/// need `outside` to be outside every writable root exclude the temp roots.
struct World {
    workspace: TempDir,
    outside: TempDir,
    listener: TcpListener,
}

impl World {
    fn new() -> anyhow::Result<Self> {
        let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        std::fs::create_dir_all(workspace.path().join(".git/hooks"))?;
        std::fs::write(workspace.path().join(".git/config"), "[core]\n")?;
        let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        std::fs::write(outside.path().join("probe.sh"), PROBE)?;
        Ok(Self {
            workspace,
            outside,
            listener: TcpListener::bind("127.0.0.1:0")?,
        })
    }

    /// Runs the probe under `policy` with `home` as the `$HOME` write target; returns
    /// `who:probe` → `ok`/`denied`.
    async fn probe(
        &self,
        policy: &SandboxPolicy,
        allow_git_writes: bool,
        home: &Path,
    ) -> anyhow::Result<BTreeMap<String, String>> {
        let port = self.listener.local_addr()?.port().to_string();
        let argv = [
            "bash".to_string(),
            self.outside.path().join("probe.sh").display().to_string(),
            "parent".to_string(),
            self.outside.path().display().to_string(),
            home.display().to_string(),
            port,
        ];
        let output = run_helper(policy, self.workspace.path(), allow_git_writes, &argv).await?;
        Ok(output
            .stdout
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(probe, result)| (probe.to_string(), result.to_string()))
            .collect())
    }
}

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `argv` under the helper as the engine does (`argv[0]` = `keel-linux-sandbox`, a
/// cleared environment), failing loudly when the helper cannot confine itself.
async fn run_helper(
    policy: &SandboxPolicy,
    workspace: &Path,
    allow_git_writes: bool,
    argv: &[String],
) -> anyhow::Result<Output> {
    let command = SandboxCommand::new(&sandbox_helper(), policy, workspace, allow_git_writes)?;
    let full = command.wrap(argv);
    let child = tokio::process::Command::new(&full[0])
        .arg0(LINUX_SANDBOX_ARG0)
        .args(&full[1..])
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .with_context(|| format!("sandboxed {argv:?} did not finish"))??;
    let output = Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    anyhow::ensure!(
        output.code != Some(121),
        "the sandbox helper could not confine itself (does this kernel have Landlock ABI 3+?): \
         {}",
        output.stderr
    );
    Ok(output)
}

/// The expected result of every probe, for the parent and its child alike.
fn expected(results: &[(&str, &str)]) -> BTreeMap<String, String> {
    ["parent", "child"]
        .iter()
        .flat_map(|who| {
            results
                .iter()
                .map(move |(probe, result)| (format!("{who}:{probe}"), result.to_string()))
        })
        .collect()
}

/// A `$HOME` write target that must not exist after a sandboxed run.
fn home_target() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    Ok(PathBuf::from(home).join(format!(".keel-sandbox-probe-{}", std::process::id())))
}

fn assert_home_untouched(home: &Path) -> anyhow::Result<()> {
    for who in ["parent", "child"] {
        let path = PathBuf::from(format!("{}-{who}", home.display()));
        if path.exists() {
            std::fs::remove_file(&path)?;
            anyhow::bail!("a sandboxed command wrote {}", path.display());
        }
    }
    Ok(())
}

#[tokio::test]
async fn read_only_denies_every_write_and_the_network() -> anyhow::Result<()> {
    let world = World::new()?;
    let home = home_target()?;
    let results = world.probe(&SandboxPolicy::ReadOnly, false, &home).await?;
    assert_home_untouched(&home)?;
    assert_eq!(
        results,
        expected(&[
            ("write_workspace", "denied"),
            ("write_outside", "denied"),
            ("write_home", "denied"),
            ("write_tmp", "denied"),
            ("append_git", "denied"),
            ("create_in_git", "denied"),
            ("read_passwd", "ok"),
            ("write_dev_null", "ok"),
            ("tcp_connect", "denied"),
        ])
    );
    Ok(())
}

#[tokio::test]
async fn workspace_write_without_temp_roots_allows_the_workspace_only() -> anyhow::Result<()> {
    let world = World::new()?;
    let home = home_target()?;
    let policy = SandboxPolicy::WorkspaceWrite {
        writable_roots: Vec::new(),
        network_access: false,
        exclude_tmpdir_env_var: true,
        exclude_slash_tmp: true,
    };
    let results = world.probe(&policy, false, &home).await?;
    assert_home_untouched(&home)?;
    assert_eq!(
        results,
        expected(&[
            ("write_workspace", "ok"),
            ("write_outside", "denied"),
            ("write_home", "denied"),
            ("write_tmp", "denied"),
            ("append_git", "denied"),
            ("create_in_git", "denied"),
            ("read_passwd", "ok"),
            ("write_dev_null", "ok"),
            ("tcp_connect", "denied"),
        ])
    );
    assert!(world.workspace.path().join("inside-child.txt").exists());
    assert_eq!(
        std::fs::read_to_string(world.workspace.path().join(".git/config"))?,
        "[core]\n"
    );
    Ok(())
}

#[tokio::test]
async fn workspace_write_defaults_keep_tmp_writable() -> anyhow::Result<()> {
    let world = World::new()?;
    let home = home_target()?;
    let policy = SandboxPolicy::new_workspace_write();
    let results = world.probe(&policy, false, &home).await?;
    assert_home_untouched(&home)?;
    // `outside` is writable exactly when the checkout lives under a temp root.
    let outside_in_tmp = under_a_temp_root(world.outside.path());
    assert_eq!(
        results,
        expected(&[
            ("write_workspace", "ok"),
            (
                "write_outside",
                if outside_in_tmp { "ok" } else { "denied" }
            ),
            ("write_home", "denied"),
            ("write_tmp", "ok"),
            ("append_git", "denied"),
            ("create_in_git", "denied"),
            ("read_passwd", "ok"),
            ("write_dev_null", "ok"),
            ("tcp_connect", "denied"),
        ])
    );
    Ok(())
}

/// Whether `path` is under `/tmp` or `$TMPDIR`, the roots `workspace-write` adds by default.
fn under_a_temp_root(path: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let path = canonical(path);
    let mut roots = vec![canonical(Path::new("/tmp"))];
    roots.extend(std::env::var_os("TMPDIR").map(|dir| canonical(Path::new(&dir))));
    roots.iter().any(|root| path.starts_with(root))
}

#[tokio::test]
async fn workspace_write_options_widen_or_narrow_it() -> anyhow::Result<()> {
    let world = World::new()?;
    let home = home_target()?;
    let policy = SandboxPolicy::WorkspaceWrite {
        writable_roots: vec![world.outside.path().to_path_buf()],
        network_access: true,
        exclude_tmpdir_env_var: true,
        exclude_slash_tmp: true,
    };
    let results = world.probe(&policy, true, &home).await?;
    assert_home_untouched(&home)?;
    assert_eq!(
        results,
        expected(&[
            ("write_workspace", "ok"),
            ("write_outside", "ok"),
            ("write_home", "denied"),
            ("write_tmp", "denied"),
            ("append_git", "ok"),
            ("create_in_git", "ok"),
            ("read_passwd", "ok"),
            ("write_dev_null", "ok"),
            ("tcp_connect", "ok"),
        ])
    );
    Ok(())
}

#[tokio::test]
async fn danger_full_access_restricts_nothing() -> anyhow::Result<()> {
    let world = World::new()?;
    // Stands in for `$HOME`: this run really writes there.
    let home = world.outside.path().join("home");
    let results = world
        .probe(&SandboxPolicy::DangerFullAccess, false, &home)
        .await?;
    assert_eq!(
        results,
        expected(&[
            ("write_workspace", "ok"),
            ("write_outside", "ok"),
            ("write_home", "ok"),
            ("write_tmp", "ok"),
            ("append_git", "ok"),
            ("create_in_git", "ok"),
            ("read_passwd", "ok"),
            ("write_dev_null", "ok"),
            ("tcp_connect", "ok"),
        ])
    );
    Ok(())
}

#[tokio::test]
async fn git_file_of_a_worktree_stays_read_only() -> anyhow::Result<()> {
    let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    std::fs::write(workspace.path().join(".git"), "gitdir: /elsewhere\n")?;
    let argv = ["bash", "-c", "echo x >> .git; echo x > ok.txt"].map(str::to_string);
    let output = run_helper(
        &SandboxPolicy::new_workspace_write(),
        workspace.path(),
        false,
        &argv,
    )
    .await?;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(
        output.stderr.contains("Read-only file system"),
        "{}",
        output.stderr
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".git"))?,
        "gitdir: /elsewhere\n"
    );
    assert!(workspace.path().join("ok.txt").exists());
    Ok(())
}

#[tokio::test]
async fn helper_reports_exit_status_and_missing_commands() -> anyhow::Result<()> {
    let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let exit = ["bash", "-c", "exit 7"].map(str::to_string);
    let output = run_helper(&SandboxPolicy::ReadOnly, workspace.path(), false, &exit).await?;
    assert_eq!(output.code, Some(7));
    let missing = ["keel-no-such-command".to_string()];
    let output = run_helper(&SandboxPolicy::ReadOnly, workspace.path(), false, &missing).await?;
    assert_eq!(output.code, Some(127));
    assert!(
        output.stderr.contains("keel-no-such-command"),
        "{}",
        output.stderr
    );
    Ok(())
}
