//! The developer message that tells the model the sandbox and approval policy in force. It is
//! built from the turn's settings on every request, so a policy changed mid-thread is what
//! the model reads next.

use keel_protocol::{AskForApproval, SandboxPolicy};

use crate::turn_context::TurnContext;

/// The permissions message for `context`.
pub(crate) fn permissions_message(context: &TurnContext) -> String {
    let escalation = if context.unified_exec {
        "`sandbox_permissions: \"require_escalated\"` with a `justification` on `exec_command`"
    } else {
        "`with_escalated_permissions: true` with a `justification` on `shell`"
    };
    let sandbox = match &context.sandbox_policy {
        SandboxPolicy::DangerFullAccess => {
            "Sandbox: none (`danger-full-access`). Commands run with the user's full access to \
             files and network; be as careful as the user would be."
                .to_string()
        }
        SandboxPolicy::ReadOnly => "Sandbox: `read-only`. Commands may read any file but \
             write none, and have no network. `apply_patch` edits still go through the \
             approval policy."
            .to_string(),
        SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            ..
        } => {
            let mut roots = vec![format!("`{}`", context.cwd.display())];
            roots.extend(
                writable_roots
                    .iter()
                    .map(|root| format!("`{}`", root.display())),
            );
            format!(
                "Sandbox: `workspace-write`. Commands may read any file and write only under \
                 {} (and the temporary directory){}. Network access is {}.",
                roots.join(", "),
                if context.sandbox_allow_git_writes {
                    ""
                } else {
                    "; `.git` directories stay read-only"
                },
                if *network_access {
                    "enabled"
                } else {
                    "disabled"
                }
            )
        }
    };
    let approval = match context.approval_policy {
        AskForApproval::Never => "Approval policy: `never`. The user is not asked about \
             anything: a command the sandbox blocks fails, and you cannot ask for \
             escalation. Work around a block within the sandbox, or say what you need in \
             your final answer."
            .to_string(),
        AskForApproval::OnFailure => format!(
            "Approval policy: `on-failure`. Commands run in the sandbox; when one fails \
             there, the user is asked whether to run it again without the sandbox. You may \
             also ask up front with {escalation}."
        ),
        AskForApproval::OnRequest => format!(
            "Approval policy: `on-request`. Commands run in the sandbox without asking. \
             When one needs more (writing outside the writable roots, the network), ask for \
             it with {escalation}; the user decides. Do not ask for what the sandbox already \
             allows."
        ),
        AskForApproval::UnlessTrusted => "Approval policy: `untrusted`. Every command \
             except known read-only ones (`ls`, `cat`, `rg`, ...) and every patch is shown to \
             the user for approval first; a declined one is not run. Prefer read-only \
             commands for exploring."
            .to_string(),
    };
    format!("<permissions>\n{sandbox}\n{approval}\n</permissions>")
}
