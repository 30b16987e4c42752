mod app_server;
mod exec;
mod mcp_server;
mod sandbox;
