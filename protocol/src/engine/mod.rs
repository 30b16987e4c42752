//! The engine's queue protocol: clients send [`Submission`]s carrying an [`Op`] and read
//! [`Event`]s whose [`EventMsg`] is tagged by `type` in snake_case, as Codex clients expect.

mod collab;
mod dynamic_tools;
mod error_info;
mod event;
mod file_change;
mod goal;
mod input;
mod mcp_events;
mod op;
mod parsed_command;
mod plan;
mod policy;
mod program_tools;
mod rate_limits;
mod reasoning_effort;
mod review;
mod sub_agent_activity;
mod token_usage;
mod tool_events;
mod user_input_request;

pub use collab::*;
pub use dynamic_tools::*;
pub use error_info::CodexErrorInfo;
pub use event::*;
pub use file_change::FileChange;
pub use goal::*;
pub use input::InputItem;
pub use mcp_events::*;
pub use op::{Op, Submission};
pub use parsed_command::ParsedCommand;
pub use plan::{PlanItem, StepStatus, UpdatePlanArgs};
pub use policy::{
    AskForApproval, CollaborationModeKind, ReviewDecision, SandboxMode, SandboxPolicy,
};
pub use program_tools::{ToolCallBeginEvent, ToolCallEndEvent};
pub use rate_limits::{RateLimitSnapshot, RateLimitWindow};
pub use reasoning_effort::{InvalidReasoningEffort, ReasoningEffort};
pub use review::*;
pub use sub_agent_activity::*;
pub use token_usage::{TokenUsage, TokenUsageInfo};
pub use tool_events::*;
pub use user_input_request::*;
