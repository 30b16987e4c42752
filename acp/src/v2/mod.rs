//! The draft ACP v2, offered with `keel acp --protocol-v2` to an editor that asks for version
//! 2 at `initialize` (others keep v1). The agent works in v1's terms; [`requests`] maps the
//! editor's v2 requests onto the same handlers, and [`convert`] turns what the agent sends into
//! v2's shapes (the `Wire` applies it once the connection speaks v2).

mod convert;
mod requests;

pub(crate) use convert::{Converter, permission};
