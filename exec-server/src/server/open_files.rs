//! The open-file limit of a listening server: every connection, authenticated or not, costs
//! a descriptor, and the usual soft limit of 1,024 is reached by a thousand idle connections.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises this process's soft limit on open files to its hard limit (as Go programs do at
/// start), so a server holds as many connections as the system lets it. Commands started
/// afterwards inherit the raised limit. Failures are logged, never fatal.
pub fn raise_open_file_limit() {
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if let Err(err) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::debug!(%err, soft, hard, "cannot raise the open-file limit");
            } else {
                tracing::debug!(from = soft, to = hard, "raised the open-file limit");
            }
        }
        Ok(_) => {}
        Err(err) => tracing::debug!(%err, "cannot read the open-file limit"),
    }
}
