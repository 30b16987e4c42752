//! The helper's command line: built by the engine ([`SandboxCommand`]), parsed and carried out
//! by the helper ([`run_linux_sandbox_main`]).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use keel_protocol::SandboxPolicy;

use crate::run_options::RunOptions;
use crate::setup_failure::{SETUP_FAILED_EXIT, report_setup_failure};
use crate::{LINUX_SANDBOX_ARG0, ResolvedPolicy, SandboxError};

const POLICY_FLAG: &str = "--sandbox-policy";
const POLICY_CWD_FLAG: &str = "--sandbox-policy-cwd";
const ALLOW_GIT_WRITES_FLAG: &str = "--allow-git-writes";
const USER_COMMAND_FLAG: &str = "--user-command";
const REPORT_FLAG: &str = "--report-isolation";

/// How to start a command under the sandbox helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxCommand {
    /// The helper executable; start it with `argv[0]` = [`LINUX_SANDBOX_ARG0`].
    pub program: PathBuf,
    /// The helper's arguments, up to and including `--`; the command's argv follows.
    pub args: Vec<String>,
}

impl SandboxCommand {
    /// The helper invocation enforcing `policy` for a conversation whose workspace is
    /// `policy_cwd`.
    pub fn new(
        program: &Path,
        policy: &SandboxPolicy,
        policy_cwd: &Path,
        allow_git_writes: bool,
    ) -> Result<Self, SandboxError> {
        let policy_json = serde_json::to_string(policy)
            .map_err(|err| SandboxError::InvalidArguments(err.to_string()))?;
        let cwd = policy_cwd.to_str().ok_or_else(|| {
            SandboxError::InvalidArguments(format!(
                "the workspace path {} is not UTF-8",
                policy_cwd.display()
            ))
        })?;
        let mut args = vec![
            POLICY_FLAG.to_string(),
            policy_json,
            POLICY_CWD_FLAG.to_string(),
            cwd.to_string(),
        ];
        if allow_git_writes {
            args.push(ALLOW_GIT_WRITES_FLAG.to_string());
        }
        args.push("--".to_string());
        Ok(Self {
            program: program.to_path_buf(),
            args,
        })
    }

    /// The same sandbox for a command the user typed (`!cmd`): its file system and IP network
    /// policy hold, but it sees the user's processes and reaches local sockets (`docker`,
    /// `ssh-add`), as the user's own terminal would.
    pub fn for_user_command(self) -> Self {
        self.with_flag(USER_COMMAND_FLAG)
    }

    /// The same sandbox, with the helper saying on stderr, before the command starts, what
    /// isolation it got (`keel doctor`).
    pub fn reporting_isolation(self) -> Self {
        self.with_flag(REPORT_FLAG)
    }

    fn with_flag(mut self, flag: &str) -> Self {
        // The arguments end with `--`; flags go before it.
        let at = self.args.len().saturating_sub(1);
        self.args.insert(at, flag.to_string());
        self
    }

    /// The full argv (the helper first) that runs `argv` under the sandbox.
    pub fn wrap(&self, argv: &[String]) -> Vec<String> {
        let mut full = Vec::with_capacity(1 + self.args.len() + argv.len());
        full.push(self.program.to_string_lossy().into_owned());
        full.extend(self.args.iter().cloned());
        full.extend(argv.iter().cloned());
        full
    }
}

/// Whether this process was started as the sandbox helper (`argv[0]` names it).
pub fn invoked_as_sandbox_helper() -> bool {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|arg0| arg0.file_name().map(|name| name == LINUX_SANDBOX_ARG0))
        .unwrap_or(false)
}

/// The helper's `main`: confines this process as its arguments say, then replaces it with
/// the command. Returns only on failure: 121 when confinement failed (the command did not
/// start), 127 when the command was not found, 126 when it could not be executed.
///
/// Call it before starting any thread: namespaces and Landlock apply to the calling thread.
pub fn run_linux_sandbox_main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let (resolved, options, argv) = match parse_and_resolve(args) {
        Ok(parsed) => parsed,
        Err(err) => return setup_failed(&err),
    };
    let Some(resolved) = resolved else {
        return exec_unconfined(&argv);
    };
    match run_confined(&resolved, options, &argv) {
        Ok(code) => ExitCode::from(code),
        Err(err) => setup_failed(&err),
    }
}

/// `danger-full-access`: the command replaces the helper as it is.
fn exec_unconfined(argv: &[OsString]) -> ExitCode {
    let Some((program, rest)) = argv.split_first() else {
        return setup_failed(&SandboxError::InvalidArguments("no command given".into()));
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "{LINUX_SANDBOX_ARG0}: cannot run `{}`: {err}",
        program.to_string_lossy()
    );
    if err.kind() == std::io::ErrorKind::NotFound {
        ExitCode::from(127)
    } else {
        ExitCode::from(126)
    }
}

fn setup_failed(err: &SandboxError) -> ExitCode {
    report_setup_failure(err);
    ExitCode::from(SETUP_FAILED_EXIT)
}

#[cfg(target_os = "linux")]
fn run_confined(
    resolved: &ResolvedPolicy,
    options: RunOptions,
    argv: &[OsString],
) -> Result<u8, SandboxError> {
    crate::linux::run(resolved, options, argv)
}

#[cfg(not(target_os = "linux"))]
fn run_confined(
    _resolved: &ResolvedPolicy,
    _options: RunOptions,
    _argv: &[OsString],
) -> Result<u8, SandboxError> {
    Err(SandboxError::UnsupportedPlatform)
}

/// Parses the helper's arguments and resolves the policy against this process's `$TMPDIR`
/// (the command's); `None` means no confinement (`danger-full-access`).
type Parsed = (Option<ResolvedPolicy>, RunOptions, Vec<OsString>);

fn parse_and_resolve(args: Vec<OsString>) -> Result<Parsed, SandboxError> {
    let invalid = |message: String| SandboxError::InvalidArguments(message);
    let mut policy: Option<SandboxPolicy> = None;
    let mut policy_cwd: Option<PathBuf> = None;
    let mut allow_git_writes = false;
    let mut options = RunOptions {
        user_command: false,
        report: false,
    };
    let mut args = args.into_iter();
    loop {
        let Some(arg) = args.next() else {
            return Err(invalid("expected `-- COMMAND...`".into()));
        };
        match arg.to_str() {
            Some("--") => break,
            Some(POLICY_FLAG) => {
                let json = args
                    .next()
                    .ok_or_else(|| invalid(format!("{POLICY_FLAG} needs a value")))?;
                let json = json
                    .to_str()
                    .ok_or_else(|| invalid(format!("{POLICY_FLAG} is not UTF-8")))?;
                policy = Some(
                    serde_json::from_str(json)
                        .map_err(|err| invalid(format!("{POLICY_FLAG}: {err}")))?,
                );
            }
            Some(POLICY_CWD_FLAG) => {
                let cwd = args
                    .next()
                    .ok_or_else(|| invalid(format!("{POLICY_CWD_FLAG} needs a value")))?;
                policy_cwd = Some(PathBuf::from(cwd));
            }
            Some(ALLOW_GIT_WRITES_FLAG) => allow_git_writes = true,
            Some(USER_COMMAND_FLAG) => options.user_command = true,
            Some(REPORT_FLAG) => options.report = true,
            _ => {
                return Err(invalid(format!(
                    "unexpected argument `{}`",
                    arg.to_string_lossy()
                )));
            }
        }
    }
    let policy = policy.ok_or_else(|| invalid(format!("{POLICY_FLAG} is required")))?;
    let cwd = match policy_cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir().map_err(|err| invalid(format!("no cwd: {err}")))?,
    };
    let tmpdir = std::env::var_os("TMPDIR")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let resolved = ResolvedPolicy::resolve(&policy, &cwd, tmpdir.as_deref(), allow_git_writes);
    Ok((resolved, options, args.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn round_trip() -> Result<(), SandboxError> {
        let command = SandboxCommand::new(
            Path::new("/bin/helper"),
            &SandboxPolicy::ReadOnly,
            Path::new("/w"),
            true,
        )?;
        let argv = command.wrap(&["echo".to_string(), "--".to_string()]);
        assert_eq!(argv[0], "/bin/helper");
        let (resolved, options, rest) =
            parse_and_resolve(argv[1..].iter().map(OsString::from).collect())?;
        assert_eq!(
            options,
            RunOptions {
                user_command: false,
                report: false
            }
        );
        assert_eq!(
            resolved,
            Some(ResolvedPolicy {
                writable_roots: Vec::new(),
                read_only_subpaths: Vec::new(),
                network: false,
            })
        );
        assert_eq!(rest, vec![OsString::from("echo"), OsString::from("--")]);
        Ok(())
    }
}
