//! What `exec` and `wait` return to the model: a header (`Script completed`, `Script failed`,
//! `Script running with cell ID N`, `Script terminated`, and the call's wall time), then the
//! script's `text()` and `image()` items, within the call's token budget. Without items the
//! output is the header alone, as a string.

use std::time::Duration;

use crate::models::{CallOutput, ContentItem};

/// Bytes per token, for estimating without a tokenizer.
const BYTES_PER_TOKEN: u64 = 4;

/// One thing a script produced for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CellItem {
    /// `text(...)` or `notify(...)`.
    Text(String),
    /// `image(...)`: a `data:` URL.
    Image(String),
}

/// Where a cell stands when a call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CellStatus {
    /// Ran to its end, or called `exit()`.
    Completed,
    /// Threw, or could not run: the error.
    Failed(String),
    /// Still running; `wait` with this id.
    Running(String),
    /// Stopped by `wait` with `terminate`, or with its turn.
    Terminated,
}

/// The output of one `exec` or `wait` call.
pub(super) fn render(
    status: &CellStatus,
    wall: Duration,
    items: Vec<CellItem>,
    max_output_tokens: u64,
) -> CallOutput {
    let state = match status {
        CellStatus::Completed => "completed".to_string(),
        CellStatus::Failed(_) => "failed".to_string(),
        CellStatus::Running(id) => format!("running with cell ID {id}"),
        CellStatus::Terminated => "terminated".to_string(),
    };
    let header = format!(
        "Script {state}\nWall time {:.1} seconds\nOutput:\n",
        wall.as_secs_f64()
    );
    let mut items = within_budget(items, max_output_tokens);
    if let CellStatus::Failed(error) = status {
        items.push(CellItem::Text(format!("Script error:\n{error}")));
    }
    if items.is_empty() {
        return CallOutput::Text(header);
    }
    let mut parts = vec![ContentItem::InputText { text: header }];
    parts.extend(items.into_iter().map(|item| match item {
        CellItem::Text(text) => ContentItem::InputText { text },
        CellItem::Image(image_url) => ContentItem::InputImage { image_url },
    }));
    CallOutput::Parts(parts)
}

/// The items, with their text cut to `max_tokens` (head and tail kept, in one part) when it is
/// over; images are kept.
fn within_budget(items: Vec<CellItem>, max_tokens: u64) -> Vec<CellItem> {
    let text_bytes: usize = items
        .iter()
        .map(|item| match item {
            CellItem::Text(text) => text.len(),
            CellItem::Image(_) => 0,
        })
        .sum();
    let budget = usize::try_from(max_tokens.saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX);
    if text_bytes <= budget {
        return items;
    }
    let mut text = String::with_capacity(text_bytes);
    let mut images = Vec::new();
    for item in items {
        match item {
            CellItem::Text(part) => text.push_str(&part),
            CellItem::Image(url) => images.push(CellItem::Image(url)),
        }
    }
    let original = (text.len() as u64).div_ceil(BYTES_PER_TOKEN);
    let lines = text.lines().count();
    let cut = crate::unified_exec::head_and_tail(
        &text,
        usize::try_from(max_tokens).unwrap_or(usize::MAX),
    );
    let mut kept = vec![CellItem::Text(format!(
        "Warning: truncated output (original token count: {original})\nTotal output lines: {lines}\n\n{cut}"
    ))];
    kept.extend(images);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parts_and_budget() {
        let done = render(
            &CellStatus::Completed,
            Duration::from_millis(240),
            vec![],
            100,
        );
        assert_eq!(done, "Script completed\nWall time 0.2 seconds\nOutput:\n");
        let CallOutput::Parts(parts) = render(
            &CellStatus::Running("1".into()),
            Duration::from_millis(600),
            vec![
                CellItem::Text("start".into()),
                CellItem::Image("data:image/png;base64,AA".into()),
            ],
            100,
        ) else {
            panic!("parts expected");
        };
        assert_eq!(
            parts[0].text(),
            Some("Script running with cell ID 1\nWall time 0.6 seconds\nOutput:\n")
        );
        assert_eq!(parts[1].text(), Some("start"));
        assert!(matches!(parts[2], ContentItem::InputImage { .. }));
        let CallOutput::Parts(failed) = render(
            &CellStatus::Failed("Error: boom".into()),
            Duration::ZERO,
            vec![CellItem::Text("before".into())],
            100,
        ) else {
            panic!("parts expected");
        };
        assert_eq!(failed[2].text(), Some("Script error:\nError: boom"));
        let CallOutput::Parts(cut) = render(
            &CellStatus::Completed,
            Duration::ZERO,
            vec![CellItem::Text("line ".repeat(500))],
            20,
        ) else {
            panic!("parts expected");
        };
        let text = cut[1].text().unwrap_or_default();
        assert!(
            text.starts_with("Warning: truncated output (original token count: 625)"),
            "{text}"
        );
        assert!(text.len() < 400, "{text}");
    }
}
