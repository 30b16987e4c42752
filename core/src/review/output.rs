//! Reading the reviewer's answer and showing it.

use keel_protocol::ReviewOutput;

/// What is shown when the review ended without an answer.
pub const REVIEW_FAILED_TEXT: &str = "The review ended without a report.";

/// Reads the reviewer's final message: a JSON object, on its own, in a code fence or amid
/// prose. `None` when there is none; the caller then shows the text as written.
pub fn parse_review_output(text: &str) -> Option<ReviewOutput> {
    let text = text.trim();
    if let Some(output) = review_object(text) {
        return Some(output);
    }
    // The widest `{ ... }` span, then each fenced block.
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end > start
        && let Some(output) = review_object(&text[start..=end])
    {
        return Some(output);
    }
    text.split("```")
        .skip(1)
        .step_by(2)
        .find_map(|block| review_object(block.trim_start_matches("json").trim()))
}

/// `text` as a review: a JSON object with at least a verdict or findings (any other object
/// is the reviewer's prose, not a review with everything missing).
fn review_object(text: &str) -> Option<ReviewOutput> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    if !["findings", "overall_correctness", "overall_explanation"]
        .iter()
        .any(|key| object.contains_key(*key))
    {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// The review as people read it: the verdict, then each finding with its place and priority.
pub fn render_review(output: &ReviewOutput) -> String {
    let mut text = String::new();
    let verdict = output.overall_correctness.trim();
    let explanation = output.overall_explanation.trim();
    match (verdict.is_empty(), explanation.is_empty()) {
        (false, false) => text.push_str(&format!("Verdict: {verdict}. {explanation}")),
        (false, true) => text.push_str(&format!("Verdict: {verdict}.")),
        (true, false) => text.push_str(explanation),
        (true, true) => {}
    }
    if !output.findings.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let count = output.findings.len();
        text.push_str(&format!(
            "{count} finding{}:",
            if count == 1 { "" } else { "s" }
        ));
        for finding in &output.findings {
            let title = finding.title.trim();
            let tagged = if title.starts_with("[P") {
                title.to_string()
            } else {
                format!("[P{}] {title}", finding.priority)
            };
            let location = &finding.code_location;
            let lines = if location.line_range.start == location.line_range.end {
                location.line_range.start.to_string()
            } else {
                format!("{}-{}", location.line_range.start, location.line_range.end)
            };
            text.push_str(&format!(
                "\n\n- {tagged} — {}:{lines}",
                location.absolute_file_path.display()
            ));
            for line in finding.body.trim().lines() {
                text.push_str("\n  ");
                text.push_str(line);
            }
        }
    }
    if text.is_empty() {
        REVIEW_FAILED_TEXT.to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use keel_protocol::{ReviewCodeLocation, ReviewFinding, ReviewLineRange};
    use pretty_assertions::assert_eq;

    use super::*;

    fn finding(title: &str, priority: u8, start: u32, end: u32) -> ReviewFinding {
        ReviewFinding {
            title: title.into(),
            body: "first line\nsecond line".into(),
            confidence_score: 0.8,
            priority,
            code_location: ReviewCodeLocation {
                absolute_file_path: "/repo/src/lib.rs".into(),
                line_range: ReviewLineRange { start, end },
            },
        }
    }

    #[test]
    fn findings_render_with_priority_place_and_indented_body() {
        let output = ReviewOutput {
            findings: vec![
                finding("Off by one", 1, 3, 5),
                finding("[P0] Data loss", 0, 9, 9),
            ],
            overall_correctness: "patch is incorrect".into(),
            overall_explanation: "The loop skips the last row.".into(),
            overall_confidence_score: 0.7,
        };
        assert_eq!(
            render_review(&output),
            "Verdict: patch is incorrect. The loop skips the last row.\n\n2 findings:\n\n\
             - [P1] Off by one — /repo/src/lib.rs:3-5\n  first line\n  second line\n\n\
             - [P0] Data loss — /repo/src/lib.rs:9\n  first line\n  second line"
        );
        assert!(output.is_patch_incorrect());
    }

    #[test]
    fn an_empty_answer_says_the_review_failed() {
        let output = ReviewOutput {
            findings: Vec::new(),
            overall_correctness: String::new(),
            overall_explanation: String::new(),
            overall_confidence_score: 0.0,
        };
        assert_eq!(render_review(&output), REVIEW_FAILED_TEXT);
    }

    #[test]
    fn json_is_found_bare_fenced_or_amid_prose() {
        let json = r#"{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"fine","overall_confidence_score":0.9}"#;
        for text in [
            json.to_string(),
            format!("```json\n{json}\n```"),
            format!("Here is my review:\n{json}\nThanks."),
        ] {
            let parsed = parse_review_output(&text);
            assert_eq!(
                parsed.map(|o| o.overall_explanation),
                Some("fine".to_string()),
                "{text}"
            );
        }
        assert_eq!(parse_review_output("looks good to me"), None);
        assert_eq!(parse_review_output(r#"{"answer":"ok"}"#), None);
    }
}
