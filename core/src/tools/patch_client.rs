//! A patch through the client's files (an editor's buffers): planned against the text the
//! editor holds, unsaved edits included, judged by the sandbox and the approval policy as any
//! patch, then written back through the editor so it shows the change and can undo it.
//! Removals (a deleted file, a moved file's source) happen on disk: the client has no method
//! for them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use keel_exec_server::patch::{check_place, planned_writes};
use keel_protocol::ConversationId;

use keel_protocol::FileChange;
use keel_protocol::exec_server::PatchWrite;

use crate::ClientFiles;
use crate::apply_patch::{ApplyPatchAction, parse_patch, plan_patch_over, touched_paths};
use crate::sandbox::ResolvedPolicy;

/// A patch planned against the client's files, ready to write there.
pub(super) struct ClientPatch {
    action: ApplyPatchAction,
    files: Arc<dyn ClientFiles>,
    conversation: ConversationId,
}

/// A patch planned against the client's files: what it changes, each write, and how to
/// carry it out.
pub(super) struct ClientPlan {
    pub changes: BTreeMap<std::path::PathBuf, FileChange>,
    pub writes: Vec<PatchWrite>,
    pub patch: ClientPatch,
}

/// The patch planned against the client's files, its writes judged by `resolved` (the turn's
/// policy on this host); `Err` is what the model reads.
pub(super) async fn plan_through_client(
    conversation: ConversationId,
    files: Arc<dyn ClientFiles>,
    patch_text: &str,
    cwd: &Path,
    resolved: Option<&ResolvedPolicy>,
) -> Result<ClientPlan, String> {
    let patch =
        parse_patch(patch_text).map_err(|e| format!("apply_patch verification failed: {e}"))?;
    let mut open = BTreeMap::new();
    for path in touched_paths(&patch, cwd) {
        if let Some(text) = held_text(files.as_ref(), conversation, &path).await? {
            open.insert(path, text);
        }
    }
    let action = plan_patch_over(&patch, cwd, &open)
        .map_err(|e| format!("apply_patch verification failed: {e}"))?;
    let writes = planned_writes(resolved, &action)
        .map_err(|refusal| format!("patch rejected: {refusal}"))?;
    Ok(ClientPlan {
        changes: action.changes().clone(),
        writes,
        patch: ClientPatch {
            action,
            files,
            conversation,
        },
    })
}

/// The text the client holds for `path`: asked only of a file that exists on disk (a missing
/// one is new to both, and editors answer a read of it differently).
async fn held_text(
    files: &dyn ClientFiles,
    conversation: ConversationId,
    path: &Path,
) -> Result<Option<String>, String> {
    let on_disk = tokio::fs::metadata(path)
        .await
        .is_ok_and(|metadata| metadata.is_file());
    if !on_disk {
        return Ok(None);
    }
    files
        .read_text_file(conversation, path)
        .await
        .map(Some)
        .map_err(|err| {
            format!(
                "apply_patch failed: nothing was changed: the editor could not read `{}`: {err}",
                path.display()
            )
        })
}

impl ClientPatch {
    /// Writes the patch: every file must still hold what was approved, every write must still
    /// land inside the writable roots (links are resolved again), then text goes through the
    /// client and removals to the disk. `Err` says why it was not (fully) written.
    pub(super) async fn write(self, policy: Option<&ResolvedPolicy>) -> Result<String, String> {
        let files = self.files.as_ref();
        for write in self.action.writes() {
            let now = held_text(files, self.conversation, &write.path).await?;
            if now != write.before {
                return Err(format!(
                    "`{}` changed after the patch was checked; nothing was written",
                    write.path.display()
                ));
            }
        }
        let mut landing = Vec::with_capacity(self.action.writes().len());
        for write in self.action.writes() {
            let resolved = write
                .resolve()
                .map_err(|err| format!("cannot resolve `{}`: {err}", write.path.display()))?;
            if let Some(policy) = policy {
                check_place(policy, &resolved)
                    .map_err(|reason| format!("patch rejected: {reason}"))?;
            }
            landing.push(resolved.real);
        }
        let mut written: Vec<&Path> = Vec::new();
        for (write, real) in self.action.writes().iter().zip(&landing) {
            let done = match &write.after {
                Some(text) => self.write_text(real, text).await,
                None => tokio::fs::remove_file(real)
                    .await
                    .map_err(|err| format!("cannot remove `{}`: {err}", real.display())),
            };
            if let Err(message) = done {
                return Err(partly_written(&message, &written));
            }
            written.push(&write.path);
        }
        Ok(self.action.summary().to_string())
    }

    /// Writes `text` to `path` through the client, making its folder first.
    async fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|err| format!("cannot create `{}`: {err}", parent.display()))?;
        }
        self.files
            .write_text_file(self.conversation, path, text)
            .await
            .map_err(|err| format!("the editor could not write `{}`: {err}", path.display()))
    }
}

/// The failure, with the files already written when there are any.
fn partly_written(message: &str, written: &[&Path]) -> String {
    if written.is_empty() {
        return format!("{message}; nothing was written");
    }
    let names: Vec<String> = written
        .iter()
        .map(|path| format!("`{}`", path.display()))
        .collect();
    format!("{message}; already written before it: {}", names.join(", "))
}
