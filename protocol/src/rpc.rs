//! Typed method tables: one macro invocation per protocol direction declares every method
//! name with its params (and result) type, so dispatch, client helpers and schema export all
//! read the method string from the same place.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A request method: its wire name and the types of its params and result.
pub trait RpcRequest {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// The `params` payload.
    type Params: Serialize + DeserializeOwned;
    /// The `result` payload of a successful response.
    type Response: Serialize + DeserializeOwned;
}

/// A server's side of a request table: what handling any request gives back (a response, a
/// future of one). The table's `dispatch` takes a handler that [`Handles`] every method in it,
/// so a server that lacks one does not compile.
pub trait RequestHandler {
    /// What handling one request gives.
    type Output;
}

/// Handles method `M`: the one place a server writes what `M` does, beside its other methods
/// of the same topic.
pub trait Handles<M: RpcRequest>: RequestHandler {
    /// Handles one `M` request.
    fn handle(self, params: M::Params) -> Self::Output;
}

/// A notification method: its wire name and the type of its params.
pub trait RpcNotification {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// The `params` payload.
    type Params: Serialize + DeserializeOwned;
}

/// Behaviour shared by the generated method enums.
pub trait MethodTable: Sized + Serialize + DeserializeOwned {
    /// Every method name in the table, in declaration order.
    const METHODS: &'static [&'static str];

    /// The wire method name of this message.
    fn method(&self) -> &'static str;

    /// Builds a typed message from a method name and raw params. An unknown method or params
    /// of the wrong shape yield a serde error that names the method or field. Absent and
    /// `null` params both mean "no params" (Codex clients send `null` for methods without any).
    fn from_method_and_params(method: &str, params: Option<Value>) -> serde_json::Result<Self> {
        let params = params
            .filter(|params| !params.is_null())
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        serde_json::from_value(serde_json::json!({ "method": method, "params": params }))
    }

    /// Splits a typed message into its method name and params value.
    fn into_method_and_params(self) -> serde_json::Result<(&'static str, Value)> {
        let method = self.method();
        let mut value = serde_json::to_value(self)?;
        let params = value
            .get_mut("params")
            .map(Value::take)
            .unwrap_or(Value::Object(serde_json::Map::new()));
        Ok((method, params))
    }
}

/// The enum and [`MethodTable`] impl shared by [`crate::request_table!`] and
/// [`crate::notification_table!`]; not meant to be used directly.
#[doc(hidden)]
#[macro_export]
macro_rules! method_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident($wire:literal, $params:ty) ),* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema)]
        #[serde(tag = "method", content = "params")]
        #[allow(
            clippy::large_enum_variant,
            reason = "a wire enum mirrors the JSON; it is built once per message"
        )]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $wire)]
                $variant($params),
            )*
        }

        impl $crate::MethodTable for $name {
            const METHODS: &'static [&'static str] = &[$($wire),*];

            fn method(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $wire,)*
                }
            }
        }
    };
}

/// Declares a request table: an enum tagged by `method` with `params` content, a `method()`
/// accessor, and one marker type per method (in module `$markers`) implementing [`RpcRequest`].
#[macro_export]
macro_rules! request_table {
    (
        $(#[$meta:meta])*
        pub enum $name:ident in $markers:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident($wire:literal, $params:ty) -> $response:ty
            ),* $(,)?
        }
    ) => {
        $crate::method_enum! {
            $(#[$meta])*
            $name { $( $(#[$vmeta])* $variant($wire, $params) ),* }
        }

        /// One marker type per method, binding its name to its params and result types.
        pub mod $markers {
            #[allow(unused_imports, reason = "params types may be named by full path")]
            use super::*;
            $(
                #[doc = concat!("The `", $wire, "` request.")]
                #[derive(Debug, Clone, Copy)]
                pub struct $variant;

                impl $crate::RpcRequest for $variant {
                    const METHOD: &'static str = $wire;
                    type Params = $params;
                    type Response = $response;
                }
            )*
        }

        impl $name {
            /// Hands the request to `handler`'s handler for its method.
            pub fn dispatch<H>(self, handler: H) -> H::Output
            where
                H: $crate::RequestHandler $(+ $crate::Handles<$markers::$variant>)*,
            {
                match self {
                    $(Self::$variant(params) => {
                        <H as $crate::Handles<$markers::$variant>>::handle(handler, params)
                    })*
                }
            }
        }
    };
}

/// Declares a notification table: like [`request_table!`] without results.
#[macro_export]
macro_rules! notification_table {
    (
        $(#[$meta:meta])*
        pub enum $name:ident in $markers:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident($wire:literal, $params:ty)
            ),* $(,)?
        }
    ) => {
        $crate::method_enum! {
            $(#[$meta])*
            $name { $( $(#[$vmeta])* $variant($wire, $params) ),* }
        }

        /// One marker type per notification, binding its name to its params type.
        pub mod $markers {
            #[allow(unused_imports, reason = "params types may be named by full path")]
            use super::*;
            $(
                #[doc = concat!("The `", $wire, "` notification.")]
                #[derive(Debug, Clone, Copy)]
                pub struct $variant;

                impl $crate::RpcNotification for $variant {
                    const METHOD: &'static str = $wire;
                    type Params = $params;
                }
            )*
        }
    };
}
