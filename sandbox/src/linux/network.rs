//! seccomp: no sockets but `AF_UNIX` ones, and no io_uring (which can create sockets without
//! the `socket(2)` system call). For a model's command, `AF_UNIX` sockets serve only the
//! process's own socketpairs: `connect(2)`, `sendto(2)` to an address and `sendmmsg(2)` fail,
//! so no local daemon is reachable (Keel's own control socket, Docker, ssh-agent).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::SandboxError;

/// System calls made through the x32 ABI carry this bit; the filter's architecture check
/// does not tell them apart from x86_64 ones, so each rule is repeated with it.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Installs the filter; `reach_unix_sockets` keeps `connect` and `sendto` to an address
/// working (the user's own `!cmd`).
pub(super) fn deny_sockets(reach_unix_sockets: bool) -> Result<(), SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp)?;
    let not_unix = || -> Result<Vec<SeccompRule>, SandboxError> {
        let domain_is_not_unix =
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc_af_unix())
                .map_err(seccomp)?;
        Ok(vec![
            SeccompRule::new(vec![domain_is_not_unix]).map_err(seccomp)?,
        ])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for syscall in with_x32([nix::libc::SYS_socket, nix::libc::SYS_socketpair]) {
        rules.insert(syscall, not_unix()?);
    }
    if !reach_unix_sockets {
        for syscall in with_x32([nix::libc::SYS_connect, nix::libc::SYS_sendmmsg]) {
            rules.insert(syscall, Vec::new());
        }
        // `send(2)` on a socketpair is `sendto` with no address: that keeps working.
        let to_an_address = SeccompCondition::new(4, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)
            .map_err(seccomp)?;
        for syscall in with_x32([nix::libc::SYS_sendto]) {
            rules.insert(
                syscall,
                vec![SeccompRule::new(vec![to_an_address.clone()]).map_err(seccomp)?],
            );
        }
    }
    for syscall in with_x32([
        nix::libc::SYS_io_uring_setup,
        nix::libc::SYS_io_uring_enter,
        nix::libc::SYS_io_uring_register,
    ]) {
        // An empty rule list matches unconditionally.
        rules.insert(syscall, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(nix::libc::EPERM as u32),
        arch,
    )
    .map_err(seccomp)?;
    let program = BpfProgram::try_from(filter).map_err(seccomp)?;
    seccompiler::apply_filter(&program).map_err(seccomp)
}

fn seccomp(err: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(err.to_string())
}

fn libc_af_unix() -> u64 {
    nix::libc::AF_UNIX as u64
}

#[cfg(target_arch = "x86_64")]
fn with_x32<const N: usize>(syscalls: [i64; N]) -> Vec<i64> {
    syscalls
        .iter()
        .flat_map(|&nr| [nr, nr | X32_SYSCALL_BIT])
        .collect()
}

#[cfg(not(target_arch = "x86_64"))]
fn with_x32<const N: usize>(syscalls: [i64; N]) -> Vec<i64> {
    syscalls.to_vec()
}
