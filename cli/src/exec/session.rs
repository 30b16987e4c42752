//! The thread `keel exec` works in: a new one, or a recorded one resumed or forked (by id,
//! thread name, or the most recent).

use std::path::Path;

use keel_app_server::AppServerClient;
use keel_protocol::app_server::{
    ThreadForkParams, ThreadListCwdFilter, ThreadListParams, ThreadOverrides, ThreadResumeParams,
    ThreadStartParams, ThreadStartResponse, client_request,
};

use super::args::{SessionArgs, SessionCommand};
use crate::failure::usage;

/// Starts a new thread.
pub async fn start<C: AppServerClient>(
    client: &C,
    overrides: ThreadOverrides,
    ephemeral: bool,
) -> anyhow::Result<ThreadStartResponse> {
    Ok(client
        .request::<client_request::ThreadStart>(ThreadStartParams {
            dynamic_tools: None,
            environments: None,
            overrides,
            ephemeral: ephemeral.then_some(true),
        })
        .await?)
}

/// Continue the thread, or start a copy of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Resume,
    Fork,
}

/// A recorded thread to continue, as the command line names it.
#[derive(Debug)]
pub struct Target {
    mode: Mode,
    /// An id or a thread name; `None` with `--last`.
    id: Option<String>,
    /// Across every working directory (`--all`), not only the current one.
    all: bool,
    /// The follow-up prompt given after the id.
    pub prompt: Option<String>,
}

impl Target {
    /// Reads `resume`/`fork` arguments; with `--last` the first word is the prompt.
    pub fn from_args(command: &SessionCommand) -> anyhow::Result<Self> {
        let (mode, args): (Mode, &SessionArgs) = match command {
            SessionCommand::Resume(args) => (Mode::Resume, args),
            SessionCommand::Fork(args) => (Mode::Fork, args),
        };
        let verb = match mode {
            Mode::Resume => "resume",
            Mode::Fork => "fork",
        };
        let (id, prompt) = if args.last {
            if args.prompt.is_some() && args.id.is_some() {
                return Err(usage(format!(
                    "`keel exec {verb} --last` takes no session id, only a prompt"
                )));
            }
            (None, args.id.clone().or_else(|| args.prompt.clone()))
        } else {
            let id = args.id.clone().ok_or_else(|| {
                usage(format!(
                    "`keel exec {verb}` needs a session id or thread name, or --last"
                ))
            })?;
            (Some(id), args.prompt.clone())
        };
        Ok(Self {
            mode,
            id,
            all: args.all,
            prompt,
        })
    }

    /// Resumes or forks the thread.
    pub async fn open<C: AppServerClient>(
        self,
        client: &C,
        home: &Path,
        cwd: &Path,
        overrides: ThreadOverrides,
        ephemeral: bool,
    ) -> anyhow::Result<ThreadStartResponse> {
        let thread_id = match &self.id {
            Some(session) => crate::sessions::lookup::thread_id(client, session, false).await?,
            None => {
                let list = client
                    .request::<client_request::ThreadList>(ThreadListParams {
                        limit: Some(1),
                        cwd: (!self.all).then(|| ThreadListCwdFilter::One(cwd.to_path_buf())),
                        source_kinds: crate::sessions::lookup::top_level_kinds(),
                        ..ThreadListParams::default()
                    })
                    .await?;
                list.data.into_iter().next().map(|t| t.id).ok_or_else(|| {
                    let place = if self.all {
                        String::new()
                    } else {
                        format!(" for {} (--all looks everywhere)", cwd.display())
                    };
                    usage(format!(
                        "no recorded sessions under {}{place}",
                        home.display()
                    ))
                })?
            }
        };
        Ok(match self.mode {
            Mode::Resume => {
                client
                    .request::<client_request::ThreadResume>(ThreadResumeParams {
                        thread_id,
                        overrides,
                    })
                    .await?
            }
            Mode::Fork => {
                client
                    .request::<client_request::ThreadFork>(ThreadForkParams {
                        thread_id,
                        overrides,
                        ephemeral,
                        exclude_turns: false,
                    })
                    .await?
            }
        })
    }
}
