//! `keel app-server` over stdio and websocket, against the mock model.

mod approvals;
mod common;
mod protocol;
mod threads;
mod turns;
mod utilities;
mod websocket;
