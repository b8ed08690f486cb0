//! How a helper gets its instructions: over a Unix socket pair on its standard input, never in
//! its arguments.
//!
//! Every process on the machine, of every user, can read another's `/proc/PID/cmdline`, so
//! `sayri-exec` is started with its mode word only (`exec`, `keep`). The launcher creates a
//! stream socket pair, keeps one end and gives the helper the other as stdin. On its end it
//! writes *frames* — a 4-byte big-endian length, then that many bytes of JSON — and then shuts
//! its writing side. The exec helper moves the socket to [`crate::spec::STATUS_FD`], reads its
//! frames from there and writes its reports back on the same socket as JSON lines.
//!
//! A socket rather than a pipe, a file or a memfd: another process cannot open it through
//! `/proc/PID/fd/N` (the kernel answers `ENXIO` for sockets), so no one can read a frame before
//! the helper does, and nothing of it is left on any file system. Frames that carry secrets are
//! held in memory that is zeroed when dropped.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use zeroize::Zeroizing;

/// The longest frame a helper accepts (a command text and its environment are far smaller).
pub const MAX_FRAME: usize = 16 << 20;

/// A connected stream socket pair, both ends close-on-exec: `(launcher's end, helper's end)`.
///
/// # Errors
/// The `socketpair` error.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

/// `json` as one frame (length prefix and body), in memory zeroed on drop.
///
/// # Errors
/// The body is longer than [`MAX_FRAME`].
pub fn frame(json: &[u8]) -> io::Result<Zeroizing<Vec<u8>>> {
    if json.len() > MAX_FRAME {
        return Err(io::Error::other(format!(
            "the helper's instructions are {} bytes, more than the {MAX_FRAME} a helper accepts",
            json.len()
        )));
    }
    let mut out = Zeroizing::new(Vec::with_capacity(4 + json.len()));
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json);
    Ok(out)
}

/// `value` encoded as JSON into one frame, in memory zeroed on drop.
///
/// # Errors
/// Encoding failed or the frame is too long.
pub fn frame_json<T: serde::Serialize>(value: &T) -> io::Result<Zeroizing<Vec<u8>>> {
    let json = Zeroizing::new(serde_json::to_vec(value).map_err(io::Error::other)?);
    frame(&json)
}

/// Why the helper could not take its instructions or its stdin from the launcher's socket; the
/// command is then not run.
#[derive(Debug, thiserror::Error)]
pub enum SpecPipeError {
    /// The socket ended before any frame.
    #[error("no instructions arrived on stdin (internal error)")]
    NoInstructions,
    /// Reading a frame's length failed.
    #[error("cannot read the instructions on stdin: {0}")]
    Read(io::Error),
    /// A frame announces more than [`MAX_FRAME`] bytes.
    #[error("the instructions announce {0} bytes, more than {MAX_FRAME} (internal error)")]
    TooLong(usize),
    /// A frame ends before its announced length.
    #[error("the instructions on stdin end early: {0} (internal error)")]
    Truncated(io::Error),
    /// A frame is not the JSON expected.
    #[error("invalid instructions: {0}")]
    Json(serde_json::Error),
    /// `recvmsg` for the program's stdin failed.
    #[error("cannot receive the program's stdin: {0}")]
    ReceiveStdin(nix::errno::Errno),
    /// The message carrying the program's stdin cannot be read.
    #[error("cannot read the program's stdin: {0}")]
    StdinMessage(nix::errno::Errno),
    /// The message carries no descriptor.
    #[error("the launcher sent no stdin for the program (internal error)")]
    NoStdin,
    /// `dup2` onto stdin failed.
    #[error("cannot put the program's stdin in place: {0}")]
    PlaceStdin(io::Error),
}

/// Reads one frame's body from `fd` (blocking), reading no byte past it: what follows in the
/// stream (the next frame, or a supervised program's stdin) stays for its reader.
///
/// # Errors
/// [`SpecPipeError`]: the stream ended early, the length exceeds [`MAX_FRAME`], or the read
/// failed.
pub fn read_frame(fd: RawFd) -> Result<Zeroizing<Vec<u8>>, SpecPipeError> {
    // SAFETY: `fd` is open for the caller's lifetime; ManuallyDrop never closes it.
    let mut f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let mut len = [0u8; 4];
    f.read_exact(&mut len).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => SpecPipeError::NoInstructions,
        _ => SpecPipeError::Read(e),
    })?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(SpecPipeError::TooLong(len));
    }
    let mut body = Zeroizing::new(vec![0u8; len]);
    f.read_exact(&mut body).map_err(SpecPipeError::Truncated)?;
    Ok(body)
}

/// Reads one frame from `fd` and decodes it as JSON.
///
/// # Errors
/// As [`read_frame`], or the JSON does not decode.
pub fn read_json<T: serde::de::DeserializeOwned>(fd: RawFd) -> Result<T, SpecPipeError> {
    let body = read_frame(fd)?;
    serde_json::from_slice(&body).map_err(SpecPipeError::Json)
}

/// Writes `frames` to the launcher's end `sock`, then shuts its writing side, on the current
/// Tokio runtime. Returns the end as a Tokio stream for reading the helper's answer. A helper
/// that died before reading ends the writing quietly (its exit status says why).
///
/// # Errors
/// `sock` cannot be registered with the runtime.
pub fn send_frames(
    sock: OwnedFd,
    frames: Vec<Zeroizing<Vec<u8>>>,
) -> io::Result<tokio::net::unix::OwnedReadHalf> {
    use tokio::io::AsyncWriteExt;
    let std = std::os::unix::net::UnixStream::from(sock);
    std.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(std)?;
    let (read, mut write) = stream.into_split();
    tokio::spawn(async move {
        for f in &frames {
            if write.write_all(f).await.is_err() {
                return;
            }
        }
        let _ = write.shutdown().await;
    });
    Ok(read)
}

/// Sends one descriptor over the launcher's end of the socket (`SCM_RIGHTS` with a single byte
/// of data), after the frames: a stdio command's stdin (see [`crate::spec::HelperSpec::stdio`]).
///
/// # Errors
/// The socket is closed or the kernel refuses the message.
pub fn send_fd(sock: RawFd, fd: RawFd) -> io::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let fds = [fd];
    let data = [b'F'];
    let iov = [std::io::IoSlice::new(&data)];
    sendmsg::<()>(
        sock,
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map(|_| ())
    .map_err(io::Error::from)
}

/// Receives the descriptor [`send_fd`] sent and puts it on stdin (the original closed). The
/// helper calls it after reading its frames, which it reads by exact length, so the byte that
/// carries the descriptor is still in the socket.
///
/// # Errors
/// [`SpecPipeError`]: the socket ends first, or the message carries no descriptor.
pub fn receive_stdin(sock: RawFd) -> Result<(), SpecPipeError> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut data = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut data)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(sock, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)
        .map_err(SpecPipeError::ReceiveStdin)?;
    let mut got = None;
    for c in msg.cmsgs().map_err(SpecPipeError::StdinMessage)? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            for fd in fds {
                // SAFETY: the kernel just installed `fd` in this process; it is owned here.
                let owned = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
                if got.is_none() {
                    got = Some(owned);
                }
            }
        }
    }
    let fd = got.ok_or(SpecPipeError::NoStdin)?;
    // SAFETY: dup2 of an open descriptor onto stdin (dup2 clears close-on-exec on the copy).
    if unsafe { libc::dup2(fd.as_raw_fd(), 0) } < 0 {
        return Err(SpecPipeError::PlaceStdin(io::Error::last_os_error()));
    }
    Ok(())
}

/// Puts `/dev/null` on stdin, after the socket was moved elsewhere.
///
/// # Errors
/// `/dev/null` cannot be opened or `dup2` failed.
pub fn null_stdin() -> io::Result<()> {
    let null = std::fs::File::open("/dev/null")?;
    // SAFETY: dup2 of an open descriptor onto stdin.
    if unsafe { libc::dup2(null.as_raw_fd(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn frames_are_read_back_exactly_and_leave_what_follows() {
        let (a, b) = socket_pair().unwrap();
        let mut w = std::os::unix::net::UnixStream::from(a);
        w.write_all(&frame(b"{\"x\":1}").unwrap()).unwrap();
        w.write_all(&frame(b"[2]").unwrap()).unwrap();
        w.write_all(b"rest").unwrap();
        drop(w);
        assert_eq!(&read_frame(b.as_raw_fd()).unwrap()[..], b"{\"x\":1}");
        let v: Vec<u32> = read_json(b.as_raw_fd()).unwrap();
        assert_eq!(v, vec![2]);
        let mut rest = String::new();
        std::os::unix::net::UnixStream::from(b)
            .read_to_string(&mut rest)
            .unwrap();
        assert_eq!(rest, "rest");
    }

    #[test]
    fn a_short_or_oversized_frame_is_an_error() {
        let (a, b) = socket_pair().unwrap();
        let mut w = std::os::unix::net::UnixStream::from(a);
        w.write_all(&10u32.to_be_bytes()).unwrap();
        w.write_all(b"abc").unwrap();
        drop(w);
        assert!(
            read_frame(b.as_raw_fd())
                .unwrap_err()
                .to_string()
                .contains("end early")
        );
        let (a, b) = socket_pair().unwrap();
        let mut w = std::os::unix::net::UnixStream::from(a);
        w.write_all(&u32::MAX.to_be_bytes()).unwrap();
        drop(w);
        assert!(
            read_frame(b.as_raw_fd())
                .unwrap_err()
                .to_string()
                .contains("more than")
        );
        let (_a, b) = socket_pair().unwrap();
        drop(_a);
        assert!(
            read_frame(b.as_raw_fd())
                .unwrap_err()
                .to_string()
                .contains("no instructions")
        );
    }
}
