//! Builds the prompt of each model request: base instructions, the permissions in force,
//! developer instructions, `AGENTS.md` project docs, an environment context, the history, and
//! the tool definitions.

use std::path::{Path, PathBuf};

use keel_protocol::SandboxPolicy;

use crate::client::Prompt;
use crate::models::{ContentItem, ResponseItem};
use crate::turn_context::TurnContext;

/// The instructions Keel gives the model unless configuration replaces them.
pub(crate) const BASE_INSTRUCTIONS: &str = include_str!("base_instructions.md");

/// The version of [`BASE_INSTRUCTIONS`]; raise it with every change of the file, so a
/// behaviour change can be traced to the prompt that caused it (logged when a conversation
/// starts).
pub const BASE_INSTRUCTIONS_VERSION: u32 = 2;

/// What the model is told in plan mode when the client gives no wording of its own.
const PLAN_MODE_INSTRUCTIONS: &str = "<collaboration_mode>Plan</collaboration_mode>\n\
You are in Plan mode. Explore the code and ask what you need to know, then propose a plan: \
the steps, the files each one touches, and how to check the result. Change nothing: \
commands run read-only in this mode and there is no patch tool. The user will switch \
back to the default mode to carry the plan out.";

/// The prompt for the next request of a turn, offering `tools` (definitions from the
/// request's tool registry; none for a compaction).
pub(crate) fn build_prompt(
    context: &TurnContext,
    history: Vec<ResponseItem>,
    tools: Vec<serde_json::Value>,
) -> Prompt {
    let mut input = Vec::with_capacity(history.len() + 4);
    // The skills list, when there are skills, leads the developer message that states the
    // permissions (where Codex puts it).
    let permissions = crate::permissions_message::permissions_message(context);
    let skills = crate::skills::skills_section(
        &context.skills,
        crate::skills::budget_chars(context.model_context_window),
    );
    input.push(ResponseItem::Message {
        id: None,
        role: "developer".to_string(),
        content: skills
            .into_iter()
            .chain(std::iter::once(permissions))
            .map(|text| ContentItem::InputText { text })
            .collect(),
    });
    if let Some((role, mode)) = multi_agent_messages(context) {
        input.push(ResponseItem::developer_text(role));
        input.push(ResponseItem::developer_text(mode));
    }
    if let Some(developer) = &context.developer_instructions {
        input.push(ResponseItem::developer_text(developer.clone()));
    }
    if let Some(plan) = &context.plan_mode {
        let text = plan
            .instructions
            .clone()
            .unwrap_or_else(|| PLAN_MODE_INSTRUCTIONS.to_string());
        input.push(ResponseItem::developer_text(text));
    }
    if let Some(docs) = &context.user_instructions {
        input.push(ResponseItem::user_text(format!(
            "# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{docs}\n</INSTRUCTIONS>",
            context.cwd.display()
        )));
    }
    input.push(ResponseItem::user_text(environment_context(context)));
    input.extend(history);
    Prompt {
        instructions: context.base_instructions.clone(),
        input,
        tools,
        conversation_id: None,
        output_schema: None,
        metadata: None,
    }
}

/// For a model that takes the second generation of sub-agent tools: who the agent is in its
/// tree, and whether it should hand work to sub-agents unasked (only at effort `ultra`, as
/// Codex does).
fn multi_agent_messages(context: &TurnContext) -> Option<(String, String)> {
    let settings = context.client.settings();
    let family = crate::model_family::family(&settings.catalog, &settings.model);
    if !(family.multi_agent_v2 && context.agent_tools.collab) {
        return None;
    }
    let path = &context.agent_path;
    let role = if path == crate::client::ROOT_AGENT {
        format!(
            "<multi_agent_role>You are `{path}`, the agent the user talks to. Sub-agents you \
             spawn work beside you; their answers arrive in your history.</multi_agent_role>"
        )
    } else {
        format!(
            "<multi_agent_role>You are `{path}`, a sub-agent. Do the task you were given and \
             finish with your answer: it goes to the agent that spawned you.</multi_agent_role>"
        )
    };
    let ultra = settings
        .reasoning_effort
        .as_ref()
        .is_some_and(|effort| effort.as_str() == keel_protocol::ReasoningEffort::ULTRA.as_str());
    let mode = if ultra {
        "<multi_agent_mode>Proactive delegation is on: split the work into independent tasks, \
         give them to sub-agents with spawn_agent, and put their answers together.\
         </multi_agent_mode>"
    } else {
        "<multi_agent_mode>Proactive delegation is off, whatever earlier messages said: spawn \
         sub-agents only when the user asks for them.</multi_agent_mode>"
    };
    Some((role, mode.to_string()))
}

fn environment_context(context: &TurnContext) -> String {
    let (sandbox, network) = match &context.sandbox_policy {
        SandboxPolicy::DangerFullAccess => ("danger-full-access", "enabled"),
        SandboxPolicy::ReadOnly => ("read-only", "restricted"),
        SandboxPolicy::WorkspaceWrite { network_access, .. } => (
            "workspace-write",
            if *network_access {
                "enabled"
            } else {
                "restricted"
            },
        ),
    };
    let approval = serde_json::to_value(context.approval_policy)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "<environment_context>\n  <cwd>{}</cwd>\n  <approval_policy>{approval}</approval_policy>\n  \
         <sandbox_mode>{sandbox}</sandbox_mode>\n  <network_access>{network}</network_access>\n  \
         <shell>bash</shell>\n</environment_context>",
        context.cwd.display()
    )
}

/// Reads `AGENTS.md` files from the repository root (the nearest ancestor with `.git`) down to
/// `cwd` on this host, joined root first, capped at `max_bytes`. `None` when there are none.
pub(crate) fn read_project_docs(cwd: &Path, max_bytes: usize) -> Option<String> {
    if max_bytes == 0 {
        return None;
    }
    let repo_root = crate::repo_root::repo_root(cwd);
    let texts = project_doc_dirs(cwd, repo_root)
        .into_iter()
        .filter_map(|dir| std::fs::read_to_string(dir.join("AGENTS.md")).ok());
    join_project_docs(texts, max_bytes)
}

/// The folders whose `AGENTS.md` count, root first: from `repo_root` down to `cwd`, or only
/// `cwd` outside a repository.
pub(crate) fn project_doc_dirs(cwd: &Path, repo_root: Option<&Path>) -> Vec<PathBuf> {
    let Some(root) = repo_root else {
        return vec![cwd.to_path_buf()];
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir == root {
            break;
        }
    }
    dirs.reverse();
    dirs
}

/// The docs joined by blank lines, cut at `max_bytes` on a character boundary; `None` when
/// there are none.
pub(crate) fn join_project_docs(
    texts: impl IntoIterator<Item = String>,
    max_bytes: usize,
) -> Option<String> {
    let mut docs = String::new();
    for text in texts {
        if !docs.is_empty() {
            docs.push_str("\n\n");
        }
        docs.push_str(text.trim_end());
    }
    if docs.is_empty() {
        return None;
    }
    if docs.len() > max_bytes {
        let mut cut = max_bytes;
        while !docs.is_char_boundary(cut) {
            cut -= 1;
        }
        docs.truncate(cut);
    }
    Some(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_docs_from_repo_root_down() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        std::fs::create_dir(root.path().join(".git"))?;
        std::fs::write(root.path().join(".git/HEAD"), "ref: refs/heads/main\n")?;
        let sub = root.path().join("crate");
        std::fs::create_dir(&sub)?;
        std::fs::write(root.path().join("AGENTS.md"), "root rules\n")?;
        std::fs::write(sub.join("AGENTS.md"), "crate rules\n")?;
        assert_eq!(
            read_project_docs(&sub, 1000).as_deref(),
            Some("root rules\n\ncrate rules")
        );
        assert_eq!(read_project_docs(&sub, 4).as_deref(), Some("root"));
        assert_eq!(read_project_docs(&sub, 0), None);
        Ok(())
    }

    #[test]
    fn no_docs_outside_a_repo() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        assert_eq!(read_project_docs(dir.path(), 1000), None);
        Ok(())
    }
}
