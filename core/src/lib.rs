//! keel-core: the agent engine (config, model client, turn loop, tools, approvals, rollouts).
//!
//! Filled in by the engine issue; for now the crate only anchors the layering.
