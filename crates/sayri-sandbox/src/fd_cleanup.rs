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

/// Marks `fd` close-on-exec so the command never inherits it.
pub fn set_cloexec(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl on an integer descriptor has no memory effects.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
