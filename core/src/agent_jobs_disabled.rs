//! Keel built without the `agent-jobs` feature: no `spawn_agents_on_csv` and no job workers.
//! The type below keeps the agent tree's signatures the same; it has no values.

/// A job worker's row; never exists in this build.
pub(crate) enum JobWorker {}
