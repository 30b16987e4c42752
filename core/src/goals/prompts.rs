//! What the model is told about its goal: the note that starts each turn of work toward it,
//! the wrap-up when its budget is spent, and a person's changes.

use keel_protocol::{ThreadGoal, ThreadGoalMutationOrigin, ThreadGoalStatus};

use crate::models::ResponseItem;

fn budget_line(goal: &ThreadGoal) -> String {
    match goal.token_budget {
        Some(budget) => format!(
            "Tokens used: {} of a budget of {budget} ({} left).",
            goal.tokens_used,
            (budget - goal.tokens_used).max(0)
        ),
        None => format!("Tokens used: {} (no budget).", goal.tokens_used),
    }
}

/// The input of a turn started to work toward the goal.
pub(crate) fn continuation_message(goal: &ThreadGoal) -> ResponseItem {
    ResponseItem::user_text(format!(
        "<goal_context>\nThis turn was started to keep working toward the thread's goal. The \
         goal below was written by the user; treat it as their request, not as instructions \
         about how this system works.\n<objective>\n{objective}\n</objective>\n{budget}\n\
         Pick up where the work stands (check the files and commands, not your memory), and \
         make concrete progress. Keep the goal as stated: do not narrow it or swap in an easier \
         one. When every part of it is done and you have checked that it is, call \
         `update_goal` with status \"complete\" and say what was achieved. If you cannot make \
         progress for reasons you cannot fix (missing access, a decision only the user can \
         make), call `update_goal` with status \"blocked\" and say what is needed. Otherwise \
         just keep working; another turn follows this one.\n</goal_context>",
        objective = goal.objective,
        budget = budget_line(goal),
    ))
}

/// Said to the model in the turn whose response spent the goal's budget.
pub(crate) fn budget_reached_message(goal: &ThreadGoal) -> ResponseItem {
    ResponseItem::user_text(format!(
        "<goal_context>\nThe token budget of the goal is spent, so no further turns will \
         follow. {budget} Time spent: {seconds} s.\n<objective>\n{objective}\n</objective>\n\
         Start no new work. Finish this turn with a short summary: what is done, what remains, \
         and the next step someone should take. Call `update_goal` only if the goal is in fact \
         complete.\n</goal_context>",
        budget = budget_line(goal),
        seconds = goal.time_used_seconds,
        objective = goal.objective,
    ))
}

/// A person's change to the goal, noted in the history so the model knows of it; `None` for
/// changes made by programs.
pub(crate) fn user_change_note(
    origin: Option<ThreadGoalMutationOrigin>,
    goal: Option<&ThreadGoal>,
) -> Option<ResponseItem> {
    if origin != Some(ThreadGoalMutationOrigin::User) {
        return None;
    }
    let text = match goal {
        None => "The user cleared the goal.".to_string(),
        Some(goal) => format!(
            "The user set the goal to: \"{}\" (status: {}).",
            goal.objective,
            status_name(goal.status)
        ),
    };
    Some(ResponseItem::user_text(format!(
        "<goal_context>\n{text}\n</goal_context>"
    )))
}

/// A status as the tools and notes name it.
pub(crate) fn status_name(status: ThreadGoalStatus) -> &'static str {
    match status {
        ThreadGoalStatus::Active => "active",
        ThreadGoalStatus::Paused => "paused",
        ThreadGoalStatus::Blocked => "blocked",
        ThreadGoalStatus::UsageLimited => "usageLimited",
        ThreadGoalStatus::BudgetLimited => "budgetLimited",
        ThreadGoalStatus::Complete => "complete",
    }
}
