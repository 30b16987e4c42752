//! The draft ACP v2, offered with `keel acp --protocol-v2` to an editor that asks for version
//! 2 at `initialize` (others keep v1). The agent works in v1's terms; [`requests`] maps the
//! editor's v2 requests onto the same handlers, and [`convert`] turns what the agent sends into
//! v2's shapes (the `Wire` applies it once the connection speaks v2).

mod convert;
mod requests;

pub(crate) use convert::Converter;

use serde_json::Value;

/// A v1 `session/request_permission` params object as v2's (unchanged if unreadable, which
/// only a bug could cause; it is logged).
pub(crate) fn permission_params(params: Value) -> Value {
    let converted =
        serde_json::from_value::<keel_protocol::acp::RequestPermissionRequest>(params.clone())
            .map(convert::permission)
            .and_then(|request| serde_json::to_value(&request));
    match converted {
        Ok(value) => value,
        Err(err) => {
            tracing::warn!("a permission request kept v1's shape: {err}");
            params
        }
    }
}
