//! A scheduler clock a test drives, for daemon tests of routines (simulated days in seconds).
//!
//! Compiled only with the `test-clock` cargo feature, which only the test build turns on (the
//! crate's dev-dependency on itself); a release or `cargo install` build has no such code, and
//! a daemon built without it refuses to start when `SAYRI_TEST_CLOCK` is set rather than run
//! on a clock the caller did not expect.
//!
//! The daemon uses it when `SAYRI_TEST_CLOCK` names a socket path to listen on;
//! `SAYRI_TEST_CLOCK_START` (RFC 3339) is the starting time and `SAYRI_TEST_ZONE` the system
//! zone (default UTC). A driver connects and sends lines:
//!
//! * `set <RFC 3339>` — the time jumps there (forward or back);
//! * `zone <IANA name>` — the system zone changes;
//! * `now` — asks the time.
//!
//! Each `set`/`zone` is answered `ok <time>` once the scheduler has handled it (its due runs
//! started and persisted), so a test steps deterministically; `error <why>` otherwise.

use super::clock::SchedulerClock;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use futures::future::BoxFuture;
use sayri_core::domain::routines::zone::parse_zone;
use sayri_core::sync::lock;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, watch};

struct State {
    now: DateTime<Utc>,
    zone: Tz,
    /// Bumped by every change.
    generation: u64,
    /// The generation the scheduler's last pass read.
    read: u64,
}

/// The driven clock.
pub struct DrivenClock {
    state: Mutex<State>,
    changed: Notify,
    handled: watch::Sender<u64>,
}

impl DrivenClock {
    /// A clock at `now` in `zone`.
    pub fn new(now: DateTime<Utc>, zone: Tz) -> Arc<DrivenClock> {
        Arc::new(DrivenClock {
            state: Mutex::new(State {
                now,
                zone,
                generation: 0,
                read: 0,
            }),
            changed: Notify::new(),
            handled: watch::channel(0).0,
        })
    }

    /// The clock the environment asks for, with its control socket listening; `None` when
    /// `SAYRI_TEST_CLOCK` is unset.
    ///
    /// # Errors
    /// A bad start time or zone, or a socket that cannot be bound.
    pub fn from_env() -> Result<Option<Arc<DrivenClock>>, String> {
        let Some(socket) = std::env::var_os("SAYRI_TEST_CLOCK") else {
            return Ok(None);
        };
        let start = match std::env::var("SAYRI_TEST_CLOCK_START") {
            Ok(s) => DateTime::parse_from_rfc3339(&s)
                .map_err(|e| format!("SAYRI_TEST_CLOCK_START {s:?}: {e}"))?
                .with_timezone(&Utc),
            Err(_) => super::clock::wall_now(),
        };
        let zone = match std::env::var("SAYRI_TEST_ZONE") {
            Ok(z) => parse_zone(&z).map_err(|e| e.to_string())?,
            Err(_) => chrono_tz::UTC,
        };
        let clock = DrivenClock::new(start, zone);
        // A socket file left by a previous daemon of the same test.
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(Path::new(&socket))
            .map_err(|e| format!("test clock socket {}: {e}", Path::new(&socket).display()))?;
        tracing::warn!(
            "routines run on a TEST CLOCK driven through {}",
            Path::new(&socket).display()
        );
        let c = clock.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(c.clone().serve(stream));
            }
        });
        Ok(Some(clock))
    }

    fn change(&self, f: impl FnOnce(&mut State)) -> u64 {
        let generation = {
            let mut s = lock(&self.state);
            f(&mut s);
            s.generation += 1;
            s.generation
        };
        self.changed.notify_one();
        generation
    }

    async fn serve(self: Arc<Self>, stream: tokio::net::UnixStream) {
        let (r, mut w) = stream.into_split();
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let reply = self.command(line.trim()).await;
            if w.write_all(format!("{reply}\n").as_bytes()).await.is_err() {
                return;
            }
        }
    }

    async fn command(&self, line: &str) -> String {
        let (verb, arg) = line.split_once(' ').unwrap_or((line, ""));
        let generation = match verb {
            "set" => match DateTime::parse_from_rfc3339(arg.trim()) {
                Ok(t) => self.change(|s| s.now = t.with_timezone(&Utc)),
                Err(e) => return format!("error {e}"),
            },
            "zone" => match parse_zone(arg) {
                Ok(z) => self.change(|s| s.zone = z),
                Err(e) => return format!("error {e}"),
            },
            "now" => return format!("ok {}", self.now().to_rfc3339()),
            other => return format!("error unknown command {other:?}"),
        };
        let mut handled = self.handled.subscribe();
        let done = handled.wait_for(|h| *h >= generation);
        match tokio::time::timeout(Duration::from_secs(20), done).await {
            Ok(Ok(_)) => {
                let s = lock(&self.state);
                format!("ok {}", s.now.to_rfc3339())
            }
            _ => "error the scheduler did not handle the change within 20 s".into(),
        }
    }
}

impl SchedulerClock for DrivenClock {
    fn now(&self) -> DateTime<Utc> {
        lock(&self.state).now
    }

    fn now_for_pass(&self) -> DateTime<Utc> {
        let mut s = lock(&self.state);
        s.read = s.generation;
        s.now
    }

    fn system_zone(&self) -> Tz {
        lock(&self.state).zone
    }

    fn zone_problem(&self) -> Option<String> {
        None
    }

    fn wait(&self, until: Option<DateTime<Utc>>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let due = {
                let s = lock(&self.state);
                until.is_some_and(|u| u <= s.now) || s.read < s.generation
            };
            if !due {
                self.changed.notified().await;
            }
        })
    }

    fn handled(&self) {
        let read = lock(&self.state).read;
        self.handled.send_if_modified(|h| {
            let newer = read > *h;
            if newer {
                *h = read;
            }
            newer
        });
    }
}
