//! keel-exec-server: a process service spoken over JSON-RPC, and its client library.
//!
//! Filled in by the exec-server issue; for now the crate only anchors the layering.
