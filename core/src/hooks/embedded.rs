//! Hooks an embedding program writes in Rust: registered on the manager's builder, told the
//! same JSON a command hook reads on stdin, and answering what a command hook could print, so
//! they block, add context, stop a turn or answer a permission request exactly as the user's
//! hooks do. They run beside the user's hooks (no trust needed: they are the program's own
//! code) and are not listed by `hooks/list`.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::event::HookEvent;
use super::run::{ProcessEnd, ProcessRun};

/// What a hook written in Rust answers; the same choices a command hook makes with its JSON
/// output (see `docs/hooks.md`). Start from [`HookResponse::proceed`] or another constructor
/// and add to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResponse {
    output: Map<String, Value>,
}

impl HookResponse {
    /// Nothing to add: what the event is about goes ahead.
    pub fn proceed() -> Self {
        Self::default()
    }

    /// Blocks what the event is about (a tool call, a prompt, the end of a turn), telling the
    /// model `reason`; at events that cannot be blocked, the hook counts as failed.
    pub fn block(reason: impl Into<String>) -> Self {
        Self::proceed()
            .set("decision", json!("block"))
            .set("reason", json!(reason.into()))
    }

    /// Ends the turn after this event, with `reason`.
    pub fn stop(reason: impl Into<String>) -> Self {
        Self::proceed()
            .set("continue", json!(false))
            .set("stopReason", json!(reason.into()))
    }

    /// Approves the pending request without asking the user (`PermissionRequest`).
    pub fn allow() -> Self {
        Self::proceed().specific("decision", json!({"behavior": "allow"}))
    }

    /// Refuses the pending request without asking the user, with `message` (`PermissionRequest`).
    pub fn deny(message: impl Into<String>) -> Self {
        Self::proceed().specific(
            "decision",
            json!({"behavior": "deny", "message": message.into()}),
        )
    }

    /// Runs the tool with `input` instead of the model's (`PreToolUse`; a command's input is
    /// `{"command": "..."}`).
    pub fn replace_input(input: Value) -> Self {
        Self::proceed()
            .specific("permissionDecision", json!("allow"))
            .specific("updatedInput", input)
    }

    /// Adds `text` for the model to read (at the events that take context).
    pub fn with_context(self, text: impl Into<String>) -> Self {
        self.specific("additionalContext", json!(text.into()))
    }

    /// Shows `text` to the user as a warning; the model never sees it.
    pub fn with_system_message(self, text: impl Into<String>) -> Self {
        self.set("systemMessage", json!(text.into()))
    }

    /// Any JSON a command hook could print (for choices the constructors above do not name).
    pub fn from_json(output: Map<String, Value>) -> Self {
        Self { output }
    }

    fn set(mut self, key: &str, value: Value) -> Self {
        self.output.insert(key.to_string(), value);
        self
    }

    fn specific(mut self, key: &str, value: Value) -> Self {
        let entry = self
            .output
            .entry("hookSpecificOutput")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(specific) = entry {
            specific.insert(key.to_string(), value);
        }
        self
    }
}

/// A hook in Rust: given the event's JSON input, it answers a [`HookResponse`]. Closures
/// `Fn(Value) -> impl Future<Output = HookResponse>` implement it.
///
/// ```
/// use keel_core::hooks::{EmbeddedHook, HookEvent, HookResponse};
///
/// let no_force_push = EmbeddedHook::new("no-force-push", HookEvent::PreToolUse, |input: serde_json::Value| async move {
///     let command = input["tool_input"]["command"].as_str().unwrap_or_default().to_string();
///     if command.contains("push --force") {
///         HookResponse::block("force pushes are not allowed here")
///     } else {
///         HookResponse::proceed()
///     }
/// })
/// .matcher("Bash")
/// .expect("a valid pattern");
/// # let _ = no_force_push;
/// ```
pub trait HookCallback: Send + Sync {
    /// Decides about one event.
    fn call(&self, input: Value) -> BoxFuture<'static, HookResponse>;
}

impl<F, Fut> HookCallback for F
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = HookResponse> + Send + 'static,
{
    fn call(&self, input: Value) -> BoxFuture<'static, HookResponse> {
        Box::pin(self(input))
    }
}

/// A matcher pattern that is not a valid regular expression.
#[derive(Debug, thiserror::Error)]
#[error("invalid hook matcher `{pattern}`: {message}")]
pub struct HookMatcherError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong with it.
    pub message: String,
}

/// A hook in Rust, with the event it runs at and the tool (or source) names it applies to.
#[derive(Clone)]
pub struct EmbeddedHook {
    name: String,
    event: HookEvent,
    matcher: Option<regex::Regex>,
    timeout: Duration,
    callback: Arc<dyn HookCallback>,
}

impl EmbeddedHook {
    /// A hook called `name` (in messages about it) that runs `callback` at every `event`.
    pub fn new(
        name: impl Into<String>,
        event: HookEvent,
        callback: impl HookCallback + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            event,
            matcher: None,
            timeout: Duration::from_secs(super::config::DEFAULT_TIMEOUT_SECS),
            callback: Arc::new(callback),
        }
    }

    /// Runs only for names (tool names such as `Bash`, session-start sources) that `pattern`
    /// matches whole, as a user's `matcher`; `""` and `*` match every name.
    pub fn matcher(mut self, pattern: &str) -> Result<Self, HookMatcherError> {
        if matches!(pattern, "" | "*") {
            self.matcher = None;
            return Ok(self);
        }
        let regex =
            regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|err| HookMatcherError {
                pattern: pattern.to_string(),
                message: err.to_string(),
            })?;
        self.matcher = Some(regex);
        Ok(self)
    }

    /// How long the hook may take before it counts as failed (ten minutes unless set).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The name it was given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it runs at `event` for `name`.
    pub(crate) fn applies(&self, event: HookEvent, name: Option<&str>) -> bool {
        self.event == event
            && match (&self.matcher, name) {
                (Some(regex), Some(name)) if event.uses_matcher() => regex.is_match(name),
                _ => true,
            }
    }

    /// Calls the hook with `input`, read as a command hook's run: its answer as the JSON
    /// output, a panic or a timeout as a failure.
    pub(crate) async fn run(&self, input: Value) -> ProcessRun {
        let started = Instant::now();
        let call = AssertUnwindSafe(self.callback.call(input)).catch_unwind();
        let end_and_output = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(response)) => (
                ProcessEnd::Exited(0),
                Value::Object(response.output).to_string(),
            ),
            Ok(Err(_)) => (
                ProcessEnd::NotStarted(format!("hook `{}` panicked", self.name)),
                String::new(),
            ),
            Err(_) => (ProcessEnd::TimedOut(self.timeout), String::new()),
        };
        ProcessRun {
            end: end_and_output.0,
            stdout: end_and_output.1,
            stderr: String::new(),
            duration: started.elapsed(),
        }
    }
}

impl fmt::Debug for EmbeddedHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedHook")
            .field("name", &self.name)
            .field("event", &self.event)
            .field("matcher", &self.matcher.as_ref().map(regex::Regex::as_str))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl PartialEq for EmbeddedHook {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.callback, &other.callback)
            && self.name == other.name
            && self.event == other.event
    }
}

impl Eq for EmbeddedHook {}
