//! Linux enforcement, run by the helper on itself just before it `exec`s the command:
//! a read-only bind mount over each protected `.git` (in a private mount namespace), then
//! Landlock for the filesystem, then a seccomp filter for the network. All three are inherited
//! across `exec` and `fork`, and none can be lifted by the command: Landlock forbids mount
//! changes to a confined process, and `no_new_privs` keeps set-uid programs from gaining
//! privileges.

mod filesystem;
mod mounts;
mod network;

use super::{ResolvedPolicy, SandboxError};

/// Confines the calling (single-threaded) process to `policy`.
pub(super) fn confine_current_process(policy: &ResolvedPolicy) -> Result<(), SandboxError> {
    if !policy.read_only_subpaths.is_empty() {
        mounts::bind_read_only(&policy.read_only_subpaths)?;
    }
    filesystem::restrict(policy)?;
    if !policy.network {
        network::deny_sockets()?;
    }
    Ok(())
}

/// Checks that the kernel supports the Landlock ABI the policy needs, without restricting
/// this process (a ruleset is created and dropped, never applied).
pub(super) fn probe_landlock() -> Result<(), SandboxError> {
    filesystem::probe()
}
