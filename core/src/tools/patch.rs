//! The `apply_patch` tool: parse, check against the disk, approve, apply atomically, and
//! report `patch_apply_*` and `turn_diff` events.

use std::path::{Path, PathBuf};

use keel_protocol::{
    ApplyPatchApprovalRequestEvent, CallId, EventMsg, PatchApplyBeginEvent, PatchApplyEndEvent,
    ReviewDecision, TurnDiffEvent,
};

use futures::future::BoxFuture;

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use keel_exec_server::patch::{ApplyFailure, apply_under, planned_writes, with_real_roots};
use keel_protocol::exec_server::{PatchApplyResponse, PatchParams, PatchPlanResponse, PatchWrite};

use crate::apply_patch::{ApplyPatchAction, parse_patch, plan_patch};
use crate::approvals::{ExecDecision, decide_patch};
use crate::processes::ProcessLayer;
use crate::sandbox::ResolvedPolicy;
use crate::telemetry::DecisionSource;
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
            let call_id = ctx.call_id().to_string();
            let cwd = ctx.turn.cwd.clone();
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
            Ok(apply_patch(&ctx, &call_id, &patch, &cwd).await?)
        })
    }
}

/// Applies a patch for the model and returns the text it sees: a summary of the files
/// changed, or an error naming the file and hunk that failed (nothing is changed then).
/// The files are where the turn's commands run: this host, or the exec-server's.
pub(super) async fn apply_patch(
    ctx: &ToolContext,
    call_id: &str,
    patch_text: &str,
    cwd: &Path,
) -> Result<String, TurnStop> {
    let call_id = CallId::new(call_id);
    let remote = !ctx.host.processes().is_local();
    let planned = if remote {
        plan_remote(ctx, patch_text, cwd).await
    } else if let Some((conversation, files)) = ctx.host.processes().client_files() {
        let resolved = local_policy(ctx);
        super::patch_client::plan_through_client(
            conversation,
            files,
            patch_text,
            cwd,
            resolved.as_ref(),
        )
        .await
        .map(|plan| PlannedPatch {
            changes: plan.changes,
            writes: plan.writes,
            resolved,
            apply: ApplyBy::Client(plan.patch),
        })
    } else {
        plan_local(ctx, patch_text, cwd)
    };
    let planned = match planned {
        Ok(planned) => planned,
        Err(message) => return Ok(message),
    };
    let paths: Vec<PathBuf> = planned.writes.iter().map(|w| w.path.clone()).collect();
    let real_paths: Vec<PathBuf> = planned.writes.iter().map(|w| w.real_path.clone()).collect();
    let decision = decide_patch(
        ctx.turn.approval_policy,
        planned.resolved.as_ref(),
        &real_paths,
    );
    let auto_approved = match decision {
        ExecDecision::Run => {
            ctx.trace
                .decision(ReviewDecision::Approved, DecisionSource::Config);
            true
        }
        ExecDecision::Reject(reason) => {
            ctx.trace
                .decision(ReviewDecision::Denied, DecisionSource::Config);
            ctx.trace.mark_failed();
            return Ok(format!("patch rejected: {reason}"));
        }
        ExecDecision::Ask(reason) => {
            let reason = with_link_targets(reason, &paths, &real_paths);
            let event = EventMsg::ApplyPatchApprovalRequest(ApplyPatchApprovalRequestEvent {
                call_id: call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                changes: planned.changes.clone(),
                reason,
                grant_root: None,
            });
            match ctx.wait_for_decision(&call_id, event).await? {
                ReviewDecision::Approved | ReviewDecision::ApprovedForSession => false,
                ReviewDecision::Denied => {
                    ctx.trace.mark_failed();
                    return Ok("patch rejected by user".to_string());
                }
                ReviewDecision::Abort => return Err(TurnStop::Interrupted),
            }
        }
    };
    let changes = planned.changes.clone();
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::PatchApplyBegin(PatchApplyBeginEvent {
                call_id: call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                auto_approved,
                changes: changes.clone(),
            }),
        )
        .await;
    for write in &planned.writes {
        ctx.diff()
            .note_baseline(&write.path, write.before.as_deref());
    }
    let writes = planned.writes.clone();
    // Files written elsewhere (another host, an editor's buffers) are recorded as written.
    let written_elsewhere = !matches!(planned.apply, ApplyBy::Local(_));
    let result = carry_out(ctx.host.processes(), planned.apply, planned.resolved).await;
    if written_elsewhere && result.is_ok() {
        let mut diff = ctx.diff();
        for write in &writes {
            diff.note_remote_after(&write.path, write.after.as_deref());
        }
    }
    let (success, stdout, stderr) = match &result {
        Ok(summary) => (true, summary.clone(), String::new()),
        Err(message) => (false, String::new(), message.clone()),
    };
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::PatchApplyEnd(PatchApplyEndEvent {
                call_id,
                turn_id: ctx.ids.turn_id.clone(),
                stdout: stdout.clone(),
                stderr: stderr.clone(),
                success,
                changes,
            }),
        )
        .await;
    if success {
        let unified_diff = ctx.diff().unified_diff(&ctx.turn.cwd);
        ctx.host
            .send_event(
                &ctx.ids.sub_id,
                EventMsg::TurnDiff(TurnDiffEvent { unified_diff }),
            )
            .await;
        Ok(stdout)
    } else {
        Ok(format!("apply_patch failed: {stderr}"))
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

/// Runs the filesystem work off the async threads.
/// Links are checked again as the patch is written, and the writes land exactly where that
/// check looked: a link planted while the user was asked (by a process the model left
/// running), or even while the patch is written, fails the patch.
async fn apply_blocking(
    action: ApplyPatchAction,
    policy: Option<ResolvedPolicy>,
) -> Result<String, String> {
    let work = move || {
        apply_under(&action, policy.as_ref()).map_err(|failure| match failure {
            ApplyFailure::Refused(reason) => format!("patch rejected: {reason}"),
            ApplyFailure::Failed(message) => message,
        })
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(err) => Err(format!("patch task failed: {err}")),
    }
}

/// A patch checked against the files it will change, wherever they are.
struct PlannedPatch {
    changes: std::collections::BTreeMap<PathBuf, keel_protocol::FileChange>,
    /// Each write: the path the patch names, where it lands, its contents before and after.
    writes: Vec<PatchWrite>,
    /// The policy writes are judged by (roots as written and resolved); `None`: unsandboxed.
    resolved: Option<ResolvedPolicy>,
    /// How to carry it out.
    apply: ApplyBy,
}

/// Where a planned patch is written.
enum ApplyBy {
    /// On this host, exactly as planned.
    Local(ApplyPatchAction),
    /// By the exec-server that runs the turn's commands, which plans it again on its host.
    Remote(PatchParams),
    /// Through the client's files (an editor's buffers), as planned against them.
    Client(super::patch_client::ClientPatch),
}

/// The patch planned against this host's files; `Err` is what the model reads.
fn plan_local(ctx: &ToolContext, patch_text: &str, cwd: &Path) -> Result<PlannedPatch, String> {
    let action = parse_patch(patch_text)
        .map_err(|e| e.to_string())
        .and_then(|patch| plan_patch(&patch, cwd).map_err(|e| e.to_string()))
        .map_err(|message| format!("apply_patch verification failed: {message}"))?;
    let resolved = local_policy(ctx);
    let writes = planned_writes(resolved.as_ref(), &action)
        .map_err(|refusal| format!("patch rejected: {refusal}"))?;
    Ok(PlannedPatch {
        changes: action.changes().clone(),
        writes,
        resolved,
        apply: ApplyBy::Local(action),
    })
}

/// The turn's sandbox policy on this host, roots also as the kernel resolves them: where each
/// write really lands is judged, so a link planted in the workspace never carries a write
/// out of the writable roots, whatever the approval policy.
fn local_policy(ctx: &ToolContext) -> Option<ResolvedPolicy> {
    ResolvedPolicy::resolve(
        &ctx.turn.sandbox_policy,
        &ctx.turn.cwd,
        ctx.turn.shell_env.get("TMPDIR").map(Path::new),
        ctx.turn.sandbox_allow_git_writes,
    )
    .map(with_real_roots)
}

/// The patch planned by the exec-server against its host's files; `Err` is what the
/// model reads.
async fn plan_remote(
    ctx: &ToolContext,
    patch_text: &str,
    cwd: &Path,
) -> Result<PlannedPatch, String> {
    let params = PatchParams {
        patch: patch_text.to_string(),
        cwd: cwd.to_path_buf(),
        sandbox_policy: Some(ctx.turn.sandbox_policy.clone()),
        tmpdir: ctx.turn.shell_env.get("TMPDIR").map(PathBuf::from),
        allow_git_writes: ctx.turn.sandbox_allow_git_writes,
        expected_before: None,
    };
    let plan = ctx
        .host
        .processes()
        .plan_patch(params.clone())
        .await
        .map_err(|err| format!("apply_patch failed: nothing was changed: {err}"))?;
    match plan {
        PatchPlanResponse::Invalid { message } => {
            Err(format!("apply_patch verification failed: {message}"))
        }
        PatchPlanResponse::Refused { message } => Err(format!("patch rejected: {message}")),
        PatchPlanResponse::Planned {
            changes,
            writes,
            writable_roots,
            read_only_subpaths,
        } => {
            // What is written must be what was approved.
            let expected_before = writes
                .iter()
                .map(|write| (write.path.clone(), write.before.clone()))
                .collect();
            Ok(PlannedPatch {
                changes,
                writes,
                resolved: writable_roots.map(|writable_roots| ResolvedPolicy {
                    writable_roots,
                    read_only_subpaths,
                    network: false,
                }),
                apply: ApplyBy::Remote(PatchParams {
                    expected_before: Some(expected_before),
                    ..params
                }),
            })
        }
    }
}
/// Writes a planned patch; `Err` says why it was not (fully) written.
async fn carry_out(
    processes: &ProcessLayer,
    apply: ApplyBy,
    policy: Option<ResolvedPolicy>,
) -> Result<String, String> {
    match apply {
        ApplyBy::Local(action) => apply_blocking(action, policy).await,
        ApplyBy::Client(patch) => patch.write(policy.as_ref()).await,
        ApplyBy::Remote(params) => match processes.apply_patch(params).await {
            Ok(PatchApplyResponse::Applied { summary }) => Ok(summary),
            Ok(PatchApplyResponse::Refused { message }) => {
                Err(format!("patch rejected: {message}"))
            }
            Ok(PatchApplyResponse::Failed { message }) => Err(message),
            // The request may have reached the server before the connection went: the patch
            // may have been written. Never sent again on its own.
            Err(err) => Err(format!(
                "the exec-server did not answer ({err}); the patch may or may not have been \
                 written on its host: check the files before applying it again"
            )),
        },
    }
}
