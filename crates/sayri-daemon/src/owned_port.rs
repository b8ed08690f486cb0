//! A loopback TCP port the daemon holds itself, for a server it supervises (the local model
//! server).
//!
//! The daemon binds `127.0.0.1:0` (the kernel picks a free port), listens, keeps the socket for as
//! long as the server is wanted, and hands a duplicate to every start of the server, which
//! accepts on it. The port therefore stays taken while the server crashes and restarts: no other
//! process can bind it (the socket sets neither `SO_REUSEADDR` nor `SO_REUSEPORT`, so not even a
//! process of the same user can share it, on `127.0.0.1` or on the wildcard address), and every
//! connection to it waits in this socket's queue until the daemon's own server takes it. A
//! request with the server's token therefore reaches nobody else.

use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Backlog of the listening socket: requests queued while the server restarts.
const BACKLOG: i32 = 64;

/// A bound, listening loopback socket and its port.
#[derive(Debug, Clone)]
pub struct OwnedPort {
    /// The port on `127.0.0.1`.
    pub port: u16,
    /// The listening socket (close-on-exec; the supervisor passes duplicates).
    pub fd: Arc<OwnedFd>,
}

/// The loopback socket could not be made; says which step failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} the local model server's loopback socket: {source}")]
pub struct PortError {
    what: &'static str,
    source: nix::Error,
}

/// Binds and listens on `127.0.0.1:0`.
///
/// # Errors
/// [`PortError`]: the step that failed, for the local model's state.
pub fn bind_loopback() -> Result<OwnedPort, PortError> {
    use nix::sys::socket::{
        AddressFamily, Backlog, SockFlag, SockType, SockaddrIn, bind, getsockname, listen, socket,
    };
    use std::os::fd::AsRawFd;
    let fail = |what: &'static str, source: nix::Error| PortError { what, source };
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| fail("create", e))?;
    let any_port = SockaddrIn::new(127, 0, 0, 1, 0);
    bind(fd.as_raw_fd(), &any_port).map_err(|e| fail("bind", e))?;
    let backlog = Backlog::new(BACKLOG).map_err(|e| fail("size", e))?;
    listen(&fd, backlog).map_err(|e| fail("listen on", e))?;
    let addr: SockaddrIn = getsockname(fd.as_raw_fd()).map_err(|e| fail("read", e))?;
    Ok(OwnedPort {
        port: addr.port(),
        fd: Arc::new(fd),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nobody_else_can_bind_a_held_port_in_any_way() {
        let held = bind_loopback().unwrap();
        assert_ne!(held.port, 0);
        for addr in ["127.0.0.1", "0.0.0.0"] {
            let plain = std::net::TcpListener::bind((addr, held.port));
            assert!(plain.is_err(), "{addr}:{} was bound again", held.port);
            for opt in [libc::SO_REUSEADDR, libc::SO_REUSEPORT] {
                let s = nix::sys::socket::socket(
                    nix::sys::socket::AddressFamily::Inet,
                    nix::sys::socket::SockType::Stream,
                    nix::sys::socket::SockFlag::empty(),
                    None,
                )
                .unwrap();
                let one: libc::c_int = 1;
                let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
                // SAFETY: setsockopt with a valid int option.
                unsafe {
                    libc::setsockopt(
                        fd,
                        libc::SOL_SOCKET,
                        opt,
                        (&one as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as u32,
                    )
                };
                let ip: std::net::Ipv4Addr = addr.parse().unwrap();
                let sa =
                    nix::sys::socket::SockaddrIn::from(std::net::SocketAddrV4::new(ip, held.port));
                assert!(
                    nix::sys::socket::bind(fd, &sa).is_err(),
                    "{addr}:{} was shared with option {opt}",
                    held.port
                );
            }
        }
    }
}
