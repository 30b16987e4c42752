//! A handler's result, serialised once, and what to do after it is sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;

/// Work to do after the response is written (so notifications follow their response).
pub(crate) type After = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A handler's result and what to do once it is sent.
pub(crate) struct Reply {
    /// Serialised once, straight from the typed result: a long thread's turns never become a
    /// `serde_json::Value` tree.
    pub result: Box<serde_json::value::RawValue>,
    pub after: Option<After>,
}

impl Reply {
    /// A plain result.
    pub(crate) fn now<T: Serialize>(value: &T) -> Result<Self> {
        Ok(Self {
            result: to_value(value)?,
            after: None,
        })
    }

    /// A result followed by a notification to the same connection.
    pub(crate) fn then_notify<T: Serialize>(
        value: &T,
        outgoing: &Arc<Outgoing>,
        notification: keel_protocol::app_server::ServerNotification,
    ) -> Result<Self> {
        let outgoing = outgoing.clone();
        Self::then(value, async move { outgoing.notify(notification).await })
    }

    /// A result followed by `after`.
    pub(crate) fn then<T: Serialize>(
        value: &T,
        after: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Self> {
        Ok(Self {
            result: to_value(value)?,
            after: Some(Box::pin(after)),
        })
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<Box<serde_json::value::RawValue>> {
    serde_json::value::to_raw_value(value)
        .map_err(|err| AppServerError::Internal(format!("cannot serialise the result: {err}")))
}
