//! Kernel pipe buffers sized for bulk output.

use std::os::fd::AsFd;

/// Kernel buffer asked for each pipe that carries bulk output (a child's stdout and stderr,
/// the server's own stdout): fewer, larger reads and writes. The kernel may refuse (the limit
/// is `/proc/sys/fs/pipe-max-size`); the default then stays.
const PIPE_BUFFER_BYTES: i32 = 1024 * 1024;

/// Asks for a [`PIPE_BUFFER_BYTES`] kernel buffer on `pipe`; a refusal (or `pipe` not being
/// a pipe at all) is logged at debug level and otherwise ignored, since it only costs speed.
pub(crate) fn enlarge_pipe(pipe: &impl AsFd, what: &str) {
    use nix::fcntl::{FcntlArg, fcntl};
    if let Err(err) = fcntl(pipe, FcntlArg::F_SETPIPE_SZ(PIPE_BUFFER_BYTES)) {
        tracing::debug!(%err, "could not enlarge the pipe buffer of {what}");
    }
}
