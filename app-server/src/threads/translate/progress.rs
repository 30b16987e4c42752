//! What the running turn reports about itself: its plan, its diff, token usage, rate limits,
//! compactions and the thread's goal.

use keel_protocol::app_server::{
    ContextCompactedNotification, ServerNotification, ThreadIdNotification, ThreadItem,
    ThreadTokenUsage, ThreadTokenUsageUpdatedNotification, TurnDiffUpdatedNotification, TurnPlan,
    TurnPlanStep, TurnPlanStepStatus, TurnPlanUpdatedNotification,
};
use keel_protocol::{EventMsg, StepStatus};

use super::{Output, Translator};

impl Translator {
    /// Maps one of its events; other events give nothing.
    pub(super) fn progress(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match msg {
            EventMsg::RateLimits(limits) => {
                out.push(Output::notify(
                    ServerNotification::AccountRateLimitsUpdated(
                        keel_protocol::app_server::AccountRateLimitsUpdatedNotification {
                            rate_limits: limits.clone(),
                        },
                    ),
                ));
            }
            EventMsg::ThreadGoalUpdated(updated) => {
                out.push(Output::notify(ServerNotification::ThreadGoalUpdated(
                    keel_protocol::app_server::ThreadGoalUpdatedNotification {
                        thread_id,
                        turn_id: updated.turn_id.clone(),
                        goal: updated.goal.clone(),
                    },
                )));
            }
            EventMsg::ThreadGoalCleared => {
                out.push(Output::notify(ServerNotification::ThreadGoalCleared(
                    ThreadIdNotification { thread_id },
                )));
            }
            EventMsg::ContextCompactionStarted(compaction) => {
                out.extend(self.start_once(ThreadItem::ContextCompaction {
                    id: compaction.id.clone(),
                }));
            }
            EventMsg::ContextCompacted(compaction) => {
                out.extend(self.complete(ThreadItem::ContextCompaction {
                    id: compaction.id.clone(),
                }));
                let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                out.push(Output::notify(ServerNotification::ThreadCompacted(
                    ContextCompactedNotification {
                        thread_id: thread_id.clone(),
                        turn_id,
                    },
                )));
            }
            EventMsg::PlanUpdate(plan) => {
                let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                let recorded = TurnPlan {
                    explanation: plan.explanation.clone(),
                    plan: plan
                        .plan
                        .iter()
                        .map(|item| TurnPlanStep {
                            step: item.step.clone(),
                            status: match item.status {
                                StepStatus::Pending => TurnPlanStepStatus::Pending,
                                StepStatus::InProgress => TurnPlanStepStatus::InProgress,
                                StepStatus::Completed => TurnPlanStepStatus::Completed,
                            },
                        })
                        .collect(),
                };
                if let Some(turn) = self.turn.as_mut() {
                    turn.plan = Some(recorded.clone());
                }
                out.push(Output::notify(ServerNotification::TurnPlanUpdated(
                    TurnPlanUpdatedNotification {
                        thread_id,
                        turn_id,
                        explanation: recorded.explanation,
                        plan: recorded.plan,
                    },
                )));
            }
            EventMsg::TurnDiff(diff) => {
                let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                out.push(Output::notify(ServerNotification::TurnDiffUpdated(
                    TurnDiffUpdatedNotification {
                        thread_id,
                        turn_id,
                        diff: diff.unified_diff.clone(),
                    },
                )));
            }
            EventMsg::TokenCount(count) => {
                if let Some(info) = &count.info {
                    let turn_id = self.active_turn_id().unwrap_or_default().to_string();
                    let usage = ThreadTokenUsage::from(info.clone());
                    if let Some(turn) = self.turn.as_mut() {
                        turn.token_usage = Some(usage.clone());
                    }
                    out.push(Output::notify(ServerNotification::ThreadTokenUsageUpdated(
                        ThreadTokenUsageUpdatedNotification {
                            thread_id,
                            turn_id,
                            token_usage: usage,
                        },
                    )));
                }
            }
            _ => {}
        }
        out
    }
}
