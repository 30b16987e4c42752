//! keel-mcp-server: Keel exposed as an MCP server over stdio.
//!
//! Filled in by the MCP server issue; for now the crate only anchors the layering.
