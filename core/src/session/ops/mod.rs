//! One named function per engine operation ([`keel_protocol::Op`]), grouped by what the
//! operation does; [`super::submission_loop`] is the table that calls them.

pub(super) mod answers;
pub(super) mod lifecycle;
pub(super) mod settings;
pub(super) mod turns;
