//! Shared setup: a mock model, a temporary home and workspace, and event helpers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use keel_core::{
    Config, ConfigEnv, ConfigOverrides, Conversation, ConversationManager, NewConversation,
};
use keel_protocol::{Event, EventMsg, InputItem, Op};
use keel_test_support::{MockModelServer, Script, write_config};
use tempfile::TempDir;

/// How long any single wait in these tests may take before it counts as a hang.
pub const WAIT: Duration = Duration::from_secs(20);

/// One test's world: the mock, a Keel home, a workspace and a manager.
pub struct TestEnv {
    pub mock: MockModelServer,
    pub home: TempDir,
    pub workspace: TempDir,
    pub manager: ConversationManager,
}

impl TestEnv {
    /// Starts a mock serving `script` and writes a config pointing at it, with overrides.
    pub async fn new(script: Script, overrides: &[(&str, toml::Value)]) -> anyhow::Result<Self> {
        let mock = MockModelServer::start(script).await?;
        Self::with_mock(mock, overrides)
    }

    pub fn with_mock(
        mock: MockModelServer,
        overrides: &[(&str, toml::Value)],
    ) -> anyhow::Result<Self> {
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        write_config(home.path(), &mock.uri(), overrides.iter().cloned())?;
        Ok(Self {
            mock,
            home,
            workspace,
            manager: ConversationManager::with_env(Arc::new(|_| None)),
        })
    }

    pub fn ws(&self) -> &Path {
        self.workspace.path()
    }

    pub fn config(&self) -> anyhow::Result<Config> {
        let env = ConfigEnv {
            process_cwd: self.workspace.path().to_path_buf(),
            openai_base_url: None,
            oss_base_url: None,
        };
        let overrides = ConfigOverrides {
            sandbox_executable: Some(sandbox_helper()),
            ..ConfigOverrides::default()
        };
        Ok(Config::load_with_env(
            self.home.path(),
            Vec::new(),
            overrides,
            &env,
        )?)
    }

    pub async fn start(&self) -> anyhow::Result<NewConversation> {
        Ok(self.manager.new_conversation(self.config()?).await?)
    }
}

/// The sandbox helper built from this crate, passed explicitly so no lookup is involved.
pub fn sandbox_helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_keel-linux-sandbox"))
}

/// Submits text input and returns the submission id.
pub async fn say(conversation: &Conversation, text: &str) -> anyhow::Result<String> {
    let id = conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text(text)],
        })
        .await?;
    Ok(id.to_string())
}

/// Reads events until one matches, returning everything read (the match last).
pub async fn events_until(
    conversation: &Conversation,
    mut done: impl FnMut(&EventMsg) -> bool,
) -> anyhow::Result<Vec<Event>> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, conversation.next_event())
            .await
            .with_context(|| format!("timed out; events so far: {:#?}", kinds(&seen)))??;
        let stop = done(&event.msg);
        seen.push(event);
        if stop {
            return Ok(seen);
        }
    }
}

/// Reads events until the turn ends (complete, aborted or error).
pub async fn until_turn_end(conversation: &Conversation) -> anyhow::Result<Vec<Event>> {
    events_until(conversation, |msg| {
        matches!(
            msg,
            EventMsg::TaskComplete(_) | EventMsg::TurnAborted(_) | EventMsg::Error(_)
        )
    })
    .await
}

/// The `type` tag of each event, for readable assertions.
pub fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            serde_json::to_value(&event.msg)
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect()
}

pub fn last_agent_message(events: &[Event]) -> Option<String> {
    events.iter().find_map(|event| match &event.msg {
        EventMsg::TaskComplete(done) => done.last_agent_message.clone(),
        _ => None,
    })
}

/// Reads one turn's events, answering each exec approval request with the next of
/// `decisions`; returns every event and the requests seen. An unexpected request is an error.
pub async fn answer_approvals(
    conversation: &Conversation,
    decisions: &[keel_protocol::ReviewDecision],
) -> anyhow::Result<(Vec<Event>, Vec<keel_protocol::ExecApprovalRequestEvent>)> {
    let mut decisions = decisions.iter();
    let (mut all, mut requests) = (Vec::new(), Vec::new());
    loop {
        let events = events_until(conversation, |msg| {
            matches!(
                msg,
                EventMsg::ExecApprovalRequest(_)
                    | EventMsg::TaskComplete(_)
                    | EventMsg::TurnAborted(_)
                    | EventMsg::Error(_)
            )
        })
        .await?;
        let last = events.last().map(|event| event.msg.clone());
        all.extend(events);
        let Some(EventMsg::ExecApprovalRequest(request)) = last else {
            return Ok((all, requests));
        };
        let decision = decisions
            .next()
            .copied()
            .ok_or_else(|| anyhow::anyhow!("unexpected approval request: {:?}", request.reason))?;
        conversation
            .submit(Op::ExecApproval {
                id: request.call_id.clone(),
                decision,
            })
            .await?;
        requests.push(request);
    }
}

/// A directory outside every writable root of [`workspace_write`]'s policy, wherever the
/// checkout lives: that policy turns off the `/tmp` and `$TMPDIR` roots.
pub fn outside_dir() -> anyhow::Result<tempfile::TempDir> {
    Ok(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?)
}

/// `workspace-write` with only the workspace writable: the temp roots are excluded so a
/// checkout (and so [`outside_dir`]) under `/tmp` is still outside.
pub async fn workspace_write(
    script: keel_test_support::Script,
    approval: &str,
) -> anyhow::Result<TestEnv> {
    TestEnv::new(
        script,
        &[
            ("sandbox_mode", "workspace-write".into()),
            ("approval_policy", approval.into()),
            ("sandbox_workspace_write.exclude_slash_tmp", true.into()),
            (
                "sandbox_workspace_write.exclude_tmpdir_env_var",
                true.into(),
            ),
        ],
    )
    .await
}
