//! Review mode: what a review turn asks the model, how its answer is read, and how the
//! verdict is shown to people and remembered by the conversation.

mod output;
mod target;

pub use output::{REVIEW_FAILED_TEXT, parse_review_output, render_review};
pub use target::{ResolvedReview, ReviewError, resolve_review};

/// The reviewer's instructions: they replace the base instructions for a review turn.
pub(crate) const REVIEW_INSTRUCTIONS: &str = include_str!("instructions.md");

/// The JSON Schema the reviewer's final answer is held to (strict: every field required).
pub(crate) fn review_output_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings", "overall_correctness", "overall_explanation", "overall_confidence_score"],
        "properties": {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["title", "body", "confidence_score", "priority", "code_location"],
                    "properties": {
                        "title": { "type": "string" },
                        "body": { "type": "string" },
                        "confidence_score": { "type": "number" },
                        "priority": { "type": "integer", "minimum": 0, "maximum": 3 },
                        "code_location": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["absolute_file_path", "line_range"],
                            "properties": {
                                "absolute_file_path": { "type": "string" },
                                "line_range": {
                                    "type": "object",
                                    "additionalProperties": false,
                                    "required": ["start", "end"],
                                    "properties": {
                                        "start": { "type": "integer", "minimum": 1 },
                                        "end": { "type": "integer", "minimum": 1 }
                                    }
                                }
                            }
                        }
                    }
                }
            },
            "overall_correctness": { "type": "string", "enum": ["patch is correct", "patch is incorrect"] },
            "overall_explanation": { "type": "string" },
            "overall_confidence_score": { "type": "number" }
        }
    })
}

/// What the conversation keeps of a finished review: the request as the user's side, the
/// rendered verdict as the assistant's, so a follow-up ("fix the first one") has it.
pub(crate) fn history_items(label: &str, rendered: &str) -> Vec<crate::models::ResponseItem> {
    vec![
        crate::models::ResponseItem::user_text(format!(
            "<review_request>\nI asked for a code review of {label}. The reviewer worked \
             separately; its report is the next message.\n</review_request>"
        )),
        crate::models::ResponseItem::Message {
            id: None,
            role: "assistant".to_string(),
            content: vec![crate::models::ContentItem::OutputText {
                text: rendered.to_string(),
            }],
        },
    ]
}
