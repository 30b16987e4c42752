//! The model asking the user questions mid-turn (`request_user_input`), and the answers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CallId, TurnId};

/// One choice offered with a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputOption {
    /// The choice, as shown.
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question the model asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestion {
    /// The model's id for the question; answers are keyed by it.
    pub id: String,
    /// A short heading.
    pub header: String,
    /// The question.
    pub question: String,
    /// Choices, when the question has them.
    #[serde(default)]
    pub options: Option<Vec<UserInputOption>>,
    /// Whether a free-text answer besides the options is welcome.
    #[serde(default)]
    pub is_other: bool,
    /// Whether the answer is a secret (not echoed).
    #[serde(default)]
    pub is_secret: bool,
}

/// Payload of `request_user_input`: the model waits for answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestUserInputEvent {
    /// Answer with `Op::UserInputAnswer { id: call_id, .. }`.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// The questions.
    pub questions: Vec<UserInputQuestion>,
}

/// The answers to one question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserInputAnswer {
    /// The chosen labels and/or free text.
    pub answers: Vec<String>,
}

/// The user's answers, keyed by question id; empty when the user could not or would not
/// answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserInputResponse {
    /// Answers by question id.
    pub answers: BTreeMap<String, UserInputAnswer>,
}
