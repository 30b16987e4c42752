//! Very long `additionalContext` from a hook is not put into the history whole: over the
//! hook's limit (`additionalContextLimit`, in tokens; 2,500 unless set, `0` for no limit) the
//! full text is saved to a file and the model reads its start and where the rest is, as Codex
//! does. Tokens are estimated at four characters each.

use std::path::{Path, PathBuf};

/// The limit when a hook does not set one, in tokens.
pub(crate) const DEFAULT_CONTEXT_LIMIT_TOKENS: u64 = 2_500;
/// Characters per token, for the estimate.
const CHARS_PER_TOKEN: u64 = 4;

/// `context` as the model gets it: whole when within `limit` tokens, else its start and
/// where the whole text was saved (or why it could not be).
pub(crate) fn fit_context(context: String, limit: Option<u64>, outputs_dir: &Path) -> String {
    let limit = limit.unwrap_or(DEFAULT_CONTEXT_LIMIT_TOKENS);
    let chars = u64::try_from(context.chars().count()).unwrap_or(u64::MAX);
    let tokens = chars.div_ceil(CHARS_PER_TOKEN);
    if limit == 0 || tokens <= limit {
        return context;
    }
    let keep = usize::try_from(limit.saturating_mul(CHARS_PER_TOKEN)).unwrap_or(usize::MAX);
    let head: String = context.chars().take(keep).collect();
    let saved = save(outputs_dir, &context);
    let whereabouts = match saved {
        Ok(path) => format!("The whole output is saved in {}.", path.display()),
        Err(err) => format!("The rest could not be saved ({err})."),
    };
    format!(
        "{head}\n\n[Keel: this hook's output was cut at about {limit} tokens of about {tokens}. {whereabouts}]"
    )
}

fn save(dir: &Path, text: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{}.txt", uuid::Uuid::new_v4()));
    std::fs::write(&path, text)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_context_stays_and_long_context_is_saved_whole() -> std::io::Result<()> {
        let home = tempfile::tempdir()?;
        let dir = home.path().join("hook-outputs/session");
        assert_eq!(fit_context("short".into(), None, &dir), "short");
        let long = "x".repeat(40);
        assert_eq!(fit_context(long.clone(), Some(0), &dir), long);
        let fitted = fit_context(long.clone(), Some(5), &dir);
        assert!(fitted.starts_with(&"x".repeat(20)), "{fitted}");
        assert!(!fitted.starts_with(&"x".repeat(21)), "{fitted}");
        assert!(fitted.contains("about 5 tokens of about 10"), "{fitted}");
        let path = fitted
            .split("saved in ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(".]"))
            .map(PathBuf::from)
            .unwrap_or_default();
        assert!(path.starts_with(&dir), "{}", path.display());
        assert_eq!(std::fs::read_to_string(&path)?, long);
        Ok(())
    }
}
