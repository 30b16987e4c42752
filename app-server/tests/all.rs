//! Tests of keel-app-server's library surface (the binary is tested from the cli crate).

mod suite;
