//! Network changes for `on_network_change` triggers: the kernel's routing netlink announces
//! link, address and route changes (no polling); after two quiet seconds the set of connected
//! interfaces and their addresses is compared with the last one, and a difference is a change.
//!
//! "Connected" = up and running (carrier), not loopback; addresses = IPv4 and global IPv6
//! (link-local `fe80::/10` addresses come and go with the link and say nothing new). Runs only
//! while an enabled network trigger exists.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio_util::sync::CancellationToken;

/// How long announcements must be quiet before the state is compared.
pub const SETTLE: Duration = Duration::from_secs(2);

/// The connected interfaces and their addresses, as `"<interface> <address>"` lines.
pub fn snapshot() -> BTreeSet<String> {
    use nix::net::if_::InterfaceFlags as F;
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return BTreeSet::new();
    };
    let mut out = BTreeSet::new();
    for a in addrs {
        if !a.flags.contains(F::IFF_UP | F::IFF_RUNNING) || a.flags.contains(F::IFF_LOOPBACK) {
            continue;
        }
        let Some(addr) = a.address else { continue };
        let ip = if let Some(v4) = addr.as_sockaddr_in() {
            std::net::IpAddr::V4(v4.ip())
        } else if let Some(v6) = addr.as_sockaddr_in6() {
            let ip = v6.ip();
            if (ip.segments()[0] & 0xffc0) == 0xfe80 {
                continue;
            }
            std::net::IpAddr::V6(ip)
        } else {
            continue;
        };
        out.insert(format!("{} {ip}", a.interface_name));
    }
    out
}

/// A socket on the routing netlink groups of links, addresses and routes.
fn route_socket() -> Result<AsyncFd<OwnedFd>, String> {
    use nix::sys::socket::{
        AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, socket,
    };
    const GROUPS: u32 = 0x1 /* link */ | 0x10 /* ipv4 addr */ | 0x40 /* ipv4 route */
        | 0x100 /* ipv6 addr */ | 0x400 /* ipv6 route */;
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(|e| e.to_string())?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, GROUPS)).map_err(|e| e.to_string())?;
    super::clock::reactor_fd(fd).map_err(|e| e.to_string())
}

/// Reads and discards what is queued; resolves once something was.
async fn announcement(fd: &AsyncFd<OwnedFd>) -> Result<(), String> {
    let mut buf = vec![0u8; 16384];
    loop {
        let mut guard = fd.readable().await.map_err(|e| e.to_string())?;
        let mut got = false;
        loop {
            match nix::sys::socket::recv(
                fd.get_ref().as_raw_fd(),
                &mut buf,
                nix::sys::socket::MsgFlags::empty(),
            ) {
                Ok(_) => got = true,
                // A full socket buffer lost announcements: the comparison still sees the result.
                Err(nix::Error::ENOBUFS) => got = true,
                Err(nix::Error::EAGAIN) => {
                    guard.clear_ready();
                    break;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        if got {
            return Ok(());
        }
    }
}

/// Calls `on_change` with the new state after each change, until `stop`.
pub async fn watch(
    stop: CancellationToken,
    on_change: impl Fn(&BTreeSet<String>) + Send + Sync + 'static,
) {
    let fd = match route_socket() {
        Ok(fd) => fd,
        Err(e) => {
            tracing::warn!(
                "network: cannot listen to the kernel's announcements ({e}); on_network_change triggers cannot fire"
            );
            return stop.cancelled().await;
        }
    };
    let mut last = snapshot();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            got = announcement(&fd) => if let Err(e) = got {
                tracing::warn!("network: announcements ended ({e})");
                return stop.cancelled().await;
            },
        }
        // Let a burst (a new link, its addresses, its routes) settle.
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = announcement(&fd) => {}
                () = tokio::time::sleep(SETTLE) => break,
            }
        }
        let now = snapshot();
        if now != last {
            tracing::info!("network changed: {} → {}", join(&last), join(&now));
            last = now;
            on_change(&last);
        }
    }
}

fn join(s: &BTreeSet<String>) -> String {
    if s.is_empty() {
        "offline".into()
    } else {
        s.iter().cloned().collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::sync::{Arc, Mutex};

    const PROBE: &str = "SAYRI_NETWORK_PROBE";

    /// Runs inside fresh user and network namespaces (this test re-run under `unshare`), where
    /// the test may add an interface: a new connected interface with an address is a change,
    /// and an address on a down interface is not.
    #[test]
    fn a_new_connected_interface_is_a_network_change() {
        if std::env::var_os(PROBE).is_some() {
            return probe();
        }
        let exe = std::env::current_exe().unwrap();
        let out = Command::new("unshare")
            .args(["--user", "--map-root-user", "--net"])
            .arg(exe)
            .args([
                "routines::network::tests::a_new_connected_interface_is_a_network_change",
                "--exact",
                "--nocapture",
            ])
            .env(PROBE, "1")
            .output()
            .expect("unshare (util-linux) runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "the probe ran: {text}");
    }

    fn ip(args: &str) {
        let st = Command::new("ip")
            .args(args.split(' '))
            .status()
            .expect("ip (iproute2) runs");
        assert!(st.success(), "ip {args}");
    }

    fn probe() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            assert!(
                snapshot().is_empty(),
                "a fresh namespace is offline: {:?}",
                snapshot()
            );
            let seen = Arc::new(Mutex::new(Vec::new()));
            let s = seen.clone();
            let stop = CancellationToken::new();
            let task = tokio::spawn(watch(stop.clone(), move |now| {
                s.lock().unwrap().push(now.clone())
            }));
            tokio::time::sleep(Duration::from_millis(200)).await;
            // A down interface with an address: announced, but not connected.
            ip("link add sayri0 type bridge");
            ip("addr add 10.77.0.1/24 dev sayri0");
            tokio::time::sleep(SETTLE + Duration::from_secs(1)).await;
            assert!(
                seen.lock().unwrap().is_empty(),
                "{:?}",
                seen.lock().unwrap()
            );
            ip("link set sayri0 up");
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let got = seen.lock().unwrap().clone();
            assert_eq!(got.len(), 1, "{got:?}");
            assert!(got[0].contains("sayri0 10.77.0.1"), "{got:?}");
            stop.cancel();
            task.await.unwrap();
        });
    }
}
