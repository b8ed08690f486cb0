//! Broadcast throughput: events per second delivered to 64 reading clients of an embedded
//! daemon over real sockets, in bursts of 512 so every reader stays within its queue.

use crate::report::Row;
use crate::stats::Stat;
use sayri_client::paths::Paths;
use sayri_daemon::daemon::{Daemon, default_dispatcher};
use sayri_protocol::event::turns::AssistantDelta;
use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CLIENTS: usize = 64;
const EVENTS: u64 = 20_000;
const RUNS: usize = 3;

/// The row of this figure.
pub fn run() -> Result<Row, String> {
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        rates.push(once()?);
    }
    Ok(Row::new(
        format!("broadcast throughput to {CLIENTS} clients"),
        Stat::of(&rates),
        "events/s",
    )
    .decimals(0)
    .note(format!(
        "{EVENTS} `assistant_delta` events, each delivered to all {CLIENTS} clients"
    )))
}

fn once() -> Result<f64, String> {
    let dir = tempfile::tempdir_in("/tmp").map_err(|e| e.to_string())?;
    let paths = Paths {
        config_dir: dir.path().join("c"),
        state_dir: dir.path().join("s"),
        runtime_dir: dir.path().join("s"),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let daemon = rt
        .block_on(async {
            Daemon::bind_with_config(paths.clone(), Default::default(), default_dispatcher())
        })
        .map_err(|e| e.to_string())?;
    let state = daemon.state();
    let server = rt.spawn(daemon.run());
    let counters: Vec<Arc<AtomicU64>> = (0..CLIENTS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut readers = Vec::new();
    for n in &counters {
        let n = n.clone();
        let mut r = crate::procs::connect_ready(&paths.socket()).ok_or("cannot connect")?;
        readers.push(std::thread::spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line.contains("\"shutdown\"") {
                    return;
                }
                n.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while state.broadcaster.client_count() < CLIENTS {
        if Instant::now() > deadline {
            return Err("the clients did not all connect".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let t = Instant::now();
    for i in 0..EVENTS {
        state.broadcaster.emit(&AssistantDelta {
            delta: "token".into(),
        });
        if (i + 1) % 512 == 0 || i + 1 == EVENTS {
            while counters.iter().any(|c| c.load(Ordering::Relaxed) < i + 1) {
                std::thread::yield_now();
            }
        }
    }
    let rate = EVENTS as f64 / t.elapsed().as_secs_f64();
    state.request_shutdown();
    let _ = rt.block_on(server);
    for r in readers {
        let _ = r.join();
    }
    Ok(rate)
}
