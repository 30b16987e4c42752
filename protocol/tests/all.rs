//! Integration tests of keel-protocol's public wire types.

mod suite;
