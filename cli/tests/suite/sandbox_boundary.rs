//! The sandbox boundary tried as a model would try it, through `keel exec` and the mock
//! model: a command under `read-only` or `workspace-write` (network off) reaching Keel's own
//! control socket, reading another process's command line, writing or creating `.git` (and
//! the git directory its pointer names), `.codex`, `.agents` or `.aws`, killing or stopping
//! the process that supervises it, and leaving processes behind. The socket, `/proc` and
//! folder attacks first run under `danger-full-access`, where they must succeed, so the test
//! proves the target is real.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    MarkedSleeper, Turn, exec_command_call, processes_whose_cmdline_contains, shell_call,
    write_stdin_call,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::unified_exec::{Run, body_of, run_with_config};

const GONE_WITHIN: Duration = Duration::from_secs(15);
const STARTED_WITHIN: Duration = Duration::from_secs(60);

/// `keel exec` running `turns` under `sandbox_mode` with approvals `never`.
async fn run_under(ws: &Path, sandbox_mode: &str, turns: Vec<Turn>) -> anyhow::Result<Run> {
    let run = run_with_config(
        ws,
        turns,
        &[],
        &[
            ("sandbox_mode", sandbox_mode.into()),
            ("sandbox_workspace_write.exclude_slash_tmp", true.into()),
            (
                "sandbox_workspace_write.exclude_tmpdir_env_var",
                true.into(),
            ),
        ],
    )
    .await?;
    anyhow::ensure!(run.code == Some(0), "keel exec failed: {}", run.stderr);
    Ok(run)
}

/// `key=value` lines of a command's output, as the model read it (`shell`'s JSON or
/// `exec_command`'s text).
fn results(output: &str) -> Vec<(String, String)> {
    let text = match serde_json::from_str::<serde_json::Value>(output) {
        Ok(value) => value["output"].as_str().unwrap_or_default().to_string(),
        Err(_) => body_of(output).to_string(),
    };
    text.lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(key, _)| !key.contains(' ') && !key.is_empty())
        .map(|(key, value)| (key.to_string(), value.trim().to_string()))
        .collect()
}

fn result<'a>(results: &'a [(String, String)], key: &str) -> Option<&'a str> {
    results
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A `keel app-server` listening on a unix socket: Keel's control channel, which can write
/// files and run commands for whoever connects.
struct ControlSocket {
    child: tokio::process::Child,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl ControlSocket {
    async fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("keel-control.sock");
        let home = dir.path().join("home");
        std::fs::create_dir(&home)?;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["app-server", "--listen"])
            .arg(format!("unix://{}", path.display()))
            .env("KEEL_HOME", &home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let wanted = format!("listening on unix://{}", path.display());
        tokio::time::timeout(STARTED_WITHIN, async {
            while let Some(line) = lines.next_line().await? {
                if line.contains(&wanted) {
                    return Ok(());
                }
            }
            anyhow::bail!("the app-server ended before listening")
        })
        .await
        .context("the app-server did not start listening")??;
        // Keep draining its stderr so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child,
            path,
            _dir: dir,
        })
    }
}

/// Connects to the control socket and looks for the app-server's command line among the
/// processes it can see. The needle is built at run time so the script's own command line
/// does not contain it.
fn control_probe(socket: &Path) -> String {
    format!(
        r#"
import os, socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({socket:?})
    print("connect=ok")
except OSError as err:
    print("connect=denied errno " + str(err.errno))
needle = ("app" + "-server").encode()
seen = False
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open("/proc/" + pid + "/cmdline", "rb") as f:
                seen = seen or needle in f.read()
        except OSError:
            pass
print("seen=" + ("yes" if seen else "no"))
a, b = socket.socketpair()
a.send(b"ping")
print("socketpair=" + b.recv(4).decode())
"#,
        socket = socket.display().to_string()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_python3), ignore = "needs python3 on PATH")]
async fn a_model_command_cannot_reach_keels_control_socket_or_see_other_processes()
-> anyhow::Result<()> {
    let mut control = ControlSocket::start().await?;
    let probe = control_probe(&control.path);
    let call = |id: &str| shell_call(id, ["python3", "-c", probe.as_str()]);
    let ws = tempfile::tempdir()?;

    let open = run_under(
        ws.path(),
        "danger-full-access",
        vec![Turn::new([call("p0")])],
    )
    .await?;
    let unconfined = results(&open.output("p0"));
    assert_eq!(result(&unconfined, "connect"), Some("ok"), "{unconfined:?}");
    assert_eq!(result(&unconfined, "seen"), Some("yes"), "{unconfined:?}");

    for mode in ["read-only", "workspace-write"] {
        let run = run_under(ws.path(), mode, vec![Turn::new([call("p1")])]).await?;
        let confined = results(&run.output("p1"));
        let denied = result(&confined, "connect").unwrap_or_default();
        assert!(denied.starts_with("denied"), "{mode}: {confined:?}");
        assert_eq!(
            result(&confined, "seen"),
            Some("no"),
            "{mode}: {confined:?}"
        );
        // What a command makes for itself keeps working.
        assert_eq!(result(&confined, "socketpair"), Some("ping"), "{mode}");
    }
    control.child.start_kill()?;
    Ok(())
}

/// A workspace whose `.git` is a pointer file to a git directory inside it (as `git init
/// --separate-git-dir` makes), with a trusted-looking project hook in `.codex`.
struct ProtectedWorkspace {
    dir: tempfile::TempDir,
}

impl ProtectedWorkspace {
    fn new() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("gitstore/hooks"))?;
        std::fs::write(ws.join("gitstore/HEAD"), "ref: refs/heads/main\n")?;
        std::fs::write(ws.join(".git"), "gitdir: gitstore\n")?;
        std::fs::create_dir(ws.join(".codex"))?;
        std::fs::write(ws.join(".codex/hooks.json"), "{}\n")?;
        Ok(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every attack, each printing `name=ok` or `name=denied`.
    fn attack() -> &'static str {
        r##"try() { if ( eval "$2" ) >/dev/null 2>&1; then echo "$1=ok"; else echo "$1=denied"; fi; }
try rewrite_hook 'echo "{\"hooks\":1}" > .codex/hooks.json'
try new_codex_file 'touch .codex/config.toml'
try git_hook 'echo "#!/bin/sh" > gitstore/hooks/pre-commit'
try git_pointer 'echo "gitdir: /tmp" > .git'
try create_agents 'mkdir -p .agents/skills'
try create_aws 'mkdir .aws && echo k > .aws/credentials'
try move_codex 'mv .codex codex-moved'
try workspace 'echo fine > ok.txt'
"##
    }

    /// Whether the files are as they were (the workspace file aside).
    fn untouched(&self) -> anyhow::Result<()> {
        let ws = self.path();
        assert_eq!(
            std::fs::read_to_string(ws.join(".codex/hooks.json"))?,
            "{}\n"
        );
        assert!(!ws.join(".codex/config.toml").exists());
        assert!(!ws.join("gitstore/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join(".git"))?,
            "gitdir: gitstore\n"
        );
        // Nothing was created, and the run left no empty folder behind either.
        assert!(!ws.join(".agents").exists());
        assert!(!ws.join(".aws").exists());
        assert!(!ws.join("codex-moved").exists());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_folders_stay_read_only_and_missing_ones_cannot_be_created() -> anyhow::Result<()>
{
    let attack = ProtectedWorkspace::attack();
    let open = ProtectedWorkspace::new()?;
    let run = run_under(
        open.path(),
        "danger-full-access",
        vec![Turn::new([shell_call("a0", ["bash", "-c", attack])])],
    )
    .await?;
    let unconfined = results(&run.output("a0"));
    let succeeded: Vec<&str> = unconfined
        .iter()
        .filter(|(_, v)| v == "ok")
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        succeeded,
        [
            "rewrite_hook",
            "new_codex_file",
            "git_hook",
            "git_pointer",
            "create_agents",
            "create_aws",
            "move_codex",
            "workspace"
        ],
        "{unconfined:?}"
    );

    let ws = ProtectedWorkspace::new()?;
    for (call, tool) in [
        ("a1", shell_call("a1", ["bash", "-c", attack])),
        (
            "a2",
            exec_command_call("a2", json!({"cmd": attack, "yield_time_ms": 30000})),
        ),
    ] {
        let run = run_under(ws.path(), "workspace-write", vec![Turn::new([tool])]).await?;
        let confined = results(&run.output(call));
        let allowed: Vec<&str> = confined
            .iter()
            .filter(|(_, v)| v == "ok")
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(allowed, ["workspace"], "{call}: {confined:?}");
        ws.untouched()?;
        assert_eq!(std::fs::read_to_string(ws.path().join("ok.txt"))?, "fine\n");
    }
    Ok(())
}

/// The hopper forks and lets its parent exit, over and over, so its pid keeps changing
/// (what outran a supervisor that hunts descendants through `/proc`).
fn hopper(marker: &str) -> String {
    format!(
        "(python3 -c 'import os, time\nwhile True:\n    if os.fork(): os._exit(0)\n    time.sleep(0.002)' {marker} >/dev/null 2>&1 &)"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_python3), ignore = "needs python3 on PATH")]
async fn a_command_cannot_kill_or_stop_its_supervisor_or_leave_processes_behind()
-> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(ws.path(), "boundary")?;
    let marker = format!("keel-hopper-{}", std::process::id());
    let script = format!(
        "kill -9 $PPID; echo kill=$?; kill -STOP $PPID; echo stop=$?; {} {}; echo started=yes",
        sleeper
            .background_command(100)
            .trim_end_matches("echo started"),
        hopper(&marker),
    );
    for mode in ["read-only", "workspace-write"] {
        let run = run_under(
            ws.path(),
            mode,
            vec![
                Turn::new([exec_command_call(
                    "e1",
                    json!({"cmd": script, "yield_time_ms": 30000}),
                )]),
                Turn::new([shell_call("s1", ["bash", "-c", script.as_str()])]),
            ],
        )
        .await?;
        for call in ["e1", "s1"] {
            // Had either signal reached the supervisor, the run would have ended there (killed)
            // or hung (stopped): the command went on and ended normally. (The kernel refuses
            // both with EPERM where Landlock scopes signals, and drops them silently else.)
            let raw = run.output(call);
            let output = results(&raw);
            assert_eq!(
                result(&output, "started"),
                Some("yes"),
                "{mode} {call}: {raw}"
            );
            assert!(
                raw.contains("Process exited with code 0") || raw.contains("\"exit_code\":0"),
                "{mode} {call}: {raw}"
            );
        }
        sleeper.wait_until_gone(GONE_WITHIN).await?;
        let hoppers = tokio::time::timeout(GONE_WITHIN, async {
            while !processes_whose_cmdline_contains(&marker).is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        let survivors = processes_whose_cmdline_contains(&marker);
        for pid in &survivors {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert!(
            hoppers.is_ok(),
            "{mode}: a fork-hopper survived: {survivors:?}"
        );
    }
    Ok(())
}

/// `keel sandbox linux --sandbox workspace-write -- bash -c SCRIPT` in `ws`, its stdin piped.
fn sandboxed(ws: &Path, home: &Path, script: &str) -> anyhow::Result<tokio::process::Child> {
    Ok(tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args([
            "sandbox",
            "linux",
            "--sandbox",
            "workspace-write",
            "--",
            "bash",
            "-c",
        ])
        .arg(script)
        .current_dir(ws)
        .env("KEEL_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?)
}

/// Two runs share a workspace's placeholders: the one that ends first does not take them
/// away from the one still running (which then could create the folder), and the last one
/// out removes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_does_not_unprotect_one_still_running() -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let mut long = sandboxed(
        ws.path(),
        home.path(),
        "echo ready; read line; mkdir .agents && echo created=yes || echo created=no",
    )?;
    let stdout = long.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(STARTED_WITHIN, lines.next_line()).await??;
    assert_eq!(ready.as_deref(), Some("ready"));
    assert!(
        ws.path().join(".agents").is_dir(),
        "no placeholder while running"
    );

    let short = sandboxed(ws.path(), home.path(), "true")?;
    let short = tokio::time::timeout(STARTED_WITHIN, short.wait_with_output()).await??;
    assert!(short.status.success(), "{short:?}");
    assert!(
        ws.path().join(".agents").is_dir(),
        "the short run removed a placeholder the long one still uses"
    );

    let mut stdin = long.stdin.take().context("no stdin")?;
    stdin.write_all(b"go\n").await?;
    drop(stdin);
    let created = tokio::time::timeout(STARTED_WITHIN, lines.next_line()).await??;
    assert_eq!(created.as_deref(), Some("created=no"));
    let status = tokio::time::timeout(STARTED_WITHIN, long.wait()).await??;
    assert!(status.success());
    for name in [".git", ".codex", ".agents", ".aws"] {
        assert!(!ws.path().join(name).exists(), "{name} was left behind");
    }
    Ok(())
}

/// A sandboxed command on a terminal still behaves as one: it is the terminal's foreground
/// (an interactive shell has job control, a REPL reads its input), inside its namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_terminal_session_reads_its_input_and_has_job_control() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let run = run_under(
        ws.path(),
        "workspace-write",
        vec![
            Turn::new([exec_command_call(
                "t1",
                json!({"cmd": "bash --norc -i", "tty": true, "yield_time_ms": 1000}),
            )]),
            Turn::new([write_stdin_call(
                "t2",
                1000,
                "echo pid=$$ fg=$(ps -o tpgid= -p $$ | tr -d ' ') pg=$(ps -o pgid= -p $$ | tr -d ' ')\n",
                2000,
            )]),
            Turn::new([write_stdin_call("t3", 1000, "exit\n", 5000)]),
        ],
    )
    .await?;
    let answer = run.output("t2");
    // The echoed input holds `pid=$$`; the answer is the line where it was expanded (after
    // the terminal's control sequences).
    let line = answer
        .lines()
        .filter(|line| !line.contains("$$"))
        .find_map(|line| {
            line.find("pid=")
                .map(|at| line[at..].trim_end().to_string())
        })
        .unwrap_or_default();
    let fields = results(&format!("Output:\n{}", line.replace(' ', "\n")));
    // The shell has a small pid of its namespace and leads the terminal's foreground group.
    let pid: u32 = result(&fields, "pid")
        .unwrap_or_default()
        .parse()
        .with_context(|| format!("no pid in {answer:?}"))?;
    assert!(pid < 50, "{answer}");
    assert_eq!(result(&fields, "fg"), result(&fields, "pg"), "{answer}");
    assert!(!answer.contains("no job control"), "{answer}");
    assert!(
        run.output("t3").contains("Process exited with code 0"),
        "{}",
        run.output("t3")
    );
    Ok(())
}
