//! `keel sandbox linux [--sandbox MODE] [--writable-root DIR]... [--network] -- CMD...`: runs
//! one command under a sandbox policy (by default the configured one) with the current
//! directory as the workspace, exactly as the engine runs the model's commands, and exits
//! with the command's status.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use keel_core::sandbox::{LINUX_SANDBOX_ARG0, SandboxCommand};
use keel_core::{Config, ConfigOverrides, find_keel_home};
use keel_protocol::{SandboxMode, SandboxPolicy};

/// `keel sandbox`: try out the sandbox on commands of your own.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    #[command(subcommand)]
    platform: Platform,
}

#[derive(Debug, Subcommand)]
enum Platform {
    /// Run a command under the Linux sandbox (Landlock and seccomp).
    Linux(LinuxArgs),
}

#[derive(Debug, clap::Args)]
struct LinuxArgs {
    /// The policy; default: `sandbox_mode` from config.toml.
    #[arg(short = 's', long, value_enum)]
    sandbox: Option<ModeArg>,

    /// Another directory the command may write (workspace-write only); repeatable.
    #[arg(long = "writable-root", value_name = "DIR")]
    writable_roots: Vec<PathBuf>,

    /// Allow network access (workspace-write only).
    #[arg(long)]
    network: bool,

    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    ReadOnly,
    WorkspaceWrite,
}

/// Runs `keel sandbox ...` and returns the command's exit status.
pub async fn run(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    let Platform::Linux(args) = args.platform;
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let overrides = ConfigOverrides {
        sandbox_mode: args.sandbox.map(|mode| match mode {
            ModeArg::ReadOnly => SandboxMode::ReadOnly,
            ModeArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        }),
        ..ConfigOverrides::default()
    };
    let config = Config::load(&home, Vec::new(), overrides)?;
    let mut policy = config.sandbox_policy.clone();
    match &mut policy {
        SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            ..
        } => {
            writable_roots.extend(args.writable_roots.iter().map(|root| config.cwd.join(root)));
            *network_access |= args.network;
        }
        SandboxPolicy::ReadOnly | SandboxPolicy::DangerFullAccess
            if !args.writable_roots.is_empty() || args.network =>
        {
            return Err(crate::failure::usage(
                "--writable-root and --network need the workspace-write policy",
            ));
        }
        SandboxPolicy::ReadOnly | SandboxPolicy::DangerFullAccess => {}
    }
    let status = run_confined(&config, &policy, &args.command).await?;
    Ok(exit_code(status))
}

/// Runs `command` in the configuration's working directory under `policy`, as the engine runs
/// the model's commands, and returns how it ended.
pub(crate) async fn run_confined(
    config: &Config,
    policy: &SandboxPolicy,
    command: &[String],
) -> anyhow::Result<std::process::ExitStatus> {
    // This binary is the helper when started under its name; running it (rather than
    // confining this multi-threaded process) is also exactly what the engine does.
    let exe = std::env::current_exe().context("cannot find the keel executable")?;
    run_confined_with(&exe, config, policy, command).await
}

/// [`run_confined`] with a given helper executable (this binary, or a `keel-linux-sandbox`).
pub(crate) async fn run_confined_with(
    exe: &std::path::Path,
    config: &Config,
    policy: &SandboxPolicy,
    command: &[String],
) -> anyhow::Result<std::process::ExitStatus> {
    let helper = SandboxCommand::new(exe, policy, &config.cwd, config.sandbox_allow_git_writes)?;
    let argv = helper.wrap(command);
    tokio::process::Command::new(exe)
        .arg0(LINUX_SANDBOX_ARG0)
        .args(&argv[1..])
        .current_dir(&config.cwd)
        .status()
        .await
        .context("cannot start the sandbox helper")
}

/// What a sandboxed run gets beyond Landlock and seccomp, as the helper reported it
/// (`--report-isolation`), for `keel doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IsolationReport {
    /// The command had a PID namespace of its own.
    pub(crate) pid_namespace: bool,
    /// ... and a `/proc` showing only its processes.
    pub(crate) own_proc: bool,
    /// Protected folders could be mounted read-only.
    pub(crate) protected_folders: bool,
    /// The kernel enforced Landlock's signal and abstract-socket scopes.
    pub(crate) landlock_scopes: bool,
    /// Why a namespace was missing, if one was.
    pub(crate) missing: Option<String>,
}

impl IsolationReport {
    /// Parses the helper's report line.
    fn parse(line: &str) -> Option<Self> {
        let rest = line.split_once("isolation: ")?.1;
        let (fields, missing) = match rest.split_once(" (") {
            Some((fields, missing)) => (
                fields,
                Some(missing.strip_suffix(')').unwrap_or(missing).to_string()),
            ),
            None => (rest, None),
        };
        let flag = |name: &str| {
            fields
                .split_whitespace()
                .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
                == Some("yes")
        };
        Some(Self {
            pid_namespace: flag("pid-namespace"),
            own_proc: flag("own-proc"),
            protected_folders: flag("protected-folders"),
            landlock_scopes: flag("landlock-scopes"),
            missing,
        })
    }
}

/// Runs `true` under `policy` as the engine would and returns how it ended with the helper's
/// isolation report.
pub(crate) async fn probe_isolation(
    exe: &std::path::Path,
    config: &Config,
    policy: &SandboxPolicy,
) -> anyhow::Result<(std::process::ExitStatus, Option<IsolationReport>, String)> {
    let helper = SandboxCommand::new(exe, policy, &config.cwd, config.sandbox_allow_git_writes)?
        .reporting_isolation();
    let argv = helper.wrap(&["true".to_string()]);
    let output = tokio::process::Command::new(exe)
        .arg0(LINUX_SANDBOX_ARG0)
        .args(&argv[1..])
        .current_dir(&config.cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .context("cannot start the sandbox helper")?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = stderr.lines().find_map(IsolationReport::parse);
    Ok((output.status, report, stderr))
}

/// The command's status as this process's: its code, or `128 + signal` as a shell reports.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1);
    ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        platform: Platform,
    }

    #[test]
    fn isolation_reports_parse() {
        let full = "keel-linux-sandbox: isolation: pid-namespace=yes own-proc=yes \
                    protected-folders=yes landlock-scopes=no unix-sockets=own-only";
        assert_eq!(
            IsolationReport::parse(full),
            Some(IsolationReport {
                pid_namespace: true,
                own_proc: true,
                protected_folders: true,
                landlock_scopes: false,
                missing: None,
            })
        );
        let none = "keel-linux-sandbox: isolation: pid-namespace=no own-proc=no \
                    protected-folders=no landlock-scopes=yes unix-sockets=own-only (no mount \
                    or PID namespace (unshare: EPERM))";
        let parsed = IsolationReport::parse(none);
        assert_eq!(
            parsed.as_ref().and_then(|report| report.missing.as_deref()),
            Some("no mount or PID namespace (unshare: EPERM)")
        );
        assert_eq!(IsolationReport::parse("something else"), None);
    }

    #[test]
    fn parses_flags_and_the_command_after_dashes() {
        let cli = Cli::try_parse_from([
            "sandbox",
            "linux",
            "--sandbox",
            "workspace-write",
            "--writable-root",
            "/a",
            "--network",
            "--",
            "ls",
            "-l",
        ]);
        let Ok(Cli {
            platform: Platform::Linux(args),
        }) = cli
        else {
            panic!("{cli:?}");
        };
        assert!(matches!(args.sandbox, Some(ModeArg::WorkspaceWrite)));
        assert_eq!(args.writable_roots, vec![PathBuf::from("/a")]);
        assert!(args.network);
        assert_eq!(args.command, vec!["ls".to_string(), "-l".to_string()]);
    }
}
