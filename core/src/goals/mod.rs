//! A conversation's goal: the objective, its status and what pursuing it has cost, shared by
//! the engine (which keeps working while it is active) and the conversation's handle (which
//! clients change it through).

mod prompts;

use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use keel_protocol::{ThreadGoal, ThreadGoalStatus};

pub(crate) use prompts::{budget_reached_message, continuation_message, user_change_note};

/// The longest objective accepted, in characters.
pub const MAX_OBJECTIVE_CHARS: usize = 4000;

/// Why a goal change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GoalError {
    /// A change of fields without a goal to change (an objective creates one).
    #[error("the thread has no goal; set one with an objective first")]
    NoGoal,
    /// The objective is empty or blank.
    #[error("the goal objective must not be empty")]
    EmptyObjective,
    /// The objective is longer than [`MAX_OBJECTIVE_CHARS`].
    #[error("the goal objective must be at most {MAX_OBJECTIVE_CHARS} characters")]
    ObjectiveTooLong,
    /// A budget of zero tokens or less.
    #[error("a goal's token budget must be positive")]
    NonPositiveBudget,
    /// The model tried to create a goal while one is unfinished.
    #[error("this thread already has an unfinished goal; complete it before creating another")]
    Unfinished,
}

/// A change to a thread's goal; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoalUpdate {
    /// A new objective (required when there is no goal yet).
    pub objective: Option<String>,
    /// A new status.
    pub status: Option<ThreadGoalStatus>,
    /// `Some(None)` removes the budget; `None` keeps it.
    pub token_budget: Option<Option<i64>>,
}

/// The goal and the running clock of its active time.
#[derive(Debug)]
struct GoalRecord {
    /// The goal as of its last change (time used up to `active_since`).
    goal: ThreadGoal,
    /// Since when it has been active, if it is.
    active_since: Option<Instant>,
}

impl GoalRecord {
    fn snapshot(&self) -> ThreadGoal {
        let mut goal = self.goal.clone();
        if let Some(since) = self.active_since {
            goal.time_used_seconds += seconds(since.elapsed().as_secs());
        }
        goal
    }

    /// Moves to `status`, banking the active time so far.
    fn set_status(&mut self, status: ThreadGoalStatus) {
        if let Some(since) = self.active_since.take() {
            self.goal.time_used_seconds += seconds(since.elapsed().as_secs());
        }
        self.goal.status = status;
        if status == ThreadGoalStatus::Active {
            self.active_since = Some(Instant::now());
        }
        self.goal.updated_at = now();
    }
}

/// One conversation's goal.
#[derive(Debug)]
pub(crate) struct Goals {
    thread_id: String,
    record: Mutex<Option<GoalRecord>>,
}

impl Goals {
    pub(crate) fn new(thread_id: String) -> Self {
        Self {
            thread_id,
            record: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<GoalRecord>> {
        self.record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The goal now, if there is one.
    pub(crate) fn get(&self) -> Option<ThreadGoal> {
        self.lock().as_ref().map(GoalRecord::snapshot)
    }

    /// Whether there is a goal being worked on.
    pub(crate) fn is_active(&self) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|record| record.goal.status == ThreadGoalStatus::Active)
    }

    /// Puts back the goal a recorded conversation had (its active time restarts now).
    pub(crate) fn restore(&self, goal: Option<ThreadGoal>) {
        *self.lock() = goal.map(|mut goal| {
            goal.thread_id.clone_from(&self.thread_id);
            let active_since = (goal.status == ThreadGoalStatus::Active).then(Instant::now);
            GoalRecord { goal, active_since }
        });
    }

    /// A client's change: creates the goal (an objective is needed) or edits it in place,
    /// keeping its usage.
    pub(crate) fn set(&self, update: GoalUpdate) -> Result<ThreadGoal, GoalError> {
        let objective = update
            .objective
            .as_deref()
            .map(checked_objective)
            .transpose()?;
        if let Some(Some(budget)) = update.token_budget
            && budget <= 0
        {
            return Err(GoalError::NonPositiveBudget);
        }
        let mut record = self.lock();
        match record.as_mut() {
            Some(existing) => {
                if let Some(objective) = objective {
                    existing.goal.objective = objective;
                }
                if let Some(budget) = update.token_budget {
                    existing.goal.token_budget = budget;
                }
                existing.set_status(update.status.unwrap_or(existing.goal.status));
                Ok(existing.snapshot())
            }
            None => {
                let objective = objective.ok_or(GoalError::NoGoal)?;
                let created = self.fresh(
                    objective,
                    update.token_budget.flatten(),
                    update.status.unwrap_or(ThreadGoalStatus::Active),
                );
                let goal = created.snapshot();
                *record = Some(created);
                Ok(goal)
            }
        }
    }

    /// The model's `create_goal`: refused while a goal is unfinished; a complete one is
    /// replaced.
    pub(crate) fn create(
        &self,
        objective: &str,
        token_budget: Option<i64>,
    ) -> Result<ThreadGoal, GoalError> {
        let objective = checked_objective(objective)?;
        if token_budget.is_some_and(|budget| budget <= 0) {
            return Err(GoalError::NonPositiveBudget);
        }
        let mut record = self.lock();
        if record
            .as_ref()
            .is_some_and(|r| r.goal.status != ThreadGoalStatus::Complete)
        {
            return Err(GoalError::Unfinished);
        }
        let created = self.fresh(objective, token_budget, ThreadGoalStatus::Active);
        let goal = created.snapshot();
        *record = Some(created);
        Ok(goal)
    }

    /// Moves the goal to `status`; `None` when there is no goal.
    pub(crate) fn set_status(&self, status: ThreadGoalStatus) -> Option<ThreadGoal> {
        let mut record = self.lock();
        let record = record.as_mut()?;
        record.set_status(status);
        Some(record.snapshot())
    }

    /// Moves an active goal to `status` (a failed turn, say); `None` when it was not active.
    pub(crate) fn stop_if_active(&self, status: ThreadGoalStatus) -> Option<ThreadGoal> {
        let mut record = self.lock();
        let record = record
            .as_mut()
            .filter(|r| r.goal.status == ThreadGoalStatus::Active)?;
        record.set_status(status);
        Some(record.snapshot())
    }

    /// Adds a model response's tokens to an active goal. Returns the goal, and whether this
    /// response spent its budget (it is then `budgetLimited`); `None` when not active.
    pub(crate) fn account(&self, tokens: i64) -> Option<(ThreadGoal, bool)> {
        let mut record = self.lock();
        let record = record
            .as_mut()
            .filter(|r| r.goal.status == ThreadGoalStatus::Active)?;
        record.goal.tokens_used += tokens.max(0);
        let spent = record
            .goal
            .token_budget
            .is_some_and(|budget| record.goal.tokens_used >= budget);
        if spent {
            record.set_status(ThreadGoalStatus::BudgetLimited);
        }
        Some((record.snapshot(), spent))
    }

    /// Removes the goal; whether there was one.
    pub(crate) fn clear(&self) -> bool {
        self.lock().take().is_some()
    }

    fn fresh(
        &self,
        objective: String,
        token_budget: Option<i64>,
        status: ThreadGoalStatus,
    ) -> GoalRecord {
        let now = now();
        GoalRecord {
            goal: ThreadGoal {
                thread_id: self.thread_id.clone(),
                objective,
                status,
                token_budget,
                tokens_used: 0,
                time_used_seconds: 0,
                created_at: now,
                updated_at: now,
            },
            active_since: (status == ThreadGoalStatus::Active).then(Instant::now),
        }
    }
}

fn checked_objective(objective: &str) -> Result<String, GoalError> {
    let objective = objective.trim();
    if objective.is_empty() {
        return Err(GoalError::EmptyObjective);
    }
    if objective.chars().count() > MAX_OBJECTIVE_CHARS {
        return Err(GoalError::ObjectiveTooLong);
    }
    Ok(objective.to_string())
}

fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| seconds(elapsed.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_once_and_usage_only_counts_while_active() {
        let goals = Goals::new("t".into());
        let goal = goals
            .set(GoalUpdate {
                objective: Some("  ship it  ".into()),
                token_budget: Some(Some(100)),
                ..GoalUpdate::default()
            })
            .unwrap();
        assert_eq!(goal.objective, "ship it");
        assert_eq!(goal.status, ThreadGoalStatus::Active);
        assert_eq!(
            goals.account(60).map(|(g, spent)| (g.tokens_used, spent)),
            Some((60, false))
        );
        let (goal, spent) = goals.account(50).unwrap();
        assert!(spent);
        assert_eq!(goal.status, ThreadGoalStatus::BudgetLimited);
        assert_eq!(goals.account(10), None, "not active: not counted");
        assert_eq!(goals.get().unwrap().tokens_used, 110);
    }

    #[test]
    fn edits_keep_usage_and_bad_changes_are_refused() {
        let goals = Goals::new("t".into());
        assert_eq!(goals.set(GoalUpdate::default()), Err(GoalError::NoGoal));
        let blank = GoalUpdate {
            objective: Some(" ".into()),
            ..GoalUpdate::default()
        };
        assert_eq!(goals.set(blank), Err(GoalError::EmptyObjective));
        let long = GoalUpdate {
            objective: Some("x".repeat(MAX_OBJECTIVE_CHARS + 1)),
            ..GoalUpdate::default()
        };
        assert_eq!(goals.set(long), Err(GoalError::ObjectiveTooLong));
        goals.create("first", None).unwrap();
        goals.account(5);
        assert_eq!(goals.create("second", None), Err(GoalError::Unfinished));
        let edited = goals
            .set(GoalUpdate {
                objective: Some("renamed".into()),
                status: Some(ThreadGoalStatus::Paused),
                token_budget: Some(Some(0)),
            })
            .unwrap_err();
        assert_eq!(edited, GoalError::NonPositiveBudget);
        let edited = goals
            .set(GoalUpdate {
                objective: Some("renamed".into()),
                status: Some(ThreadGoalStatus::Paused),
                token_budget: None,
            })
            .unwrap();
        assert_eq!(
            (edited.objective.as_str(), edited.tokens_used),
            ("renamed", 5)
        );
        goals.set_status(ThreadGoalStatus::Complete);
        assert_eq!(goals.create("second", None).unwrap().tokens_used, 0);
        assert!(goals.clear());
        assert!(!goals.clear());
    }
}
