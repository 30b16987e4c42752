//! Tests of the `keel` binary, spawned for real against the mock model.

mod suite;
