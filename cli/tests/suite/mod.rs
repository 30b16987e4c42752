mod app_server;
mod exec;
mod first_run;
mod fuzz;
mod mcp_server;
mod quickstart;
mod sandbox;
mod teardown;
