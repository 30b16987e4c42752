//! What `keel exec` reads from its command line before anything starts, for a run in this
//! process and one on a `--remote` server alike: the thread's settings, the prompt and
//! attachments, the answer schema, the output format, the directories.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use keel_protocol::app_server::{ThreadOverrides, UserInput};
use keel_protocol::{AskForApproval, SandboxMode};

use super::args::{Color, ExecArgs, SandboxArg};
use super::drive::Output;
use super::jsonl;
use super::render::HumanRenderer;
use super::session;
use crate::failure::usage;

/// The thread settings the command line asks for: the model, the directory, the sandbox and
/// `never` as the approval policy (nobody is there to answer) unless `--full-auto`.
pub(super) fn thread_overrides(
    args: &ExecArgs,
    model: Option<String>,
    cwd: &std::path::Path,
) -> ThreadOverrides {
    let mut overrides = ThreadOverrides {
        model,
        cwd: Some(cwd.to_path_buf()),
        sandbox: args.sandbox.map(|s| match s {
            SandboxArg::ReadOnly => SandboxMode::ReadOnly,
            SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
        }),
        approval_policy: Some(AskForApproval::Never),
        ..ThreadOverrides::default()
    };
    if args.full_auto {
        overrides.approval_policy = Some(AskForApproval::OnRequest);
        overrides.sandbox.get_or_insert(SandboxMode::WorkspaceWrite);
    }
    if args.dangerously_bypass_approvals_and_sandbox {
        overrides.approval_policy = Some(AskForApproval::Never);
        overrides.sandbox = Some(SandboxMode::DangerFullAccess);
    }
    overrides
}

/// The turn's thread, prompt, attachments and answer schema, read and checked.
pub(super) struct TurnInput {
    pub session: Option<session::Target>,
    pub input: Vec<UserInput>,
    pub output_schema: Option<serde_json::Value>,
}

pub(super) fn turn_input(args: &ExecArgs) -> anyhow::Result<TurnInput> {
    let session = args
        .session
        .as_ref()
        .map(session::Target::from_args)
        .transpose()?;
    let prompt_arg = match &session {
        Some(target) => target.prompt.clone().or(args.prompt.clone()),
        None => args.prompt.clone(),
    };
    let prompt = read_prompt(prompt_arg)?;
    let mut input = vec![UserInput::Text {
        text: prompt,
        text_elements: Vec::new(),
    }];
    for image in &args.images {
        let path =
            std::path::absolute(image).with_context(|| format!("resolving {}", image.display()))?;
        keel_core::check_image_file(&path)
            .map_err(|err| usage(format!("-i {}: {err}", image.display())))?;
        input.push(UserInput::LocalImage { path });
    }
    let output_schema = args
        .output_schema
        .as_deref()
        .map(read_output_schema)
        .transpose()?;
    Ok(TurnInput {
        session,
        input,
        output_schema,
    })
}

/// What stdout carries, as the flags ask.
pub(super) fn output_of(args: &ExecArgs) -> Output {
    if args.json {
        Output::Jsonl(jsonl::JsonlStream::default())
    } else if args.app_server_events {
        Output::AppServerEvents
    } else {
        Output::Human(HumanRenderer::new(colored(args.color)))
    }
}

/// Whether the readable stream is coloured.
pub(crate) fn colored(color: Color) -> bool {
    use std::io::IsTerminal;
    match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal(),
    }
}

/// The `--output-schema` file as a JSON Schema object.
fn read_output_schema(file: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(file)
        .map_err(|err| usage(format!("--output-schema {}: {err}", file.display())))?;
    let schema: serde_json::Value = serde_json::from_str(&text).map_err(|err| {
        usage(format!(
            "--output-schema {}: not JSON: {err}",
            file.display()
        ))
    })?;
    if !schema.is_object() {
        return Err(usage(format!(
            "--output-schema {}: a JSON Schema is an object",
            file.display()
        )));
    }
    Ok(schema)
}

/// `dir`, absolute; a usage error naming `flag` when it is not an existing directory.
pub(super) fn checked_dir(flag: &str, dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let absolute =
        std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?;
    match std::fs::metadata(&absolute) {
        Ok(meta) if meta.is_dir() => Ok(absolute),
        Ok(_) => Err(usage(format!("{flag} {}: not a directory", dir.display()))),
        Err(err) => Err(usage(format!("{flag} {}: {err}", dir.display()))),
    }
}

/// The `-C` directory, absolute; a usage error when it is not an existing directory.
pub(crate) fn checked_cwd(dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    checked_dir("-C", dir)
}

pub(crate) fn read_prompt(arg: Option<String>) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    let piped = !std::io::stdin().is_terminal();
    let read_stdin = || -> anyhow::Result<String> {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the prompt from stdin")?;
        Ok(text)
    };
    let prompt = match arg {
        Some(dash) if dash == "-" => read_stdin()?,
        Some(prompt) if piped => {
            // As `codex exec`: piped input goes with the prompt, as a block of its own.
            let input = read_stdin()?;
            if input.trim().is_empty() {
                prompt
            } else {
                format!(
                    "{prompt}\n\n<stdin>\n{}\n</stdin>",
                    input.trim_end_matches('\n')
                )
            }
        }
        Some(prompt) => prompt,
        None if piped => read_stdin()?,
        None => {
            return Err(usage(
                "no prompt given: pass it as an argument or `-` to read stdin",
            ));
        }
    };
    if prompt.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(prompt)
}
