//! Tests of the mock model server and the process harnesses.

mod capture;
mod chat;
mod common;
mod concurrency;
mod config;
mod faults;
mod harness;
mod import_circles;
mod import_graph;
mod mock_binary;
mod responses;
mod script_json;
