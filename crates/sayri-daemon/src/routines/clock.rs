//! The scheduler's clock: the wall-clock time, the system zone as it is now, and a wait that
//! ends at a wall-clock instant — or earlier, as soon as the wall clock is set or the zone
//! changes, so the scheduler recomputes instead of sleeping past a changed slot.
//!
//! [`WallClock`] is the real one: a `timerfd` on `CLOCK_REALTIME` with an absolute expiry and
//! `TFD_TIMER_CANCEL_ON_SET` (it fires at the instant even across a suspend, and is cancelled
//! by a clock step), and a watch on `/etc` for `localtime`/`timezone` being replaced (what
//! `timedatectl set-timezone` does). Nothing polls. Tests drive a clock of their own
//! (`test_clock`, compiled only with the `test-clock` feature).

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use futures::future::BoxFuture;
use sayri_core::domain::routines::timing::to_epoch;
use sayri_core::domain::routines::zone::system_zone_from;
use sayri_core::sync::lock;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

/// Time and zone for the scheduler.
pub trait SchedulerClock: Send + Sync {
    /// The wall-clock time now.
    fn now(&self) -> DateTime<Utc>;
    /// The time a scheduler pass works with (the pass ends with [`SchedulerClock::handled`]).
    fn now_for_pass(&self) -> DateTime<Utc> {
        self.now()
    }
    /// The system zone now (UTC when it cannot be told; [`SchedulerClock::zone_problem`] says
    /// why).
    fn system_zone(&self) -> Tz;
    /// Why the system zone could not be read, if it could not.
    fn zone_problem(&self) -> Option<String>;
    /// Resolves at `until` (`None`: never by itself), or earlier when the wall clock is set or
    /// the system zone changes.
    fn wait(&self, until: Option<DateTime<Utc>>) -> BoxFuture<'_, ()>;
    /// The scheduler finished the pass that read [`SchedulerClock::now_for_pass`] (only a test
    /// clock cares).
    fn handled(&self) {}
}

/// [`SchedulerClock`] as the core's `Clock` port (run end times).
pub struct ClockPort(pub Arc<dyn SchedulerClock>);

impl sayri_core::ports::Clock for ClockPort {
    fn now_unix(&self) -> f64 {
        to_epoch(self.0.now())
    }
}

impl sayri_core::ports::SystemZone for ClockPort {
    fn zone(&self) -> Tz {
        self.0.system_zone()
    }
}

/// Where the system zone is read from.
#[derive(Debug, Clone)]
pub struct ZoneFiles {
    /// The `/etc/localtime` link.
    pub localtime: PathBuf,
    /// `/etc/timezone` (Debian).
    pub timezone: PathBuf,
}

impl Default for ZoneFiles {
    fn default() -> Self {
        ZoneFiles {
            localtime: PathBuf::from("/etc/localtime"),
            timezone: PathBuf::from("/etc/timezone"),
        }
    }
}

impl ZoneFiles {
    /// The zone these files (and the `TZ` variable) name now.
    ///
    /// # Errors
    /// What was found and why it names no zone.
    pub fn read(&self, tz_var: Option<&str>) -> Result<Tz, String> {
        let link = std::fs::read_link(&self.localtime).ok();
        let link = link.as_deref().and_then(Path::to_str);
        let etc = std::fs::read_to_string(&self.timezone).ok();
        system_zone_from(tz_var, link, etc.as_deref()).map_err(|e| e.to_string())
    }
}

/// The real clock (see the module docs).
pub struct WallClock {
    files: ZoneFiles,
    tz_var: Option<String>,
    zone_changed: Arc<Notify>,
    problem: Mutex<Option<String>>,
    /// The `/etc` watch (aborted when the clock is dropped).
    watch: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for WallClock {
    fn drop(&mut self) {
        if let Some(w) = &self.watch {
            w.abort();
        }
    }
}

impl WallClock {
    /// The real clock; the zone comes from `TZ`, else `/etc/localtime`, else `/etc/timezone`.
    pub fn new() -> WallClock {
        Self::with_files(ZoneFiles::default(), std::env::var("TZ").ok())
    }

    /// A clock reading the zone from `files` (tests use a temp directory).
    pub fn with_files(files: ZoneFiles, tz_var: Option<String>) -> WallClock {
        let zone_changed = Arc::new(Notify::new());
        let watch = watch_zone_files(&files, zone_changed.clone());
        WallClock {
            files,
            tz_var,
            zone_changed,
            problem: Mutex::new(None),
            watch,
        }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        Self::new()
    }
}

/// Wakes `changed` whenever the zone files' directory changes one of their names. The inotify
/// mask holds changes only (created, replaced, removed, written): the directory is `/etc`,
/// whose files every process opens, and an open or read must not wake the daemon. Call inside
/// the runtime; the watch ends when the returned task is aborted.
fn watch_zone_files(
    files: &ZoneFiles,
    changed: Arc<Notify>,
) -> Option<tokio::task::JoinHandle<()>> {
    use futures::StreamExt;
    use inotify::{Inotify, WatchMask};
    let names: Vec<_> = [&files.localtime, &files.timezone]
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_os_string()))
        .collect();
    let dir = files.localtime.parent()?.to_path_buf();
    let mask = WatchMask::CREATE
        | WatchMask::MOVED_TO
        | WatchMask::MOVED_FROM
        | WatchMask::DELETE
        | WatchMask::CLOSE_WRITE;
    let stream = Inotify::init().and_then(|i| {
        i.watches().add(&dir, mask)?;
        i.into_event_stream([0u8; 4096])
    });
    let mut stream = match stream {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(
                "cannot watch {} for time-zone changes ({e}); a change is noticed at the next scheduled check",
                dir.display()
            );
            return None;
        }
    };
    Some(tokio::spawn(async move {
        while let Some(Ok(ev)) = stream.next().await {
            if ev.name.is_some_and(|n| names.contains(&n)) {
                changed.notify_one();
            }
        }
    }))
}

/// The wall-clock time now.
pub fn wall_now() -> DateTime<Utc> {
    DateTime::<Utc>::from(std::time::SystemTime::now())
}

/// Registers a non-blocking descriptor this process owns with the runtime's reactor (the one
/// place the routines' event sources — timer, netlink sockets — become awaitable).
///
/// # Errors
/// The reactor refusing it (no runtime, too many descriptors).
pub fn reactor_fd(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is an open descriptor that it alone closes, and `as_raw_fd` always
    // returns that same descriptor, for as long as the `AsyncFd` owns it.
    unsafe { AsyncFd::register(fd) }.map_err(std::io::Error::from)
}

impl SchedulerClock for WallClock {
    fn now(&self) -> DateTime<Utc> {
        wall_now()
    }

    fn system_zone(&self) -> Tz {
        let read = self.files.read(self.tz_var.as_deref());
        let mut p = lock(&self.problem);
        match read {
            Ok(tz) => {
                *p = None;
                tz
            }
            Err(e) => {
                if p.as_deref() != Some(e.as_str()) {
                    tracing::warn!(
                        "system time zone unknown ({e}); routines without a zone use UTC"
                    );
                }
                *p = Some(e);
                chrono_tz::UTC
            }
        }
    }

    fn zone_problem(&self) -> Option<String> {
        lock(&self.problem).clone()
    }

    fn wait(&self, until: Option<DateTime<Utc>>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let timer = async {
                match until {
                    Some(u) => wall_timer(u).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = timer => {}
                () = self.zone_changed.notified() => tracing::info!("system time zone changed"),
            }
        })
    }
}

/// Resolves at wall-clock instant `at`, or when the wall clock is set (stepped).
async fn wall_timer(at: DateTime<Utc>) {
    if at <= wall_now() {
        return;
    }
    match realtime_timer(at) {
        Ok(fd) => {
            let Ok(afd) = reactor_fd(OwnedFd::from(fd)) else {
                return coarse_sleep(at).await;
            };
            if let Ok(mut guard) = afd.readable().await {
                // 8 bytes: the expiry count; ECANCELED when the clock was set.
                let mut buf = [0u8; 8];
                let _ = nix::unistd::read(afd.get_ref(), &mut buf);
                guard.clear_ready();
            }
        }
        Err(e) => {
            tracing::warn!("timerfd unavailable ({e}); the scheduler checks at least every minute");
            coarse_sleep(at).await;
        }
    }
}

fn realtime_timer(at: DateTime<Utc>) -> nix::Result<nix::sys::timerfd::TimerFd> {
    use nix::sys::time::TimeSpec;
    use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
    let fd = TimerFd::new(
        ClockId::CLOCK_REALTIME,
        TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
    )?;
    let ts = TimeSpec::new(at.timestamp(), i64::from(at.timestamp_subsec_nanos()));
    fd.set(
        Expiration::OneShot(ts),
        TimerSetTimeFlags::TFD_TIMER_ABSTIME | TimerSetTimeFlags::TFD_TIMER_CANCEL_ON_SET,
    )?;
    Ok(fd)
}

/// Without a timerfd: sleep in steps of at most a minute (monotonic sleeps stop during a
/// suspend, so a long one could wake far too late).
async fn coarse_sleep(at: DateTime<Utc>) {
    let left = (at - wall_now()).clamp(TimeDelta::zero(), TimeDelta::minutes(1));
    tokio::time::sleep(left.to_std().unwrap_or_default()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[tokio::test]
    async fn the_wall_timer_fires_at_its_instant() {
        let start = Instant::now();
        wall_timer(wall_now() + TimeDelta::milliseconds(150)).await;
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(140), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        let start = Instant::now();
        wall_timer(wall_now() - TimeDelta::seconds(1)).await;
        assert!(start.elapsed() < Duration::from_millis(50));
    }

    /// Reading the zone files (as every scheduler pass does) is not a zone change: a wait
    /// after many reads keeps sleeping, so an idle scheduler never wakes itself.
    #[tokio::test]
    async fn reading_the_zone_does_not_wake_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let files = ZoneFiles {
            localtime: dir.path().join("localtime"),
            timezone: dir.path().join("timezone"),
        };
        std::os::unix::fs::symlink("/usr/share/zoneinfo/Asia/Kolkata", &files.localtime).unwrap();
        std::fs::write(&files.timezone, "Asia/Kolkata\n").unwrap();
        let clock = WallClock::with_files(files, None);
        for _ in 0..20 {
            assert_eq!(clock.system_zone().name(), "Asia/Kolkata");
        }
        let _ = std::fs::read_to_string(dir.path().join("timezone")).unwrap();
        let waiting = clock.wait(Some(wall_now() + TimeDelta::hours(1)));
        assert!(
            tokio::time::timeout(Duration::from_millis(1500), waiting)
                .await
                .is_err(),
            "reading the zone woke the scheduler"
        );
    }

    #[tokio::test]
    async fn a_zone_change_wakes_the_wait_and_is_read_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let files = ZoneFiles {
            localtime: dir.path().join("localtime"),
            timezone: dir.path().join("timezone"),
        };
        std::os::unix::fs::symlink("/usr/share/zoneinfo/Europe/Berlin", &files.localtime).unwrap();
        let clock = WallClock::with_files(files.clone(), None);
        assert_eq!(clock.system_zone().name(), "Europe/Berlin");
        let waiting = clock.wait(Some(wall_now() + TimeDelta::hours(1)));
        // Relinked as `timedatectl set-timezone` does: a new link renamed over the old one.
        let tmp = dir.path().join("localtime.new");
        std::os::unix::fs::symlink("/usr/share/zoneinfo/America/New_York", &tmp).unwrap();
        std::fs::rename(&tmp, &files.localtime).unwrap();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the wait ends when the zone changes");
        assert_eq!(clock.system_zone().name(), "America/New_York");
        assert_eq!(clock.zone_problem(), None);
        std::fs::remove_file(&files.localtime).unwrap();
        assert_eq!(clock.system_zone(), chrono_tz::UTC);
        assert!(clock.zone_problem().is_some());
    }
}
