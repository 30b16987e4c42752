//! Integration tests of keel-mcp-server: the real `keel-mcp-server` binary over stdio against
//! the scripted mock model.

mod suite;
