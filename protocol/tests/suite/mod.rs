mod codex_golden;
mod exec_server_messages;
mod framing_properties;
mod ids;
mod jsonrpc;
mod malformed;
mod round_trip;
mod schema_fresh;
