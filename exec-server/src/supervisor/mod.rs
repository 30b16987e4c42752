//! The process supervisor: a small process between the server and each command, so that
//! nothing the command starts outlives it, not even a process that left its process group
//! with `setsid` or a double fork.
//!
//! Killing a command's process group misses descendants that moved to a group or session of
//! their own; once their parent exits they are re-parented to `init` and nobody owns them.
//! The supervisor marks itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`), so such
//! orphans are re-parented to it instead, and it can always find the command's whole tree
//! (every live process whose parent chain leads to it). It then:
//! - runs the command in its own process group (the group the server signals) and waits
//!   for it;
//! - when the command exits, kills every descendant still alive and exits with the
//!   command's status (`128 + N` for a command killed by signal N);
//! - on SIGTERM or SIGHUP (which the server sends to the process group), passes the signal
//!   on to the descendants the group signal did not reach;
//! - on SIGUSR1 (the server's "kill"), kills the whole tree at once;
//! - when its own parent goes away (the owner was killed), kills the whole tree.
//!
//! It is not a separate program: the `keel`, `keel-exec-server` and `keel-mcp-server`
//! binaries act as the supervisor when started with `argv[0]` = [`PROCESS_SUPERVISOR_ARG0`],
//! because their `main` begins with [`dispatch`]. A program embedding the engine can do the
//! same (then it supervises its own commands), ship a `keel` beside itself, or run commands
//! unsupervised ([`crate::ExecServerConfig::supervisor`] = `None`).

mod run;
mod signals;
mod tree;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use run::run_process_supervisor_main;
pub(crate) use signals::block_supervisor_signals;

/// The `argv[0]` that makes a Keel binary act as the supervisor.
pub const PROCESS_SUPERVISOR_ARG0: &str = "keel-process-supervisor";

/// Binaries known to act as the supervisor when started under [`PROCESS_SUPERVISOR_ARG0`].
const SUPERVISOR_BINARIES: &[&str] = &[
    "keel",
    "keel-exec-server",
    "keel-mcp-server",
    PROCESS_SUPERVISOR_ARG0,
];

/// Set by [`dispatch`]: this program acts as the supervisor when started under its name.
static THIS_PROGRAM_SUPERVISES: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Call first thing in `main`, before any thread starts. If this process was started as the
/// supervisor, runs it and returns its exit status (return it from `main`); otherwise notes
/// that this program can act as the supervisor, so its commands are supervised by it, and
/// returns `None`.
pub fn dispatch() -> Option<std::process::ExitCode> {
    if invoked_as_process_supervisor() {
        return Some(run_process_supervisor_main());
    }
    THIS_PROGRAM_SUPERVISES.store(true, std::sync::atomic::Ordering::Relaxed);
    None
}

/// Whether this process was started as the supervisor (`argv[0]` names it).
pub fn invoked_as_process_supervisor() -> bool {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|arg0| arg0.file_name().map(|name| name == PROCESS_SUPERVISOR_ARG0))
        .unwrap_or(false)
}

/// The program to start as the supervisor, given the running executable: itself when it is
/// a Keel binary that acts as one, else a `keel` beside it; `None` otherwise.
pub fn find_process_supervisor(current_exe: &Path) -> Option<PathBuf> {
    let name = current_exe.file_name().and_then(|name| name.to_str());
    if name.is_some_and(|name| SUPERVISOR_BINARIES.contains(&name)) {
        return Some(current_exe.to_path_buf());
    }
    let sibling = current_exe.with_file_name("keel");
    sibling.is_file().then_some(sibling)
}

/// The supervisor for this process: itself once its `main` called [`dispatch`], else
/// [`find_process_supervisor`].
pub fn default_process_supervisor() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    if THIS_PROGRAM_SUPERVISES.load(std::sync::atomic::Ordering::Relaxed) {
        return Some(exe);
    }
    find_process_supervisor(&exe)
}

/// A command that runs `program` (a path, not looked up) with `args` under `supervisor`, so
/// nothing it starts outlives it; for programs that start processes outside the
/// exec-server (the engine's hooks). Kill it by sending SIGUSR1 to its pid, never SIGKILL
/// (which would orphan what it started).
pub fn supervised_command(
    supervisor: &Path,
    program: &Path,
    args: &[String],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(supervisor);
    command
        .arg0(PROCESS_SUPERVISOR_ARG0)
        .args(supervisor_args(program, args, None));
    block_supervisor_signals(&mut command);
    command
}

/// The supervisor's command line for running `program` with `args` (and `arg0`, if the
/// command wants one of its own): what follows the supervisor's own `argv[0]`.
pub(crate) fn supervisor_args(
    program: &Path,
    args: &[String],
    arg0: Option<&str>,
) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len() + 6);
    // The supervisor checks that its parent is still this process when it starts: an owner
    // that died before then would otherwise leave it waiting with init as its parent.
    out.push(OsString::from("--owner"));
    out.push(OsString::from(std::process::id().to_string()));
    if let Some(arg0) = arg0 {
        out.push(OsString::from("--arg0"));
        out.push(OsString::from(arg0));
    }
    out.push(OsString::from("--"));
    out.push(program.as_os_str().to_os_string());
    out.extend(args.iter().map(OsString::from));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn keel_binaries_supervise_themselves_and_others_look_beside_them() -> std::io::Result<()> {
        assert_eq!(
            find_process_supervisor(Path::new("/opt/keel/bin/keel")),
            Some(PathBuf::from("/opt/keel/bin/keel"))
        );
        assert_eq!(
            find_process_supervisor(Path::new("/x/keel-exec-server")),
            Some(PathBuf::from("/x/keel-exec-server"))
        );
        let dir = tempfile::tempdir()?;
        let embedder = dir.path().join("my-agent");
        assert_eq!(find_process_supervisor(&embedder), None);
        std::fs::write(dir.path().join("keel"), "")?;
        assert_eq!(
            find_process_supervisor(&embedder),
            Some(dir.path().join("keel"))
        );
        Ok(())
    }

    #[test]
    fn the_command_line_keeps_the_commands_own_arg0() {
        let args = supervisor_args(
            Path::new("/bin/bash"),
            &["-lc".to_string(), "echo hi".to_string()],
            Some("-bash"),
        );
        let owner = std::process::id().to_string();
        assert_eq!(
            args,
            [
                "--owner",
                owner.as_str(),
                "--arg0",
                "-bash",
                "--",
                "/bin/bash",
                "-lc",
                "echo hi"
            ]
            .map(OsString::from)
            .to_vec()
        );
    }
}
