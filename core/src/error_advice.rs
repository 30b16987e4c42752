//! What a failed turn tells its user: the cause in one line and what to do next, and the kind
//! of failure (`codexErrorInfo`) for clients that react to it. The same in `keel exec`, the
//! MCP server and the app-server, since all of them show the turn's error event.

use keel_protocol::CodexErrorInfo;

use crate::error::{CoreError, body_error_code, is_quota_code};

/// The safety-policy refusal a provider's error code names (`cyber_policy`, `bio_policy`).
fn policy(code: &str) -> Option<CodexErrorInfo> {
    match code {
        "cyber_policy" => Some(CodexErrorInfo::CyberPolicy),
        "bio_policy" => Some(CodexErrorInfo::BioPolicy),
        _ => None,
    }
}

impl CoreError {
    /// The kind of failure, for clients that react to it.
    pub fn error_info(&self) -> Option<CodexErrorInfo> {
        Some(match self {
            Self::ContextWindowExceeded(_) => CodexErrorInfo::ContextWindowExceeded,
            err if err.is_context_overflow() => CodexErrorInfo::ContextWindowExceeded,
            Self::Connect { .. } => CodexErrorInfo::HttpConnectionFailed {
                http_status_code: None,
            },
            Self::Stream(_) | Self::StreamIdle(_) => CodexErrorInfo::ResponseStreamDisconnected {
                http_status_code: None,
            },
            Self::HttpStatus { status, body, .. } => {
                let code = body_error_code(body).unwrap_or_default();
                if let Some(refused) = policy(&code) {
                    return Some(refused);
                }
                match status {
                    401 | 403 => CodexErrorInfo::Unauthorized,
                    404 if code.contains("model") || body.contains("model") => {
                        CodexErrorInfo::ModelNotFound
                    }
                    429 if is_quota_code(&code) => CodexErrorInfo::UsageLimitExceeded,
                    429 => CodexErrorInfo::RateLimitExceeded,
                    503 | 529 => CodexErrorInfo::ServerOverloaded,
                    500..=599 => CodexErrorInfo::InternalServerError,
                    400..=499 => CodexErrorInfo::BadRequest,
                    _ => CodexErrorInfo::Other,
                }
            }
            Self::ResponseFailed { code, .. } => match code.as_deref() {
                Some(code) if let Some(refused) = policy(code) => refused,
                Some(code) if is_quota_code(code) => CodexErrorInfo::UsageLimitExceeded,
                Some("rate_limit_exceeded") => CodexErrorInfo::RateLimitExceeded,
                Some("server_is_overloaded" | "overloaded" | "slow_down") => {
                    CodexErrorInfo::ServerOverloaded
                }
                Some("server_error") => CodexErrorInfo::InternalServerError,
                _ => CodexErrorInfo::Other,
            },
            Self::MissingApiKey(_) => CodexErrorInfo::Unauthorized,
            _ => return None,
        })
    }

    /// What the user can do about it, when there is something to say.
    pub fn next_step(&self) -> Option<&'static str> {
        let cause_mentions = |text: &str, words: &[&str]| {
            let text = text.to_ascii_lowercase();
            words.iter().any(|word| text.contains(word))
        };
        match self {
            Self::Connect { cause, .. } if cause_mentions(cause, &["certificate", "tls"]) => Some(
                "the provider's TLS certificate was not accepted: point SSL_CERT_FILE at the CA bundle that signs it",
            ),
            Self::Connect { .. } => Some(
                "check the provider's `base_url` and that its server runs (`keel doctor` checks both)",
            ),
            _ => match self.error_info()? {
                CodexErrorInfo::ContextWindowExceeded => {
                    Some("start a new thread, or leave out large files and outputs from this one")
                }
                CodexErrorInfo::UsageLimitExceeded => {
                    Some("the account's quota is used up: check its plan and billing")
                }
                CodexErrorInfo::RateLimitExceeded => Some(
                    "the provider still limits the request rate after the retries: wait and try again, or run fewer agents at once",
                ),
                CodexErrorInfo::Unauthorized => Some(
                    "check the API key in the variable the provider's `env_key` names (`keel doctor` tries it)",
                ),
                CodexErrorInfo::ModelNotFound => Some(
                    "the provider has no such model: name one it serves with -m or `model` (`keel doctor` lists what it has)",
                ),
                CodexErrorInfo::CyberPolicy | CodexErrorInfo::BioPolicy => Some(
                    "the provider's safety policy refused this request: asking the same again will not help; change the task",
                ),
                CodexErrorInfo::ServerOverloaded | CodexErrorInfo::InternalServerError => {
                    Some("the provider is failing: try again later")
                }
                _ => None,
            },
        }
    }

    /// The message a user reads: the error, then what to do about it.
    pub fn user_message(&self) -> String {
        match self.next_step() {
            Some(step) => format!("{self}\n{step}"),
            None => self.to_string(),
        }
    }
}
