//! keel-test-support: the mock model server and process harnesses Keel's tests run against.
//!
//! Filled in by the test-support issue; for now the crate only anchors the layering.
