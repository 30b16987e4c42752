//! keel-acp's tests: one binary, modules under `suite/`.

mod suite;
