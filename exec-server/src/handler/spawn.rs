//! Starting a process: on pipes (stdin closed) or on a pseudo-terminal, always as the leader
//! of a new process group so that signalling the group reaches its grandchildren too.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use keel_protocol::exec_server::ExecParams;
use portable_pty::{MasterPty, PtySize};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use crate::error::{ExecServerError, Result};
use crate::pipe::enlarge_pipe;
use crate::supervisor::{PROCESS_SUPERVISOR_ARG0, block_supervisor_signals, supervisor_args};

/// Window size of a new PTY, before any `command/exec/resize`.
const INITIAL_PTY_SIZE: PtySize = PtySize {
    rows: 24,
    cols: 80,
    pixel_width: 0,
    pixel_height: 0,
};

/// A started process and the ends of its I/O the server keeps.
pub(crate) struct Spawned {
    /// The child (the supervisor, when there is one); its pid is also its process group id.
    pub(crate) child: Child,
    /// Process id and process group id of the child.
    pub(crate) pid: i32,
    /// Whether the child is the supervisor running the process.
    pub(crate) supervised: bool,
    /// Output and input ends.
    pub(crate) io: SpawnedIo,
}

/// The server's ends of a child's I/O.
pub(crate) enum SpawnedIo {
    /// Pipe-backed: stdout and stderr, stdin is `/dev/null`.
    Pipes {
        /// The child's stdout.
        stdout: ChildStdout,
        /// The child's stderr.
        stderr: ChildStderr,
    },
    /// PTY-backed: the master side, split into a blocking reader and writer.
    Pty {
        /// Kept for resizing; dropping it closes the master.
        master: Box<dyn MasterPty + Send>,
        /// Reads everything the child writes to the terminal.
        reader: Box<dyn Read + Send>,
        /// Feeds the child's terminal input.
        writer: Box<dyn Write + Send>,
    },
}

/// Checks the params and starts the process, under `supervisor` when given.
pub(crate) fn spawn(params: &ExecParams, supervisor: Option<&Path>) -> Result<Spawned> {
    let Some(program) = params.argv.first() else {
        return Err(ExecServerError::InvalidParams(
            "`argv` must not be empty".to_string(),
        ));
    };
    if !params.cwd.is_absolute() {
        return Err(ExecServerError::InvalidParams(format!(
            "`cwd` must be an absolute path, got `{}`",
            params.cwd.display()
        )));
    }
    let spawn_error = |source| ExecServerError::Spawn {
        program: program.clone(),
        cwd: params.cwd.clone(),
        source,
    };
    if !params.cwd.is_dir() {
        return Err(spawn_error(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the working directory does not exist or is not a directory",
        )));
    }

    let mut command = match supervisor {
        Some(supervisor) => {
            // Found here, so a missing program is an error of this request, as without a
            // supervisor, not an exit status of 127.
            let resolved =
                find_program(program, &params.cwd, params.env.get("PATH")).map_err(spawn_error)?;
            let arg0 = params.arg0.as_deref().unwrap_or(program);
            let mut command = Command::new(supervisor);
            command.arg0(PROCESS_SUPERVISOR_ARG0).args(supervisor_args(
                &resolved,
                &params.argv[1..],
                Some(arg0),
            ));
            block_supervisor_signals(&mut command);
            command
        }
        None => {
            let mut command = Command::new(program);
            command.args(&params.argv[1..]);
            if let Some(arg0) = &params.arg0 {
                command.arg0(arg0);
            }
            command
        }
    };
    command
        .current_dir(&params.cwd)
        .env_clear()
        .envs(&params.env)
        // A supervisor is asked to kill (it then takes the whole tree down), never killed:
        // killing it would orphan whatever the process left.
        .kill_on_drop(supervisor.is_none());
    let supervised = supervisor.is_some();

    if params.tty {
        spawn_on_pty(command, supervised, spawn_error)
    } else {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().map_err(spawn_error)?;
        let pid = child_pid(&child)?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ExecServerError::Protocol(
                "spawned child has no stdout or stderr pipe".to_string(),
            ));
        };
        enlarge_pipe(&stdout, "a child's stdout");
        enlarge_pipe(&stderr, "a child's stderr");
        Ok(Spawned {
            child,
            pid,
            supervised,
            io: SpawnedIo::Pipes { stdout, stderr },
        })
    }
}

/// Where `program` is, looked up as the process would look it up: a name with a `/` relative
/// to `cwd`, any other name on `path` (the process's `PATH`, else `/bin:/usr/bin`).
fn find_program(program: &str, cwd: &Path, path: Option<&String>) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |candidate: &Path| -> std::io::Result<()> {
        let metadata = std::fs::metadata(candidate)?;
        if metadata.is_file() && metadata.permissions().mode() & 0o111 != 0 {
            Ok(())
        } else {
            Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        }
    };
    if program.contains('/') {
        let candidate = cwd.join(program);
        runnable(&candidate)?;
        return Ok(candidate);
    }
    let mut denied = false;
    for dir in path.map_or("/bin:/usr/bin", String::as_str).split(':') {
        let candidate = cwd.join(dir).join(program);
        match runnable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => denied = true,
            Err(_) => {}
        }
    }
    Err(std::io::Error::from(if denied {
        std::io::ErrorKind::PermissionDenied
    } else {
        std::io::ErrorKind::NotFound
    }))
}

fn spawn_on_pty(
    mut command: Command,
    supervised: bool,
    spawn_error: impl FnOnce(std::io::Error) -> ExecServerError,
) -> Result<Spawned> {
    let pty_error = |context| {
        move |err: anyhow::Error| ExecServerError::Pty {
            context,
            message: format!("{err:#}"),
        }
    };
    let pair = portable_pty::native_pty_system()
        .openpty(INITIAL_PTY_SIZE)
        .map_err(pty_error("opening a pseudo-terminal"))?;
    let tty_name = pair.master.tty_name().ok_or_else(|| ExecServerError::Pty {
        context: "naming the terminal",
        message: "the pseudo-terminal has no device path".to_string(),
    })?;
    // Our own handle on the terminal (O_NOCTTY: it must not become the *server's* controlling
    // terminal), so the child can be spawned with tokio and its exit status read directly.
    let terminal = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOCTTY)
        .open(&tty_name)
        .map_err(ExecServerError::io("opening the terminal side of the pty"))?;
    let dup = |file: &std::fs::File| {
        file.try_clone()
            .map(Stdio::from)
            .map_err(ExecServerError::io("duplicating the terminal descriptor"))
    };
    command
        .stdin(dup(&terminal)?)
        .stdout(dup(&terminal)?)
        .stderr(Stdio::from(terminal));
    set_controlling_terminal(&mut command);
    let child = command.spawn().map_err(spawn_error)?;
    // Close every server-side copy of the terminal side now: end-of-file on the master comes
    // only once all of them are gone.
    drop(command);
    drop(pair.slave);
    let pid = child_pid(&child)?;
    let reader = pair
        .master
        .try_clone_reader()
        .map_err(pty_error("cloning the pty reader"))?;
    let writer = pair
        .master
        .take_writer()
        .map_err(pty_error("taking the pty writer"))?;
    Ok(Spawned {
        child,
        pid,
        supervised,
        io: SpawnedIo::Pty {
            master: pair.master,
            reader,
            writer,
        },
    })
}

/// Makes the child a session leader (hence a process group leader) whose controlling
/// terminal is its stdin, so job control and SIGWINCH on resize work as in a real terminal.
#[expect(
    unsafe_code,
    reason = "pre_exec is the only way to run setsid and TIOCSCTTY between fork and exec; the \
              closure calls only async-signal-safe syscalls and allocates nothing"
)]
fn set_controlling_terminal(command: &mut Command) {
    // SAFETY: runs in the forked child before exec; setsid and ioctl are async-signal-safe
    // and the closure touches no memory shared with the parent.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if nix::libc::ioctl(0, nix::libc::TIOCSCTTY as _, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn child_pid(child: &Child) -> Result<i32> {
    child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| ExecServerError::Protocol("spawned child has no pid".to_string()))
}
