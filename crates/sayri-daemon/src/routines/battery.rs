//! The battery's charge for `on_battery_low` triggers: UPower's display device over the
//! system bus (its `PropertiesChanged` signals) when UPower runs, else
//! `/sys/class/power_supply` re-read on the kernel's `power_supply` uevents — and every two
//! minutes, since some batteries report their charge without an event. Runs only while an
//! enabled battery trigger exists; a machine without a battery watches nothing.

use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Charge, 0–100.
    pub percent: f64,
    /// Whether it is discharging (on battery power).
    pub discharging: bool,
}

/// `/sys/class/power_supply`.
pub const SYSFS_ROOT: &str = "/sys/class/power_supply";

/// The batteries under `root` (a `power_supply` class directory): the mean charge, and
/// discharging when any battery is. `None` without a present battery.
pub fn read_sysfs(root: &Path) -> Option<Reading> {
    let read = |dir: &Path, name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut charges = Vec::new();
    let mut discharging = false;
    for entry in std::fs::read_dir(root).ok()?.filter_map(Result::ok) {
        let dir = entry.path();
        if read(&dir, "type").as_deref() != Some("Battery")
            || read(&dir, "present").as_deref() == Some("0")
        {
            continue;
        }
        let Some(capacity) = read(&dir, "capacity").and_then(|c| c.parse::<f64>().ok()) else {
            continue;
        };
        charges.push(capacity.clamp(0.0, 100.0));
        discharging |= read(&dir, "status").as_deref() == Some("Discharging");
    }
    if charges.is_empty() {
        return None;
    }
    Some(Reading {
        percent: charges.iter().sum::<f64>() / charges.len() as f64,
        discharging,
    })
}

/// Reports readings to `on_reading` until `stop`: the first at once, then on each change.
pub async fn watch(stop: CancellationToken, on_reading: impl Fn(Reading) + Send + Sync + 'static) {
    #[cfg(feature = "dbus")]
    match upower(&stop, &on_reading).await {
        Ok(()) => return,
        Err(e) => tracing::info!("battery: UPower unavailable ({e}); reading {SYSFS_ROOT}"),
    }
    sysfs(Path::new(SYSFS_ROOT), &stop, &on_reading).await;
}

/// UPower's display device: the readings, then one on each property change.
#[cfg(feature = "dbus")]
async fn upower(stop: &CancellationToken, on_reading: &impl Fn(Reading)) -> Result<(), String> {
    use futures::StreamExt;
    let conn = zbus::Connection::system()
        .await
        .map_err(|e| e.to_string())?;
    let proxy = zbus::Proxy::new(
        &conn,
        "org.freedesktop.UPower",
        "/org/freedesktop/UPower/devices/DisplayDevice",
        "org.freedesktop.UPower.Device",
    )
    .await
    .map_err(|e| e.to_string())?;
    let read = || async {
        let present: bool = proxy.get_property("IsPresent").await?;
        let percent: f64 = proxy.get_property("Percentage").await?;
        // 2 = discharging, 6 = pending discharge.
        let state: u32 = proxy.get_property("State").await?;
        Ok::<_, zbus::Error>((
            present,
            Reading {
                percent,
                discharging: matches!(state, 2 | 6),
            },
        ))
    };
    let (present, first) = read().await.map_err(|e| e.to_string())?;
    if !present {
        return Err("UPower reports no battery".into());
    }
    on_reading(first);
    let percent = proxy
        .receive_property_changed::<f64>("Percentage")
        .await
        .map(|_| ());
    let state = proxy
        .receive_property_changed::<u32>("State")
        .await
        .map(|_| ());
    let mut changes = futures::stream::select(percent, state);
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            change = changes.next() => {
                if change.is_none() {
                    return Err("UPower's signals ended".into());
                }
                if let Ok((_, r)) = read().await {
                    on_reading(r);
                }
            }
        }
    }
}

/// The sysfs fallback (see the module docs).
async fn sysfs(root: &Path, stop: &CancellationToken, on_reading: &impl Fn(Reading)) {
    if read_sysfs(root).is_none() {
        tracing::info!(
            "battery: no battery under {}; on_battery_low triggers cannot fire",
            root.display()
        );
        return stop.cancelled().await;
    }
    let uevents = uevent_socket()
        .map_err(|e| tracing::info!("battery: no kernel uevents ({e}); reading every two minutes"))
        .ok();
    loop {
        if let Some(r) = read_sysfs(root) {
            on_reading(r);
        }
        let event = async {
            match &uevents {
                Some(fd) => power_supply_event(fd).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = event => {}
            () = tokio::time::sleep(Duration::from_secs(120)) => {}
        }
    }
}

/// A socket receiving the kernel's uevents.
fn uevent_socket() -> nix::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    use nix::sys::socket::{
        AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, socket,
    };
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkKObjectUEvent,
    )?;
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &NetlinkAddr::new(0, 1),
    )?;
    super::clock::reactor_fd(fd).map_err(|e| nix::Error::try_from(e).unwrap_or(nix::Error::EIO))
}

/// Resolves at the next uevent of the `power_supply` subsystem.
async fn power_supply_event(fd: &tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>) {
    let mut buf = vec![0u8; 8192];
    loop {
        let Ok(mut guard) = fd.readable().await else {
            return std::future::pending().await;
        };
        loop {
            match nix::sys::socket::recv(
                std::os::fd::AsRawFd::as_raw_fd(fd.get_ref()),
                &mut buf,
                nix::sys::socket::MsgFlags::empty(),
            ) {
                Ok(n) => {
                    if buf[..n]
                        .split(|b| *b == 0)
                        .any(|f| f == b"SUBSYSTEM=power_supply")
                    {
                        return;
                    }
                }
                Err(nix::Error::EAGAIN) => {
                    guard.clear_ready();
                    break;
                }
                Err(_) => return std::future::pending().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supply(root: &Path, name: &str, files: &[(&str, &str)]) {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        for (f, v) in files {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn the_batteries_charge_and_state_come_from_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(read_sysfs(root), None);
        supply(root, "AC", &[("type", "Mains"), ("online", "0")]);
        assert_eq!(read_sysfs(root), None, "mains only: no battery");
        supply(
            root,
            "BAT0",
            &[
                ("type", "Battery"),
                ("present", "1"),
                ("capacity", "12"),
                ("status", "Discharging"),
            ],
        );
        supply(
            root,
            "BAT1",
            &[
                ("type", "Battery"),
                ("present", "1"),
                ("capacity", "20"),
                ("status", "Unknown"),
            ],
        );
        supply(
            root,
            "BAT2",
            &[("type", "Battery"), ("present", "0"), ("capacity", "100")],
        );
        assert_eq!(
            read_sysfs(root),
            Some(Reading {
                percent: 16.0,
                discharging: true
            })
        );
        supply(root, "BAT0", &[("status", "Charging")]);
        assert_eq!(read_sysfs(root).map(|r| r.discharging), Some(false));
        assert_eq!(read_sysfs(&root.join("none")), None);
    }
}
