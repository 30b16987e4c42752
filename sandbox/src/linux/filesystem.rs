//! Landlock: read and execute everywhere, write only beneath the writable roots and a few
//! data-less devices; where the kernel has them (ABI 6, Linux 6.12), the scopes that keep a
//! command from signalling processes outside its sandbox and from connecting to abstract
//! unix sockets made outside it.

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::policy::WRITABLE_DEVICES;
use crate::{ResolvedPolicy, SandboxError};

/// The Landlock ABI whose access rights the policy handles. ABI 3 (Linux 6.2) is the first
/// that controls truncation; with anything older, `truncate(2)` would bypass "write nowhere".
const REQUIRED_ABI: ABI = ABI::V3;

fn handled_ruleset() -> Result<RulesetCreated, SandboxError> {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(REQUIRED_ABI))
        .and_then(Ruleset::create)
        .map_err(|err| SandboxError::LandlockUnavailable(err.to_string()))
}

pub(super) fn probe() -> Result<(), SandboxError> {
    handled_ruleset().map(drop)
}

/// The Landlock scopes a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Scopes {
    /// No signals to processes outside the sandbox.
    pub(super) signals: bool,
    /// No connections to abstract unix sockets made outside the sandbox.
    pub(super) abstract_sockets: bool,
}

/// Confines this process; returns whether the kernel enforces the scopes asked for (an older
/// kernel enforces the file system rules only).
pub(super) fn restrict(policy: &ResolvedPolicy, scopes: Scopes) -> Result<bool, SandboxError> {
    let landlock = |err: landlock::RulesetError| SandboxError::Landlock(err.to_string());
    let read: BitFlags<AccessFs> = AccessFs::from_read(REQUIRED_ABI);
    let all: BitFlags<AccessFs> = AccessFs::from_all(REQUIRED_ABI);
    let device: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;

    let mut wanted: BitFlags<Scope> = BitFlags::EMPTY;
    if scopes.signals {
        wanted |= Scope::Signal;
    }
    if scopes.abstract_sockets {
        wanted |= Scope::AbstractUnixSocket;
    }
    let mut base = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(REQUIRED_ABI))
        .map_err(|err| SandboxError::LandlockUnavailable(err.to_string()))?;
    if !wanted.is_empty() {
        base = base
            .set_compatibility(CompatLevel::BestEffort)
            .scope(wanted)
            .map_err(landlock)?;
    }
    let mut ruleset = base
        .create()
        .map_err(|err| SandboxError::LandlockUnavailable(err.to_string()))?
        .add_rule(PathBeneath::new(open("/")?, read))
        .map_err(landlock)?;
    for device_path in WRITABLE_DEVICES {
        // A missing device (a minimal container) is simply not writable.
        if let Ok(fd) = PathFd::new(device_path) {
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, device))
                .map_err(landlock)?;
        }
    }
    for root in &policy.writable_roots {
        // A root that does not exist cannot be written into: its parent is not writable.
        if root.exists() {
            ruleset = ruleset
                .add_rule(PathBeneath::new(open(root)?, all))
                .map_err(landlock)?;
        }
    }
    let status = ruleset.restrict_self().map_err(landlock)?;
    let scoped = matches!(
        status.landlock,
        LandlockStatus::Available { effective_abi, .. } if effective_abi >= ABI::V6
    );
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(true),
        // The file system rules were a hard requirement: only the scopes can be missing.
        RulesetStatus::PartiallyEnforced if !wanted.is_empty() => Ok(scoped),
        other => Err(SandboxError::LandlockUnavailable(format!(
            "the ruleset was {other:?}"
        ))),
    }
}

fn open(path: impl AsRef<std::path::Path>) -> Result<PathFd, SandboxError> {
    let path = path.as_ref();
    PathFd::new(path)
        .map_err(|err| SandboxError::Landlock(format!("cannot open {}: {err}", path.display())))
}
