//! `AGENTS.md` as the client holds it: when the client serves the conversation's files (an
//! editor's buffers), the project docs the model reads are the editor's text, unsaved edits
//! included, as the files a patch changes are.

use std::path::Path;
use std::sync::Arc;

use keel_protocol::ConversationId;

use crate::ClientFiles;

/// The `AGENTS.md` files from the repository root down to `cwd`, read through `files`, joined
/// and capped as `join_project_docs` does. Only files on disk are asked for (the client is
/// never asked for a file that does not exist); one the client cannot read is taken from the
/// disk.
pub(super) async fn read_client_project_docs(
    files: Arc<dyn ClientFiles>,
    conversation: ConversationId,
    cwd: &Path,
    max_bytes: usize,
) -> Option<String> {
    if max_bytes == 0 {
        return None;
    }
    let repo_root = crate::repo_root::repo_root(cwd);
    let mut texts = Vec::new();
    for dir in crate::prompt_context::project_doc_dirs(cwd, repo_root) {
        let file = dir.join("AGENTS.md");
        if !file.is_file() {
            continue;
        }
        match files.read_text_file(conversation, &file).await {
            Ok(text) => texts.push(text),
            Err(err) => {
                tracing::warn!(
                    file = %file.display(),
                    "the client could not read AGENTS.md ({}); the disk's is used",
                    err.message
                );
                texts.extend(std::fs::read_to_string(&file).ok());
            }
        }
    }
    crate::prompt_context::join_project_docs(texts, max_bytes)
}
