//! Database failures as the engine reports them, the store named.

use crate::error::CoreError;
use crate::postgres::{PostgresError, SharedPool};

/// A database failure as the engine reports it, the store named.
pub(super) fn store_error(shared: &SharedPool, err: PostgresError) -> CoreError {
    let message = match err {
        PostgresError::Named { cause, .. } => cause,
        other => other.to_string(),
    };
    CoreError::ThreadStore {
        store: shared.shown().to_string(),
        message,
    }
}

/// Why a row could not be read.
pub(super) fn unreadable(shared: &SharedPool, what: &str) -> CoreError {
    CoreError::ThreadStore {
        store: shared.shown().to_string(),
        message: format!("cannot read {what}"),
    }
}
