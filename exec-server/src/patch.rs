//! Patches planned and applied on this host under a sandbox policy. keel-core runs these
//! checks for a turn whose files are local; the `patch/plan` and `patch/apply` methods run
//! them here for a turn whose environment is this server's host.

use std::path::{Path, PathBuf};

use keel_apply_patch::{
    ApplyError, ApplyPatchAction, ResolvedPath, apply_checked, parse_patch, plan_patch,
};
use keel_protocol::exec_server::{PatchApplyResponse, PatchParams, PatchPlanResponse, PatchWrite};
use keel_sandbox::ResolvedPolicy;

/// `policy` with each root also as the kernel resolves it (symlinks followed), so a
/// workspace reached through a link (a symlinked home, macOS's `/tmp`) still counts.
pub fn with_real_roots(mut policy: ResolvedPolicy) -> ResolvedPolicy {
    let widen = |roots: &mut Vec<PathBuf>| {
        let real: Vec<PathBuf> = roots
            .iter()
            .filter_map(|root| real_path(root))
            .filter(|real| !roots.contains(real))
            .collect();
        roots.extend(real);
    };
    widen(&mut policy.writable_roots);
    widen(&mut policy.read_only_subpaths);
    policy
}

/// Where `path` really is: resolved through every link, or, for a path that does not exist
/// (a missing protected folder), its parent resolved.
fn real_path(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().or_else(|| {
        let parent = std::fs::canonicalize(path.parent()?).ok()?;
        Some(parent.join(path.file_name()?))
    })
}

/// Refuses a write that leads through a symlink to somewhere outside the writable roots (or
/// into a protected path). A plain path outside the roots is left to the approval policy.
pub fn check_place(policy: &ResolvedPolicy, resolved: &ResolvedPath) -> Result<(), String> {
    let allowed = |path: &Path| {
        policy
            .writable_roots
            .iter()
            .any(|root| path.starts_with(root))
            && !policy
                .read_only_subpaths
                .iter()
                .any(|ro| path.starts_with(ro))
    };
    match &resolved.link {
        Some(hop) if !allowed(&resolved.real) => Err(format!(
            "`{}` leads through the symlink `{}` to `{}`, outside the writable roots; \
             patches never write through a link out of them",
            resolved.path.display(),
            hop.link.display(),
            hop.target.display()
        )),
        _ => Ok(()),
    }
}

/// The places the writes of `action` really reach, or why the patch is refused.
pub fn real_targets(
    policy: &ResolvedPolicy,
    action: &ApplyPatchAction,
) -> Result<Vec<PathBuf>, String> {
    let mut real = Vec::with_capacity(action.writes().len());
    for write in action.writes() {
        let resolved = write
            .resolve()
            .map_err(|err| format!("cannot resolve `{}`: {err}", write.path.display()))?;
        check_place(policy, &resolved)?;
        real.push(resolved.real);
    }
    Ok(real)
}

/// The files `action` writes, each with where it really lands: checked against `policy`
/// (a write that leaves the writable roots through a link is refused), or taken as written
/// when there is none.
pub fn planned_writes(
    policy: Option<&ResolvedPolicy>,
    action: &ApplyPatchAction,
) -> Result<Vec<PatchWrite>, String> {
    let real = match policy {
        None => action.writes().iter().map(|w| w.path.clone()).collect(),
        Some(policy) => real_targets(policy, action)?,
    };
    Ok(action
        .writes()
        .iter()
        .zip(real)
        .map(|(write, real_path)| PatchWrite {
            path: write.path.clone(),
            real_path,
            before: write.before.clone(),
            after: write.after.clone(),
        })
        .collect())
}

/// Writes `action`, checking every link again as it writes (a link planted since the plan
/// fails the patch). Blocking: run it off async threads.
pub fn apply_under(
    action: &ApplyPatchAction,
    policy: Option<&ResolvedPolicy>,
) -> Result<String, ApplyFailure> {
    apply_checked(action, |resolved| match policy {
        Some(policy) => check_place(policy, resolved),
        None => Ok(()),
    })
    .map(|summary| summary.to_string())
    .map_err(|err| match err {
        ApplyError::Refused { reason, .. } => ApplyFailure::Refused(reason),
        other => ApplyFailure::Failed(other.to_string()),
    })
}

/// Why [`apply_under`] wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyFailure {
    /// A write would leave the writable roots through a link.
    Refused(String),
    /// The files changed under the patch, or writing failed.
    Failed(String),
}

/// The policy `params` asks for, resolved on this host; `None` when writes are not checked.
fn policy_of(params: &PatchParams) -> Option<ResolvedPolicy> {
    let policy = params.sandbox_policy.as_ref()?;
    ResolvedPolicy::resolve(
        policy,
        &params.cwd,
        params.tmpdir.as_deref(),
        params.allow_git_writes,
    )
    .map(with_real_roots)
}

/// Parses and plans `params.patch` against this host's files.
fn planned(params: &PatchParams) -> Result<ApplyPatchAction, String> {
    if !params.cwd.is_absolute() {
        return Err(format!(
            "cwd `{}` is not an absolute path",
            params.cwd.display()
        ));
    }
    parse_patch(&params.patch)
        .map_err(|err| err.to_string())
        .and_then(|patch| plan_patch(&patch, &params.cwd).map_err(|err| err.to_string()))
}

/// `patch/plan`: what the patch would change, where each write lands, or why it cannot apply.
/// Blocking.
pub fn plan(params: &PatchParams) -> PatchPlanResponse {
    let action = match planned(params) {
        Ok(action) => action,
        Err(message) => return PatchPlanResponse::Invalid { message },
    };
    let policy = policy_of(params);
    let writes = match planned_writes(policy.as_ref(), &action) {
        Ok(writes) => writes,
        Err(message) => return PatchPlanResponse::Refused { message },
    };
    let (writable_roots, read_only_subpaths) = match policy {
        Some(policy) => (Some(policy.writable_roots), policy.read_only_subpaths),
        None => (None, Vec::new()),
    };
    PatchPlanResponse::Planned {
        changes: action.into_changes(),
        writes,
        writable_roots,
        read_only_subpaths,
    }
}

/// `patch/apply`: plans the patch again against this host's files and writes it, checking
/// every write against the policy; all or nothing. Blocking.
pub fn apply(params: &PatchParams) -> PatchApplyResponse {
    let action = match planned(params) {
        Ok(action) => action,
        Err(message) => return PatchApplyResponse::Failed { message },
    };
    if let Some(expected) = &params.expected_before {
        for write in action.writes() {
            let approved = expected.get(&write.path);
            if approved.is_none_or(|before| before != &write.before) {
                return PatchApplyResponse::Failed {
                    message: format!(
                        "`{}` changed after the patch was checked; nothing was written",
                        write.path.display()
                    ),
                };
            }
        }
    }
    let policy = policy_of(params);
    if let Some(policy) = &policy
        && let Err(message) = real_targets(policy, &action)
    {
        return PatchApplyResponse::Refused { message };
    }
    match apply_under(&action, policy.as_ref()) {
        Ok(summary) => PatchApplyResponse::Applied { summary },
        Err(ApplyFailure::Refused(message)) => PatchApplyResponse::Refused { message },
        Err(ApplyFailure::Failed(message)) => PatchApplyResponse::Failed { message },
    }
}
