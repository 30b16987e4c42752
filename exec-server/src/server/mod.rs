//! The server side: transports feeding per-connection processors, and the entry point.

mod listen;
mod processor;
mod run;
mod stdio;
mod websocket;

pub use listen::ListenUrl;
pub use run::{ExecServerArgs, run_main};
