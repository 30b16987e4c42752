//! Thread goals: an objective the agent keeps working toward, turn after turn, until it is
//! complete, blocked, paused or out of budget.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a goal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadGoalStatus {
    /// Being worked on: each finished turn is followed by another.
    Active,
    /// Held by the user; nothing runs until it is resumed.
    Paused,
    /// The agent, or a failed turn, says it cannot go on.
    Blocked,
    /// The provider's usage limit stopped it.
    UsageLimited,
    /// Its token budget is spent.
    BudgetLimited,
    /// Achieved.
    Complete,
}

/// Who changed a goal: a person (the change is noted for the model) or the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadGoalMutationOrigin {
    /// The user, through a client.
    User,
    /// A program or the engine.
    Automatic,
}

/// A thread's goal and what pursuing it has cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoal {
    /// The thread.
    pub thread_id: String,
    /// What to achieve.
    pub objective: String,
    /// Where it stands.
    pub status: ThreadGoalStatus,
    /// Tokens it may use (`None`: unbounded).
    #[serde(default)]
    pub token_budget: Option<i64>,
    /// Tokens used while it was active: input not served from cache, plus output.
    pub tokens_used: i64,
    /// Wall-clock seconds it was active.
    pub time_used_seconds: i64,
    /// When it was set (Unix seconds).
    pub created_at: i64,
    /// When it last changed (Unix seconds).
    pub updated_at: i64,
}

/// `thread_goal_updated`: the goal was set or changed, or its usage grew.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalUpdatedEvent {
    /// The turn the change happened in, if one was running.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The goal now.
    pub goal: ThreadGoal,
}
