//! Recognises a `shell` tool call that is really an `apply_patch` call.
//!
//! Codex-trained models often run the patch through the shell tool, as
//! `["apply_patch", PATCH]` or `["bash", "-lc", "apply_patch <<'EOF'\n…\nEOF\n"]`, sometimes
//! after `cd DIR &&`. No `apply_patch` binary exists on the user's machine, so the engine
//! intercepts these and applies the patch itself.

use std::path::{Path, PathBuf};

use super::error::ParseError;
use super::parser::{Patch, heredoc_delimiter, parse_patch};

/// An `apply_patch` invocation found in a shell command's argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellApplyPatch {
    /// The patch text as the model wrote it.
    pub patch_text: String,
    /// The parsed patch.
    pub patch: Patch,
    /// The directory of a leading `cd DIR &&`, as written (relative to the call's workdir).
    pub workdir: Option<PathBuf>,
}

/// Detects `apply_patch PATCH` in `argv`, directly or through `bash -lc` / `sh -c`.
///
/// Returns `None` when the command is something else (including an `apply_patch` heredoc
/// followed by more commands, which is left to the shell), and `Some(Err(..))` when it is
/// an `apply_patch` call whose patch does not parse.
pub fn maybe_parse_apply_patch_from_argv(
    argv: &[String],
) -> Option<Result<ShellApplyPatch, ParseError>> {
    match argv {
        [program, patch] if is_apply_patch(program) => Some(parsed(patch, None)),
        [shell, flag, script]
            if is_shell(shell) && matches!(flag.as_str(), "-c" | "-lc" | "-cl") =>
        {
            parse_script(script)
        }
        [shell, login, flag, script] if is_shell(shell) && login == "-l" && flag == "-c" => {
            parse_script(script)
        }
        _ => None,
    }
}

fn is_apply_patch(program: &str) -> bool {
    matches!(program, "apply_patch" | "applypatch")
}

fn is_shell(program: &str) -> bool {
    let name = Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    matches!(name, "bash" | "sh" | "zsh" | "dash")
}

fn parsed(text: &str, workdir: Option<PathBuf>) -> Result<ShellApplyPatch, ParseError> {
    parse_patch(text).map(|patch| ShellApplyPatch {
        patch_text: text.to_string(),
        patch,
        workdir,
    })
}

/// Parses `[cd DIR &&] apply_patch <<'EOF'\n…\nEOF`.
fn parse_script(script: &str) -> Option<Result<ShellApplyPatch, ParseError>> {
    let script = script.trim_start();
    let (workdir, rest) = match strip_cd(script) {
        Some((dir, rest)) => (Some(dir), rest),
        None => (None, script),
    };
    let rest = ["apply_patch", "applypatch"]
        .iter()
        .find_map(|name| rest.strip_prefix(name))?
        .trim_start_matches([' ', '\t']);
    if !rest.starts_with("<<") {
        return None;
    }
    let (opener, body) = rest.split_once('\n').unwrap_or((rest, ""));
    let delimiter = heredoc_delimiter(opener)?;

    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if line.trim() == delimiter {
            let after = &body[offset + line.len()..];
            // More commands after the heredoc: not a plain patch call.
            if !after.trim().is_empty() {
                return None;
            }
            return Some(parsed(&body[..offset], workdir));
        }
        offset += line.len();
    }
    Some(Err(ParseError::UnterminatedHeredoc {
        delimiter: delimiter.to_string(),
    }))
}

/// Splits `cd DIR && rest` into `DIR` and `rest`; DIR may be single- or double-quoted.
fn strip_cd(script: &str) -> Option<(PathBuf, &str)> {
    let rest = script.strip_prefix("cd")?;
    let rest = rest.strip_prefix([' ', '\t'])?.trim_start();
    let (dir, rest) = match rest.chars().next()? {
        quote @ ('\'' | '"') => {
            let inner = &rest[1..];
            let end = inner.find(quote)?;
            (&inner[..end], &inner[end + 1..])
        }
        _ => rest.split_at(rest.find(char::is_whitespace)?),
    };
    let rest = rest.trim_start().strip_prefix("&&")?.trim_start();
    (!dir.is_empty()).then(|| (PathBuf::from(dir), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::Hunk;
    use pretty_assertions::assert_eq;

    const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

    fn argv(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|part| part.to_string()).collect()
    }

    fn expected(workdir: Option<&str>, text: &str) -> ShellApplyPatch {
        ShellApplyPatch {
            patch_text: text.to_string(),
            patch: Patch {
                hunks: vec![Hunk::Add {
                    path: PathBuf::from("hello.txt"),
                    contents: "hi\n".to_string(),
                }],
            },
            workdir: workdir.map(PathBuf::from),
        }
    }

    fn detect(parts: &[&str]) -> Option<Result<ShellApplyPatch, ParseError>> {
        maybe_parse_apply_patch_from_argv(&argv(parts))
    }

    #[test]
    fn direct_invocation() {
        for program in ["apply_patch", "applypatch"] {
            assert_eq!(detect(&[program, PATCH]), Some(Ok(expected(None, PATCH))));
        }
    }

    #[test]
    fn heredoc_through_a_shell() {
        let quoted = format!("apply_patch <<'EOF'\n{PATCH}EOF\n");
        let plain = format!("applypatch <<EOF\n{PATCH}EOF");
        let double = format!("  apply_patch << \"PATCH\"\n{PATCH}PATCH\n\n");
        for (parts, script) in [
            (vec!["bash", "-lc"], &quoted),
            (vec!["bash", "-c"], &plain),
            (vec!["/bin/sh", "-c"], &double),
            (vec!["zsh", "-l", "-c"], &quoted),
        ] {
            let mut command = parts.clone();
            command.push(script);
            assert_eq!(
                detect(&command),
                Some(Ok(expected(None, PATCH))),
                "{command:?}"
            );
        }
    }

    #[test]
    fn cd_prefix_returns_the_workdir() {
        let script = format!("cd sub/dir && apply_patch <<'EOF'\n{PATCH}EOF\n");
        assert_eq!(
            detect(&["bash", "-lc", &script]),
            Some(Ok(expected(Some("sub/dir"), PATCH)))
        );
        let quoted = format!("cd '/tmp/my project' &&apply_patch <<'EOF'\n{PATCH}EOF");
        assert_eq!(
            detect(&["bash", "-lc", &quoted]),
            Some(Ok(expected(Some("/tmp/my project"), PATCH)))
        );
    }

    #[test]
    fn other_commands_are_not_intercepted() {
        let trailing = format!("apply_patch <<'EOF'\n{PATCH}EOF\necho done\n");
        for parts in [
            vec!["ls", "-la"],
            vec!["bash", "-lc", "ls && apply_patch <<'EOF'"],
            vec!["bash", "-lc", &trailing],
            vec!["bash", "-lc", "apply_patch_tool <<'EOF'\nEOF"],
            vec!["bash", "-x", "apply_patch <<'EOF'\nEOF"],
            vec!["python", "-c", "apply_patch <<'EOF'\nEOF"],
            vec!["apply_patch"],
            vec!["apply_patch", PATCH, "extra"],
            vec!["bash", "-lc", "apply_patch 'inline'"],
        ] {
            assert_eq!(detect(&parts), None, "{parts:?}");
        }
    }

    #[test]
    fn broken_patches_are_reported() {
        assert_eq!(
            detect(&["apply_patch", "not a patch"]),
            Some(Err(ParseError::MissingBegin {
                line: 1,
                found: "not a patch".to_string(),
            }))
        );
        assert_eq!(
            detect(&["bash", "-lc", "apply_patch <<'EOF'\n*** Begin Patch\n"]),
            Some(Err(ParseError::UnterminatedHeredoc {
                delimiter: "EOF".to_string(),
            }))
        );
    }
}
