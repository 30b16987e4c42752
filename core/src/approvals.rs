//! Whether a command or patch may run without asking, under each approval policy.

use std::path::{Path, PathBuf};

use keel_protocol::AskForApproval;

use crate::sandbox::ResolvedPolicy;

/// Programs that only read, safe to run without asking even under `untrusted`.
const SAFE_PROGRAMS: &[&str] = &[
    "cat", "cd", "echo", "false", "grep", "head", "ls", "nl", "pwd", "rg", "tail", "true", "wc",
    "which", "whoami", "tree", "stat", "file", "du", "df", "date", "uname", "env",
];

/// What to do with a command before running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExecDecision {
    /// Run it without asking.
    Run,
    /// Ask the user first, giving this reason (if any).
    Ask(Option<String>),
    /// Refuse, telling the model why.
    Reject(String),
}

/// Decides for a command the model asked to run.
pub(crate) fn decide_exec(
    policy: AskForApproval,
    argv: &[String],
    escalation_requested: bool,
    justification: Option<&str>,
    approved_for_session: bool,
) -> ExecDecision {
    if approved_for_session {
        return ExecDecision::Run;
    }
    match policy {
        AskForApproval::Never => ExecDecision::Run,
        AskForApproval::OnFailure => ExecDecision::Run,
        AskForApproval::OnRequest => {
            if escalation_requested {
                ExecDecision::Ask(justification.map(str::to_string))
            } else {
                ExecDecision::Run
            }
        }
        AskForApproval::UnlessTrusted => {
            if is_known_safe(argv) {
                ExecDecision::Run
            } else {
                ExecDecision::Ask(justification.map(str::to_string))
            }
        }
    }
}

/// Whether a command only reads: a plain safe program, `bash -lc` of a simple safe pipeline,
/// or a read-only git/sed/find invocation.
pub(crate) fn is_known_safe(argv: &[String]) -> bool {
    match argv {
        [shell, flag, script] if is_shell(shell) && (flag == "-lc" || flag == "-c") => {
            script_is_safe(script)
        }
        _ => argv_is_safe(argv),
    }
}

fn is_shell(program: &str) -> bool {
    matches!(
        Path::new(program).file_name().and_then(|n| n.to_str()),
        Some("bash" | "sh" | "zsh")
    )
}

fn argv_is_safe(argv: &[String]) -> bool {
    let Some(program) = argv.first() else {
        return false;
    };
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    let args = &argv[1..];
    match name {
        "git" => matches!(
            args.first().map(String::as_str),
            Some("status" | "log" | "diff" | "show" | "branch")
        ),
        "sed" => {
            args.first().is_some_and(|a| a == "-n") && !args.iter().any(|a| a.starts_with("-i"))
        }
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        _ => SAFE_PROGRAMS.contains(&name),
    }
}

/// A script is safe if it is a sequence (`&&`, `||`, `;`, `|`) of safe commands with no
/// redirection, substitution or other shell syntax.
fn script_is_safe(script: &str) -> bool {
    if script.contains(['>', '<', '`', '$', '(', ')', '\n', '&']) && !only_and_and(script) {
        return false;
    }
    script
        .split("&&")
        .flat_map(|part| part.split("||"))
        .flat_map(|part| part.split([';', '|']))
        .all(|command| {
            shlex::split(command.trim()).is_some_and(|argv| !argv.is_empty() && argv_is_safe(&argv))
        })
}

/// True when every `&` in the script is part of `&&` and there is no other risky syntax.
fn only_and_and(script: &str) -> bool {
    let without = script.replace("&&", "");
    !without.contains(['>', '<', '`', '$', '(', ')', '\n', '&'])
}

/// What to do with a patch before applying it. `sandbox` is the policy resolved for the
/// conversation (`None`: no restriction); a patch may write where a sandboxed command could.
/// A write into a protected folder is refused without asking, under every approval policy.
pub(crate) fn decide_patch(
    policy: AskForApproval,
    sandbox: Option<&ResolvedPolicy>,
    paths: &[PathBuf],
) -> ExecDecision {
    if let Some(resolved) = sandbox
        && let Some((path, folder)) = paths
            .iter()
            .find_map(|path| protected_folder(resolved, path).map(|folder| (path, folder)))
    {
        return ExecDecision::Reject(protected_refusal(path, folder));
    }
    let allowed = |path: &PathBuf| {
        sandbox.is_none_or(|resolved| {
            resolved
                .writable_roots
                .iter()
                .any(|root| path.starts_with(root))
        })
    };
    let inside = paths.iter().all(allowed);
    match policy {
        AskForApproval::UnlessTrusted => ExecDecision::Ask(None),
        _ if inside => ExecDecision::Run,
        AskForApproval::Never => ExecDecision::Reject(
            "the patch writes outside the writable roots and the approval policy is `never`"
                .to_string(),
        ),
        AskForApproval::OnFailure | AskForApproval::OnRequest => ExecDecision::Ask(Some(
            "the patch writes outside the writable roots".to_string(),
        )),
    }
}

/// The protected folder `path` lies in, if any.
fn protected_folder<'a>(resolved: &'a ResolvedPolicy, path: &Path) -> Option<&'a Path> {
    resolved
        .read_only_subpaths
        .iter()
        .find(|folder| path.starts_with(folder))
        .map(PathBuf::as_path)
}

/// What the model reads when a patch touches a protected folder: why, and what the user can do.
fn protected_refusal(path: &Path, folder: &Path) -> String {
    let name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let git_hint = if name == ".git" || !name.starts_with('.') {
        " (or `[sandbox_workspace_write] allow_git_writes = true` for git)"
    } else {
        ""
    };
    format!(
        "`{}` is inside the protected folder `{}`: the sandbox keeps `.git` (and the git \
         directory it points to), `.codex`, `.agents` and `.aws` read-only to the model, since \
         hooks, configuration and credentials there act outside the sandbox. Ask the user to \
         make this change themselves, or to run with `danger-full-access`{git_hint}.",
        path.display(),
        folder.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn safe_commands() {
        assert!(is_known_safe(&argv(&["ls", "-la"])));
        assert!(is_known_safe(&argv(&[
            "bash",
            "-lc",
            "ls && cat a.txt | wc -l"
        ])));
        assert!(is_known_safe(&argv(&["git", "status"])));
        assert!(is_known_safe(&argv(&["sed", "-n", "1,5p", "f"])));
    }

    #[test]
    fn unsafe_commands() {
        assert!(!is_known_safe(&argv(&["rm", "-rf", "x"])));
        assert!(!is_known_safe(&argv(&["bash", "-lc", "echo hi > out.txt"])));
        assert!(!is_known_safe(&argv(&["bash", "-lc", "echo $(rm x)"])));
        assert!(!is_known_safe(&argv(&["find", ".", "-delete"])));
        assert!(!is_known_safe(&argv(&["git", "push"])));
        assert!(!is_known_safe(&argv(&["bash", "-lc", "sleep 1 & ls"])));
    }

    #[test]
    fn policies() {
        let write = argv(&["touch", "x"]);
        assert_eq!(
            decide_exec(AskForApproval::Never, &write, false, None, false),
            ExecDecision::Run
        );
        assert_eq!(
            decide_exec(AskForApproval::UnlessTrusted, &write, false, None, false),
            ExecDecision::Ask(None)
        );
        assert_eq!(
            decide_exec(AskForApproval::UnlessTrusted, &write, false, None, true),
            ExecDecision::Run
        );
        assert_eq!(
            decide_exec(
                AskForApproval::OnRequest,
                &write,
                true,
                Some("need net"),
                false
            ),
            ExecDecision::Ask(Some("need net".into()))
        );
        assert_eq!(
            decide_exec(AskForApproval::OnRequest, &write, false, None, false),
            ExecDecision::Run
        );
    }

    #[test]
    fn patch_policies() {
        let ws = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(ws.path().join(".git")).expect("mkdir .git");
        let resolved = ResolvedPolicy::resolve(
            &keel_protocol::SandboxPolicy::new_workspace_write(),
            ws.path(),
            None,
            false,
        );
        let sandbox = resolved.as_ref();
        let inside = [ws.path().join("a")];
        let git = [ws.path().join(".git/config")];
        let outside = [PathBuf::from("/etc/a")];
        assert_eq!(
            decide_patch(AskForApproval::OnRequest, sandbox, &inside),
            ExecDecision::Run
        );
        assert!(matches!(
            decide_patch(AskForApproval::OnRequest, sandbox, &outside),
            ExecDecision::Ask(_)
        ));
        // Protected folders are refused without asking, present (`.git`) or not (`.codex`).
        let codex = [ws.path().join(".codex/hooks.json")];
        for policy in [
            AskForApproval::OnRequest,
            AskForApproval::Never,
            AskForApproval::UnlessTrusted,
            AskForApproval::OnFailure,
        ] {
            for paths in [&git, &codex] {
                let decision = decide_patch(policy, sandbox, paths);
                assert!(
                    matches!(&decision, ExecDecision::Reject(reason) if reason.contains("protected folder")),
                    "{policy:?} {paths:?}: {decision:?}"
                );
            }
        }
        assert!(matches!(
            decide_patch(AskForApproval::Never, sandbox, &outside),
            ExecDecision::Reject(_)
        ));
        assert_eq!(
            decide_patch(AskForApproval::UnlessTrusted, sandbox, &inside),
            ExecDecision::Ask(None)
        );
        assert_eq!(
            decide_patch(AskForApproval::Never, None, &outside),
            ExecDecision::Run
        );
    }
}
