//! The namespaces a sandboxed command runs in: a private mount namespace (for the read-only
//! protected folders and a `/proc` of its own) and a PID namespace (so it sees and can signal
//! only its own processes, and all of them die with the run). As root the helper unshares
//! them directly; otherwise inside a new user namespace that maps the user to itself.

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{getgid, getuid};

/// The namespaces the helper entered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Entered {
    /// A private mount namespace: protected folders can be mounted read-only.
    pub(super) mount: bool,
    /// A PID namespace for the helper's children.
    pub(super) pid: bool,
    /// Why the namespaces wanted could not all be had (for `--report-isolation`).
    pub(super) missing: Option<String>,
}

/// Enters a private mount namespace and, when `pid`, a PID namespace for the children to
/// come; as much of that as the system allows (see [`Entered`]).
pub(super) fn enter(pid: bool) -> Entered {
    let mut wanted = CloneFlags::CLONE_NEWNS;
    if pid {
        wanted |= CloneFlags::CLONE_NEWPID;
    }
    let mut attempts = vec![wanted];
    if pid {
        attempts.push(CloneFlags::CLONE_NEWNS);
    }
    let mut first_error: Option<String> = None;
    for flags in attempts {
        let outcome = unshare(flags)
            .map_err(|err| format!("unshare: {err}"))
            .or_else(|direct| {
                enter_user_namespace(flags).map_err(|user| format!("{direct}; {user}"))
            });
        match outcome {
            Ok(()) => {
                let pid_entered = flags.contains(CloneFlags::CLONE_NEWPID);
                let missing = (pid && !pid_entered).then(|| {
                    format!(
                        "no PID namespace ({})",
                        first_error.clone().unwrap_or_default()
                    )
                });
                return match make_mounts_private() {
                    Ok(()) => Entered {
                        mount: true,
                        pid: pid_entered,
                        missing,
                    },
                    Err(err) => Entered {
                        mount: false,
                        pid: pid_entered,
                        missing: Some(format!("cannot make mounts private: {err}")),
                    },
                };
            }
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    Entered {
        mount: false,
        pid: false,
        missing: Some(format!(
            "no mount or PID namespace ({})",
            first_error.unwrap_or_default()
        )),
    }
}

/// Enters a new user namespace together with `flags`, mapping this process's uid and gid to
/// themselves so file ownership looks the same inside.
fn enter_user_namespace(flags: CloneFlags) -> Result<(), String> {
    let (uid, gid) = (getuid(), getgid());
    unshare(CloneFlags::CLONE_NEWUSER | flags)
        .map_err(|err| format!("unshare with a user namespace: {err}"))?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|err| format!("{file}: {err}"))
    };
    write("/proc/self/setgroups", "deny".to_string())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

/// Without this, mounts made later would propagate back to the parent namespace when `/` is
/// a shared mount (the systemd default).
fn make_mounts_private() -> nix::Result<()> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
}
