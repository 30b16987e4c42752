//! Slash commands: what the editor offers to type as `/name` (Keel's `compact`, `review`,
//! `goal` and `revert`, then each enabled skill of the session's folder), and what a prompt
//! typed so does. Any other prompt, `/usr/bin/env` included, goes to the model as typed.

use keel_protocol::JsonRpcErrorObject;
use keel_protocol::acp::{AvailableCommand, AvailableCommandInput, ContentBlock, SessionUpdate};
use keel_protocol::app_server::{
    ReviewTarget, SkillMetadata, SkillsListParams, ThreadGoalClearParams, ThreadGoalGetParams,
    ThreadReadParams, ThreadRevertParams, client_request,
};
use keel_protocol::{ThreadGoalMutationOrigin, ThreadGoalStatus};

use crate::agent::engine_error;

use crate::agent::Agent;

const COMPACT: &str = "compact";
const REVIEW: &str = "review";
const GOAL: &str = "goal";
const REVERT: &str = "revert";

/// What a prompt typed as a command asks for.
pub(crate) enum Command {
    /// Summarise the conversation to free the model's context.
    Compact,
    /// A review of the changes (or of what the text asks).
    Review(ReviewTarget),
    /// The thread's goal: set to the text (and pursued at once: a turn toward it), cleared
    /// (`clear`), or shown (nothing).
    Goal(String),
    /// Undo the last turn: its messages and the files it changed.
    Revert,
    /// A turn with this prompt instead (a skill named for the model: `$skill what`).
    Prompt(Vec<ContentBlock>),
}

impl Agent {
    /// Offers the session's commands to the editor.
    pub(crate) async fn announce_commands(&self, session_id: &str) {
        let available_commands = self.commands_of(session_id).await;
        self.send_update(
            session_id,
            SessionUpdate::AvailableCommandsUpdate { available_commands },
        )
        .await;
    }

    /// The session's commands: Keel's own, then its enabled skills.
    pub(crate) async fn commands_of(&self, session_id: &str) -> Vec<AvailableCommand> {
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
            AvailableCommand {
                name: GOAL.to_string(),
                description: "Set the goal the agent works toward (`clear` drops it; nothing \
                              shows it)"
                    .to_string(),
                input: Some(AvailableCommandInput {
                    hint: "the objective".to_string(),
                }),
            },
            AvailableCommand {
                name: REVERT.to_string(),
                description: "Undo the last turn: its messages and the files it changed"
                    .to_string(),
                input: None,
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
        commands
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
            GOAL => Ok(Some(Command::Goal(rest.to_string()))),
            REVERT => Ok(Some(Command::Revert)),
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

impl Agent {
    /// Carries out a command that needs no turn (`goal`, `revert`); what to tell the person.
    pub(crate) async fn run_at_once(
        &self,
        session_id: &str,
        command: &Command,
    ) -> Result<Option<String>, JsonRpcErrorObject> {
        let thread_id = session_id.to_string();
        Ok(Some(match command {
            Command::Goal(objective) if objective.is_empty() => {
                let current = self
                    .client
                    .request::<client_request::ThreadGoalGet>(ThreadGoalGetParams { thread_id })
                    .await
                    .map_err(engine_error)?;
                match current.goal {
                    Some(goal) => {
                        format!("Goal ({}): {}", goal_status(goal.status), goal.objective)
                    }
                    None => "No goal is set.".to_string(),
                }
            }
            Command::Goal(objective) if objective == "clear" => {
                let cleared = self
                    .client
                    .request::<client_request::ThreadGoalClear>(ThreadGoalClearParams {
                        thread_id,
                        origin: Some(ThreadGoalMutationOrigin::User),
                    })
                    .await
                    .map_err(engine_error)?;
                if cleared.cleared {
                    "Goal cleared.".to_string()
                } else {
                    "No goal was set.".to_string()
                }
            }
            Command::Revert => {
                let read = self
                    .client
                    .request::<client_request::ThreadRead>(ThreadReadParams {
                        thread_id: thread_id.clone(),
                        include_turns: true,
                    })
                    .await
                    .map_err(engine_error)?;
                let Some(last) = read.thread.turns.last() else {
                    return Ok(Some("There is no turn to revert.".to_string()));
                };
                let reverted = self
                    .client
                    .request::<client_request::ThreadRevert>(ThreadRevertParams {
                        thread_id,
                        before_turn_id: last.id.clone(),
                        restore_files: true,
                    })
                    .await
                    .map_err(engine_error)?;
                let files: Vec<String> = reverted
                    .restored_files
                    .iter()
                    .map(|path| format!("`{}`", path.display()))
                    .collect();
                if files.is_empty() {
                    "Reverted the last turn.".to_string()
                } else {
                    format!("Reverted the last turn and put back {}.", files.join(", "))
                }
            }
            // A goal to pursue starts a turn toward it: the prompt waits for that turn.
            Command::Goal(_) | Command::Compact | Command::Review(_) | Command::Prompt(_) => {
                return Ok(None);
            }
        }))
    }
}

fn goal_status(status: ThreadGoalStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}
