//! The server side: transports feeding per-connection processors, and the entry point.

mod listen;
mod open_files;
mod processor;
mod run;
mod stdio;
mod websocket;

pub use listen::ListenUrl;
pub use open_files::raise_open_file_limit;
pub use run::{ExecServerArgs, run_main};
