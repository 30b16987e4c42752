//! The `apply_patch` tool: parse, check against the disk, approve, apply atomically, and
//! report `patch_apply_*` and `turn_diff` events.

use std::path::{Path, PathBuf};

use keel_protocol::{
    ApplyPatchApprovalRequestEvent, CallId, EventMsg, PatchApplyBeginEvent, PatchApplyEndEvent,
    ReviewDecision, TurnDiffEvent,
};

use futures::future::BoxFuture;

use super::{BuiltinCall, DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::apply_patch::{
    ApplyError, ApplyPatchAction, ResolvedPath, apply_checked, parse_patch, plan_patch,
};
use crate::approvals::{ExecDecision, decide_patch};
use crate::sandbox::ResolvedPolicy;
use crate::turn_context::TurnStop;

/// `apply_patch`: a freeform tool for models trained on it, a function tool otherwise; a
/// patch sent through `shell` or `exec_command` takes the same path.
pub(crate) struct ApplyPatchTool {
    pub freeform: bool,
}

#[derive(serde::Deserialize)]
struct PatchArgs {
    input: String,
}

impl DynTool for ApplyPatchTool {
    fn name(&self) -> &str {
        crate::apply_patch::APPLY_PATCH_TOOL_NAME
    }

    fn spec(&self) -> serde_json::Value {
        if self.freeform {
            crate::apply_patch::apply_patch_freeform_tool()
        } else {
            crate::apply_patch::apply_patch_function_tool()
        }
    }

    fn approval(&self) -> ToolApproval {
        ToolApproval::PerCall
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let call = ctx.builtin();
            let call_id = ctx.call_id().to_string();
            let cwd = call.context.cwd.clone();
            let patch = match &input {
                ToolInput::Freeform { input } => input.clone(),
                ToolInput::Function { arguments } => {
                    match serde_json::from_str::<PatchArgs>(arguments) {
                        Ok(args) => args.input,
                        Err(err) => {
                            return Ok(format!("failed to parse apply_patch arguments: {err}"));
                        }
                    }
                }
            };
            Ok(call.apply_patch(&call_id, &patch, &cwd).await?)
        })
    }
}

impl BuiltinCall<'_> {
    /// Applies a patch for the model and returns the text it sees: a summary of the files
    /// changed, or an error naming the file and hunk that failed (nothing is changed then).
    pub(super) async fn apply_patch(
        &self,
        call_id: &str,
        patch_text: &str,
        cwd: &Path,
    ) -> Result<String, TurnStop> {
        let call_id = CallId::new(call_id);
        let action = match parse_patch(patch_text)
            .map_err(|e| e.to_string())
            .and_then(|patch| plan_patch(&patch, cwd).map_err(|e| e.to_string()))
        {
            Ok(action) => action,
            Err(message) => {
                return Ok(format!("apply_patch verification failed: {message}"));
            }
        };
        let paths: Vec<PathBuf> = action.writes().iter().map(|w| w.path.clone()).collect();
        let resolved = ResolvedPolicy::resolve(
            &self.context.sandbox_policy,
            &self.context.cwd,
            self.context.shell_env.get("TMPDIR").map(Path::new),
            self.context.sandbox_allow_git_writes,
        );
        // Where each write really lands: a link planted in the workspace never carries a write
        // out of the writable roots, whatever the approval policy.
        // Compared against the roots as written and as the kernel resolves them, so a
        // workspace reached through a link (a symlinked home, macOS's `/tmp`) still counts.
        let resolved = resolved.map(with_real_roots);
        let real_paths = match resolved.as_ref() {
            None => paths.clone(),
            Some(policy) => match real_targets(policy, &action) {
                Ok(real) => real,
                Err(refusal) => return Ok(format!("patch rejected: {refusal}")),
            },
        };
        let decision = decide_patch(self.context.approval_policy, resolved.as_ref(), &real_paths);
        let auto_approved = match decision {
            ExecDecision::Run => true,
            ExecDecision::Reject(reason) => return Ok(format!("patch rejected: {reason}")),
            ExecDecision::Ask(reason) => {
                let reason = with_link_targets(reason, &paths, &real_paths);
                let event = EventMsg::ApplyPatchApprovalRequest(ApplyPatchApprovalRequestEvent {
                    call_id: call_id.clone(),
                    turn_id: self.ids.turn_id.clone(),
                    changes: action.changes().clone(),
                    reason,
                    grant_root: None,
                });
                match self.tool.wait_for_decision(&call_id, event).await? {
                    ReviewDecision::Approved | ReviewDecision::ApprovedForSession => false,
                    ReviewDecision::Denied => {
                        return Ok("patch rejected by user".to_string());
                    }
                    ReviewDecision::Abort => return Err(TurnStop::Interrupted),
                }
            }
        };
        let changes = action.changes().clone();
        self.session
            .send_event(
                &self.ids.sub_id,
                EventMsg::PatchApplyBegin(PatchApplyBeginEvent {
                    call_id: call_id.clone(),
                    turn_id: self.ids.turn_id.clone(),
                    auto_approved,
                    changes: changes.clone(),
                }),
            )
            .await;
        for write in action.writes() {
            self.tool
                .diff()
                .note_baseline(&write.path, write.before.as_deref());
        }
        let result = apply_blocking(action, resolved).await;
        let (success, stdout, stderr) = match &result {
            Ok(summary) => (true, summary.clone(), String::new()),
            Err(message) => (false, String::new(), message.clone()),
        };
        self.session
            .send_event(
                &self.ids.sub_id,
                EventMsg::PatchApplyEnd(PatchApplyEndEvent {
                    call_id,
                    turn_id: self.ids.turn_id.clone(),
                    stdout: stdout.clone(),
                    stderr: stderr.clone(),
                    success,
                    changes,
                }),
            )
            .await;
        if success {
            let unified_diff = self.tool.diff().unified_diff(&self.context.cwd);
            self.session
                .send_event(
                    &self.ids.sub_id,
                    EventMsg::TurnDiff(TurnDiffEvent { unified_diff }),
                )
                .await;
            Ok(stdout)
        } else {
            Ok(format!("apply_patch failed: {stderr}"))
        }
    }
}

/// The places the writes of `action` really reach, or why the patch is refused.
fn real_targets(
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

/// Refuses a write that leads through a symlink to somewhere outside the writable roots (or
/// into a protected path). A plain path outside the roots is left to the approval policy.
fn check_place(policy: &ResolvedPolicy, resolved: &ResolvedPath) -> Result<(), String> {
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

/// The approval's reason, telling the user where writes that go through a symlink really land
/// (the changes it shows are keyed by the paths as the patch names them).
fn with_link_targets(
    reason: Option<String>,
    paths: &[PathBuf],
    real: &[PathBuf],
) -> Option<String> {
    let redirected: Vec<String> = paths
        .iter()
        .zip(real)
        .filter(|(path, real)| path != real)
        .map(|(path, real)| format!("`{}` is written at `{}`", path.display(), real.display()))
        .collect();
    if redirected.is_empty() {
        return reason;
    }
    let note = format!("through a symlink: {}", redirected.join("; "));
    Some(match reason {
        Some(reason) => format!("{reason}; {note}"),
        None => note,
    })
}

/// `policy` with each root also as the kernel resolves it (symlinks followed).
fn with_real_roots(mut policy: ResolvedPolicy) -> ResolvedPolicy {
    let widen = |roots: &mut Vec<PathBuf>| {
        let real: Vec<PathBuf> = roots
            .iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .filter(|real| !roots.contains(real))
            .collect();
        roots.extend(real);
    };
    widen(&mut policy.writable_roots);
    widen(&mut policy.read_only_subpaths);
    policy
}

/// Runs the filesystem work off the async threads.
/// Links are checked again as the patch is written, and the writes land exactly where that
/// check looked: a link planted while the user was asked (by a process the model left
/// running), or even while the patch is written, fails the patch.
async fn apply_blocking(
    action: ApplyPatchAction,
    policy: Option<ResolvedPolicy>,
) -> Result<String, String> {
    let work = move || {
        apply_checked(&action, |resolved| match &policy {
            Some(policy) => check_place(policy, resolved),
            None => Ok(()),
        })
        .map_err(|err| match err {
            ApplyError::Refused { reason, .. } => format!("patch rejected: {reason}"),
            other => other.to_string(),
        })
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(summary)) => Ok(summary.to_string()),
        Ok(Err(message)) => Err(message),
        Err(err) => Err(format!("patch task failed: {err}")),
    }
}
