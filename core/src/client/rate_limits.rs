//! Reading a provider's rate-limit headers: Codex's `x-codex-primary-*` /
//! `x-codex-secondary-*` windows, else OpenAI's `x-ratelimit-*-requests` (primary) and
//! `x-ratelimit-*-tokens` (secondary).

use keel_protocol::{RateLimitSnapshot, RateLimitWindow};
use reqwest::header::HeaderMap;

fn header<T: std::str::FromStr>(headers: &HeaderMap, name: &str) -> Option<T> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// `1s`, `6m0s`, `20ms`, `1h2m3.5s` (OpenAI's reset format) in seconds.
fn duration_seconds(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut number = String::new();
    let mut chars = text.trim().chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let value: f64 = number.parse().ok()?;
        number.clear();
        let scale = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += value * scale;
        any = true;
    }
    (any && number.is_empty()).then_some(total)
}

fn codex_window(headers: &HeaderMap, which: &str, now: i64) -> Option<RateLimitWindow> {
    let used: f64 = header(headers, &format!("x-codex-{which}-used-percent"))?;
    let resets_at = header::<i64>(headers, &format!("x-codex-{which}-reset-at")).or_else(|| {
        header::<i64>(headers, &format!("x-codex-{which}-reset-after-seconds"))
            .map(|s| now.saturating_add(s))
    });
    Some(RateLimitWindow {
        used_percent: used.round().clamp(0.0, 100.0) as i32,
        window_duration_mins: header(headers, &format!("x-codex-{which}-window-minutes")),
        resets_at,
    })
}

fn openai_window(headers: &HeaderMap, unit: &str, now: i64) -> Option<RateLimitWindow> {
    let limit: f64 = header(headers, &format!("x-ratelimit-limit-{unit}"))?;
    let remaining: f64 = header(headers, &format!("x-ratelimit-remaining-{unit}"))?;
    if limit <= 0.0 {
        return None;
    }
    let used = ((limit - remaining) / limit * 100.0)
        .round()
        .clamp(0.0, 100.0) as i32;
    let resets_at = headers
        .get(format!("x-ratelimit-reset-{unit}"))
        .and_then(|v| v.to_str().ok())
        .and_then(duration_seconds)
        .map(|secs| now.saturating_add(secs.ceil() as i64));
    Some(RateLimitWindow {
        used_percent: used,
        window_duration_mins: None,
        resets_at,
    })
}

/// The rate limits a response's headers state, if they state any; `now` in Unix seconds.
pub(super) fn from_headers(headers: &HeaderMap, now: i64) -> Option<RateLimitSnapshot> {
    let primary =
        codex_window(headers, "primary", now).or_else(|| openai_window(headers, "requests", now));
    let secondary =
        codex_window(headers, "secondary", now).or_else(|| openai_window(headers, "tokens", now));
    (primary.is_some() || secondary.is_some()).then_some(RateLimitSnapshot { primary, secondary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_durations() {
        assert_eq!(duration_seconds("1s"), Some(1.0));
        assert_eq!(duration_seconds("6m0s"), Some(360.0));
        assert_eq!(duration_seconds("20ms"), Some(0.02));
        assert_eq!(duration_seconds("1h2m3.5s"), Some(3723.5));
        assert_eq!(duration_seconds("soon"), None);
    }
}
