//! Integration tests of keel-exec-server, against the real binary over stdio and websocket.

mod suite;
