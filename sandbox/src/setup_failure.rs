//! The helper's way of saying it could not confine itself (the command never started), and
//! the engine's way of recognising it.

use crate::SandboxError;

/// Exit status of the helper when it could not confine itself; the command did not start.
pub(crate) const SETUP_FAILED_EXIT: u8 = 121;
/// Start of the helper's stderr when it could not confine itself.
const SETUP_FAILED_PREFIX: &str = "keel-linux-sandbox: sandbox setup failed: ";

/// The reason the helper gave when a sandboxed run ended because it could not confine
/// itself (so the command never started); `None` for any other outcome.
pub fn setup_failure(exit_code: i32, stderr: &str) -> Option<String> {
    if exit_code != i32::from(SETUP_FAILED_EXIT) {
        return None;
    }
    stderr
        .strip_prefix(SETUP_FAILED_PREFIX)
        .map(|reason| reason.trim().to_string())
}

/// Says on stderr, in the form [`setup_failure`] recognises, why the command did not start.
pub(crate) fn report_setup_failure(err: &SandboxError) {
    eprintln!("{SETUP_FAILED_PREFIX}{err}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn setup_failures_are_recognised() {
        let stderr = format!("{SETUP_FAILED_PREFIX}no landlock\n");
        assert_eq!(setup_failure(121, &stderr), Some("no landlock".to_string()));
        assert_eq!(setup_failure(1, &stderr), None);
        assert_eq!(setup_failure(121, "other"), None);
    }
}
