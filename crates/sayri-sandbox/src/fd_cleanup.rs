//! Closing inherited file descriptors: a command starts with stdin, stdout and stderr only.

/// Closes every descriptor numbered `first` or above (`close_range(2)`; falls back to walking
/// `/proc/self/fd` on kernels older than 5.9).
pub fn close_from(first: i32) {
    // SAFETY: close_range only closes descriptors; the helper owns every descriptor it inherits.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    };
    if rc == 0 {
        return;
    }
    let fds: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(rd) => rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd >= first)
            .collect(),
        Err(_) => (first..4096).collect(),
    };
    for fd in fds {
        // SAFETY: see above.
        unsafe { libc::close(fd) };
    }
}

/// Takes the instruction socket, which the launcher passes as stdin (see
/// [`crate::spec_pipe`]), onto `fd` (close-on-exec, so the command never inherits it), and
/// puts `/dev/null` on stdin. Passing it as stdin lets the launcher start the helper without
/// running code between fork and exec.
pub fn status_pipe_from_stdin(fd: i32) -> std::io::Result<()> {
    // SAFETY: dup3 onto a descriptor number this single-threaded helper owns.
    if unsafe { libc::dup3(0, fd, libc::O_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    crate::spec_pipe::null_stdin()
}
