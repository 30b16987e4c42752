//! Exit statuses as a shell reports them, for the helper's two wait loops.

/// The status a shell reports for `status` of `child` (`128 + N` when killed by signal N);
/// `None` for any other process or event.
pub(super) fn shell_status(
    status: nix::sys::wait::WaitStatus,
    child: nix::unistd::Pid,
) -> Option<u8> {
    use nix::sys::wait::WaitStatus;
    match status {
        WaitStatus::Exited(pid, code) if pid == child => Some(u8::try_from(code).unwrap_or(1)),
        WaitStatus::Signaled(pid, sig, _) if pid == child => {
            Some(u8::try_from(128 + sig as i32).unwrap_or(1))
        }
        _ => None,
    }
}
