//! The last step before the command: this process confines itself (Landlock, then seccomp),
//! says what isolation it got when asked, and becomes the command.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use super::filesystem::{self, Scopes};
use super::namespaces::Entered;
use super::network;
use crate::run_options::RunOptions;
use crate::{LINUX_SANDBOX_ARG0, ResolvedPolicy, SandboxError};

/// What the run got, for `--report-isolation` (`keel doctor`).
#[derive(Debug, Clone, Default)]
pub(super) struct Report {
    pub(super) namespaces: Entered,
    pub(super) own_proc: bool,
    pub(super) scoped: bool,
}

/// Confines this process (Landlock, then seccomp) and replaces it with the command; returns
/// only on failure: `Ok` with 127 (not found) or 126 (not executable), or the setup error.
pub(super) fn exec_confined(
    policy: &ResolvedPolicy,
    options: RunOptions,
    argv: &[OsString],
    mut report: Report,
) -> Result<u8, SandboxError> {
    let isolate = !options.user_command;
    let scopes = Scopes {
        signals: isolate,
        abstract_sockets: isolate && !policy.network,
    };
    report.scoped = filesystem::restrict(policy, scopes)?;
    if !policy.network {
        network::deny_sockets(!isolate)?;
    }
    if options.report {
        report_isolation(&report, options.user_command || policy.network);
    }
    let Some((program, rest)) = argv.split_first() else {
        return Err(SandboxError::InvalidArguments("no command given".into()));
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "{LINUX_SANDBOX_ARG0}: cannot run `{}`: {err}",
        program.to_string_lossy()
    );
    Ok(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// One line on stderr saying what isolation the command gets.
fn report_isolation(report: &Report, sockets_reachable: bool) {
    let yes_no = |value: bool| if value { "yes" } else { "no" };
    let mut line = format!(
        "{LINUX_SANDBOX_ARG0}: isolation: pid-namespace={} own-proc={} protected-folders={} \
         landlock-scopes={} unix-sockets={}",
        yes_no(report.namespaces.pid),
        yes_no(report.own_proc),
        yes_no(report.namespaces.mount),
        yes_no(report.scoped),
        if sockets_reachable {
            "reachable"
        } else {
            "own-only"
        },
    );
    if let Some(missing) = &report.namespaces.missing {
        line.push_str(&format!(" ({missing})"));
    }
    eprintln!("{line}");
}
