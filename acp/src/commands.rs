//! Slash commands: what the editor offers to type as `/name` (Keel's `compact` and `review`,
//! then each enabled skill of the session's folder), and what a prompt typed so does. Any
//! other prompt, `/usr/bin/env` included, goes to the model as typed.

use keel_protocol::JsonRpcErrorObject;
use keel_protocol::acp::{AvailableCommand, AvailableCommandInput, ContentBlock, SessionUpdate};
use keel_protocol::app_server::{ReviewTarget, SkillMetadata, SkillsListParams, client_request};

use crate::agent::Agent;

const COMPACT: &str = "compact";
const REVIEW: &str = "review";

/// What a prompt typed as a command asks for.
pub(crate) enum Command {
    /// Summarise the conversation to free the model's context.
    Compact,
    /// A review of the changes (or of what the text asks).
    Review(ReviewTarget),
    /// A turn with this prompt instead (a skill named for the model: `$skill what`).
    Prompt(Vec<ContentBlock>),
}

impl Agent {
    /// Offers the session's commands to the editor.
    pub(crate) async fn announce_commands(&self, session_id: &str) {
        let mut commands = vec![
            AvailableCommand {
                name: COMPACT.to_string(),
                description: "Summarize the conversation so far to free the model's context"
                    .to_string(),
                input: None,
            },
            AvailableCommand {
                name: REVIEW.to_string(),
                description: "Review the uncommitted changes, or what you describe".to_string(),
                input: Some(AvailableCommandInput {
                    hint: "what to review (nothing: the uncommitted changes)".to_string(),
                }),
            },
        ];
        for skill in self.skills_of(session_id).await {
            if commands.iter().any(|command| command.name == skill.name) {
                continue;
            }
            commands.push(AvailableCommand {
                name: skill.name,
                description: skill.short_description.unwrap_or(skill.description),
                input: Some(AvailableCommandInput {
                    hint: "what to do with the skill".to_string(),
                }),
            });
        }
        self.send_update(
            session_id,
            SessionUpdate::AvailableCommandsUpdate {
                available_commands: commands,
            },
        )
        .await;
    }

    /// The enabled skills a thread in the session's folder is offered.
    async fn skills_of(&self, session_id: &str) -> Vec<SkillMetadata> {
        let Some(cwd) = self
            .sessions
            .with(session_id, |session| session.cwd.display().to_string())
        else {
            return Vec::new();
        };
        match self
            .client
            .request::<client_request::SkillsList>(SkillsListParams {
                cwds: vec![cwd],
                force_reload: false,
            })
            .await
        {
            Ok(listed) => listed
                .data
                .into_iter()
                .flat_map(|entry| entry.skills)
                .filter(|skill| skill.enabled)
                .collect(),
            Err(err) => {
                tracing::warn!("no skills to offer as commands: {err}");
                Vec::new()
            }
        }
    }

    /// The command a prompt types, if it types one of the session's.
    pub(crate) async fn command_of(
        &self,
        session_id: &str,
        prompt: &[ContentBlock],
    ) -> Result<Option<Command>, JsonRpcErrorObject> {
        let Some((ContentBlock::Text { text }, others)) = prompt.split_first() else {
            return Ok(None);
        };
        let Some(typed) = text.trim_start().strip_prefix('/') else {
            return Ok(None);
        };
        let (name, rest) = typed
            .split_once(char::is_whitespace)
            .map_or((typed, ""), |(name, rest)| (name, rest.trim()));
        match name {
            COMPACT => Ok(Some(Command::Compact)),
            REVIEW => Ok(Some(Command::Review(if rest.is_empty() {
                ReviewTarget::UncommittedChanges
            } else {
                ReviewTarget::Custom {
                    instructions: rest.to_string(),
                }
            }))),
            _ => {
                let skills = self.skills_of(session_id).await;
                if !skills.iter().any(|skill| skill.name == name) {
                    return Ok(None);
                }
                let mut prompt = vec![ContentBlock::text(format!("${name} {rest}").trim_end())];
                prompt.extend(others.iter().cloned());
                Ok(Some(Command::Prompt(prompt)))
            }
        }
    }
}
