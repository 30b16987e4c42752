//! Properties of the one classifier every server reads lines with.

use keel_protocol::{JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, RequestId, decode_frame};
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~é🦀]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,8}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn message() -> impl Strategy<Value = JsonRpcMessage> {
    let id = prop_oneof![
        any::<i64>().prop_map(RequestId::Integer),
        "[a-z0-9-]{1,12}".prop_map(RequestId::String),
    ];
    let params = || {
        prop::option::of(
            prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        )
    };
    prop_oneof![
        (id, "[a-z]{1,8}(/[a-zA-Z]{1,8}){0,2}", params()).prop_map(|(id, method, params)| {
            JsonRpcMessage::Request(JsonRpcRequest {
                id,
                method,
                params,
                trace: None,
            })
        }),
        ("[a-z]{1,8}(/[a-zA-Z]{1,8}){0,2}", params()).prop_map(|(method, params)| {
            JsonRpcMessage::Notification(JsonRpcNotification { method, params })
        }),
    ]
}

proptest! {
    /// Whatever the bytes, the classifier answers with a message, nothing, or an error carrying
    /// one of the two codes for bad input; it never panics.
    #[test]
    fn any_bytes_are_classified_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        match decode_frame(&bytes) {
            Ok(_) => {}
            Err(err) => prop_assert!(err.code() == -32700 || err.code() == -32600, "{err}"),
        }
    }

    /// Any JSON value that is not a message object is refused with -32600, not -32700.
    #[test]
    fn valid_json_of_the_wrong_shape_is_an_invalid_request(value in json_value()) {
        let text = serde_json::to_vec(&value).expect("serialisable");
        if let Err(err) = decode_frame(&text) {
            prop_assert_eq!(err.code(), -32600, "{}", err);
        }
    }

    /// A message survives being written and read back, with whitespace around it.
    #[test]
    fn messages_round_trip(message in message(), pad in "[ \t]{0,3}") {
        let line = format!("{pad}{}{pad}", serde_json::to_string(&message).expect("serialisable"));
        prop_assert_eq!(decode_frame(line.as_bytes()).expect("valid"), Some(message));
    }
}
