//! keel-app-server: the JSON-RPC app server (threads, turns, items) and its in-process client.
//!
//! Filled in by the app-server issue; for now the crate only anchors the layering.
