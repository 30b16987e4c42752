//! Finding the recorded conversations whose messages mention something: the first user or
//! assistant message that contains the text (case-insensitive), as a short snippet.

use std::io::BufRead;
use std::path::Path;

use keel_protocol::EventMsg;

use super::{RolloutItem, RolloutLine};

/// About how many characters of the message a snippet shows around the match.
const SNIPPET_CHARS: usize = 150;

/// The snippet of the first user or assistant message in the rollout at `path` that
/// contains `term` (already lowercased); `None` when none does or the file cannot be read.
/// Reads line by line and stops at the first match.
pub fn first_message_match(path: &Path, term: &str) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else {
            break;
        };
        // Only message events are parsed; the cheap test skips everything else.
        if !(line.contains(r#""type":"user_message""#)
            || line.contains(r#""type":"agent_message""#))
            || !line.to_lowercase().contains(term)
        {
            continue;
        }
        let Ok(parsed) = serde_json::from_str::<RolloutLine>(&line) else {
            continue;
        };
        let text = match parsed.item {
            RolloutItem::EventMsg(EventMsg::UserMessage(message)) => message.message,
            RolloutItem::EventMsg(EventMsg::AgentMessage(message)) => message.message,
            _ => continue,
        };
        if let Some(snippet) = snippet(&text, term) {
            return Some(snippet);
        }
    }
    None
}

/// Every user and assistant message of the rollout at `path`, in order (for the index).
#[cfg(feature = "thread-index")]
pub(crate) fn message_texts(path: &Path) -> Vec<String> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut texts = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else {
            break;
        };
        if !(line.contains(r#""type":"user_message""#)
            || line.contains(r#""type":"agent_message""#))
        {
            continue;
        }
        let Ok(parsed) = serde_json::from_str::<RolloutLine>(&line) else {
            continue;
        };
        match parsed.item {
            RolloutItem::EventMsg(EventMsg::UserMessage(message)) => texts.push(message.message),
            RolloutItem::EventMsg(EventMsg::AgentMessage(message)) => texts.push(message.message),
            _ => {}
        }
    }
    texts
}

/// `text` with whitespace collapsed, cut to a window around the first `term`, with `...`
/// where it was cut.
pub(crate) fn snippet(text: &str, term: &str) -> Option<String> {
    let flat: Vec<char> = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .collect();
    let lower: Vec<char> = flat.iter().flat_map(|c| c.to_lowercase()).collect();
    let needle: Vec<char> = term.chars().collect();
    if needle.is_empty() || lower.len() != flat.len() {
        // Lowercasing changed the length (rare scripts): match on the whole text instead.
        let joined: String = flat.iter().collect();
        return joined.to_lowercase().contains(term).then(|| clip(&flat, 0));
    }
    let at = lower
        .windows(needle.len())
        .position(|window| window == needle.as_slice())?;
    Some(clip(&flat, at))
}

fn clip(flat: &[char], at: usize) -> String {
    let start = at.saturating_sub(SNIPPET_CHARS / 3);
    let end = (start + SNIPPET_CHARS).min(flat.len());
    let mut out = String::new();
    if start > 0 {
        out.push_str("... ");
    }
    out.extend(&flat[start..end]);
    if end < flat.len() {
        out.push_str(" ...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn a_snippet_is_a_window_around_the_match() {
        assert_eq!(
            snippet("find  the\nKiwi here", "kiwi").as_deref(),
            Some("find the Kiwi here")
        );
        let long = format!("{} needle {}", "a ".repeat(200), "b ".repeat(200));
        let cut = snippet(&long, "needle").unwrap_or_default();
        assert!(
            cut.starts_with("... ") && cut.ends_with(" ...") && cut.contains("needle"),
            "{cut}"
        );
        assert_eq!(snippet("nothing here", "kiwi"), None);
    }
}
