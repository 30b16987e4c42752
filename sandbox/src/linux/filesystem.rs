//! Landlock: read and execute everywhere, write only beneath the writable roots and a few
//! data-less devices.

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
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

pub(super) fn restrict(policy: &ResolvedPolicy) -> Result<(), SandboxError> {
    let landlock = |err: landlock::RulesetError| SandboxError::Landlock(err.to_string());
    let read: BitFlags<AccessFs> = AccessFs::from_read(REQUIRED_ABI);
    let all: BitFlags<AccessFs> = AccessFs::from_all(REQUIRED_ABI);
    let device: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;

    let mut ruleset = handled_ruleset()?
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
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
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
