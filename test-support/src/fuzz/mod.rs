//! Fuzzing the JSON-lines servers: hostile frames ([`FrameFuzzer`]) and the drivers that throw
//! them at a server over stdio or websocket, checking after each batch that it still answers.

mod driver;
mod frames;

pub use driver::{FuzzPlan, FuzzReport, fuzz_stdio, fuzz_websocket, is_tolerated};
pub use frames::{
    DEFAULT_FUZZ_FRAMES, FrameFuzzer, deeply_nested_line, fuzz_frames_from_env, fuzz_seed_from_env,
};
