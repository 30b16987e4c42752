//! End-to-end tests of keel-core against the mock model over real HTTP.

mod suite;
