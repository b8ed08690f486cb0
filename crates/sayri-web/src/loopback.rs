//! Owning both loopback addresses of the bubble's port, or none.
//!
//! `localhost` is two addresses: `127.0.0.1` and `::1`. A browser that resolves it to `::1`
//! would talk to whoever holds `[::1]:PORT`, and that origin is the bubble's. So the bubble
//! binds `127.0.0.1:PORT` **and** `[::1]:PORT` (IPv6 only, never the wildcard), or does not
//! start: a port with either address taken is refused naming that address, and nothing is left
//! bound. An automatic port is one free in both families. Only when the loopback interface has
//! no IPv6 at all (then `localhost` cannot mean `::1`) does it listen on `127.0.0.1` alone, and
//! says so.
//!
//! Neither socket sets `SO_REUSEPORT`, so no process, even of the same user, can share the port
//! while the bubble runs. (`SO_REUSEADDR` is set as every server does, so a restart is not
//! refused for connections still in `TIME_WAIT`; Linux never lets it bind an address another
//! socket listens on.)

use crate::BindError;
use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, SockaddrIn, SockaddrIn6, bind, listen, setsockopt,
    socket, sockopt,
};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, OwnedFd};

/// How many automatic ports are tried before giving up.
const AUTO_TRIES: usize = 32;

/// The bubble's listening sockets.
pub struct Bound {
    /// `127.0.0.1:port`.
    pub v4: std::net::TcpListener,
    /// `[::1]:port` (`None` only where the loopback interface has no IPv6).
    pub v6: Option<std::net::TcpListener>,
    /// The port.
    pub port: u16,
}

/// Binds both loopback addresses on `port` (0: a free port for both); see the module rules.
///
/// # Errors
/// The port (or one of its addresses) is taken or cannot be bound; the message names the
/// address and what to do.
pub fn bind_both(port: u16) -> Result<Bound, BindError> {
    if port != 0 {
        return bind_pair(port).map_err(|e| e.into_bind_error(port));
    }
    let mut last = None;
    for _ in 0..AUTO_TRIES {
        match bind_pair(0) {
            Ok(b) => return Ok(b),
            Err(e @ PairError::V6Taken(_)) => last = Some(e),
            Err(e) => return Err(e.into_bind_error(0)),
        }
    }
    Err(BindError(format!(
        "found no port free on both 127.0.0.1 and [::1] in {AUTO_TRIES} tries{}; give one with `sayri web --port N`",
        last.map_or_else(String::new, |e| format!(" (last: {})", e.describe(0)))
    )))
}

enum PairError {
    V4(u16, nix::Error),
    V6Taken(u16),
    V6(u16, nix::Error),
}

impl PairError {
    fn describe(&self, asked: u16) -> String {
        let p = |n: &u16| if asked == 0 { *n } else { asked };
        match self {
            PairError::V4(n, nix::Error::EADDRINUSE) => {
                format!("127.0.0.1:{} is taken by another process", p(n))
            }
            PairError::V4(n, e) => format!("cannot listen on 127.0.0.1:{}: {e}", p(n)),
            PairError::V6Taken(n) => format!(
                "[::1]:{} is taken by another process (a browser that resolves localhost to ::1 would reach it instead of the bubble)",
                p(n)
            ),
            PairError::V6(n, e) => format!("cannot listen on [::1]:{}: {e}", p(n)),
        }
    }

    fn into_bind_error(self, asked: u16) -> BindError {
        BindError(format!(
            "{}; choose another port with `sayri web --port N` (is another `sayri web` running?)",
            self.describe(asked)
        ))
    }
}

/// `127.0.0.1:port`, then `[::1]` on the port that got; the first is closed again when the
/// second fails.
fn bind_pair(port: u16) -> Result<Bound, PairError> {
    let v4 = listener(
        AddressFamily::Inet,
        &SockaddrIn::from(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)),
    )
    .map_err(|e| PairError::V4(port, e))?;
    let got = std::net::TcpListener::from(v4);
    let port = got.local_addr().map(|a| a.port()).unwrap_or(port);
    let v6 = listener(
        AddressFamily::Inet6,
        &SockaddrIn6::from(SocketAddrV6::new(Ipv6Addr::LOCALHOST, port, 0, 0)),
    );
    let v6 = match v6 {
        Ok(fd) => Some(std::net::TcpListener::from(fd)),
        Err(nix::Error::EADDRINUSE) => return Err(PairError::V6Taken(port)),
        Err(nix::Error::EADDRNOTAVAIL | nix::Error::EAFNOSUPPORT) => None,
        Err(e) => return Err(PairError::V6(port, e)),
    };
    Ok(Bound { v4: got, v6, port })
}

/// A listening, close-on-exec TCP socket of `family` on `addr` (IPv6 sockets are IPv6-only).
fn listener(
    family: AddressFamily,
    addr: &dyn nix::sys::socket::SockaddrLike,
) -> Result<OwnedFd, nix::Error> {
    let fd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    if family == AddressFamily::Inet6 {
        setsockopt(&fd, sockopt::Ipv6V6Only, &true)?;
    }
    bind(fd.as_raw_fd(), addr)?;
    listen(&fd, Backlog::new(128)?)?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_automatic_port_is_bound_on_both_loopbacks() {
        let b = bind_both(0).unwrap();
        assert_ne!(b.port, 0);
        assert_eq!(b.v4.local_addr().unwrap().port(), b.port);
        if let Some(v6) = &b.v6 {
            assert_eq!(v6.local_addr().unwrap().port(), b.port);
            assert!(std::net::TcpListener::bind(("::1", b.port)).is_err());
        }
        assert!(std::net::TcpListener::bind(("127.0.0.1", b.port)).is_err());
    }

    #[test]
    fn a_taken_v6_address_refuses_the_port_and_leaves_nothing_bound() {
        let Ok(squatter) = std::net::TcpListener::bind(("::1", 0)) else {
            return; // no IPv6 on this machine's loopback: nothing to squat
        };
        let port = squatter.local_addr().unwrap().port();
        let err = bind_both(port).err().expect("refused");
        assert!(err.0.contains(&format!("[::1]:{port} is taken")), "{err}");
        let v4 = std::net::TcpListener::bind(("127.0.0.1", port));
        assert!(v4.is_ok(), "127.0.0.1:{port} was left bound");
    }
}
