//! IPC figures of the daemon (printed, never asserted). Run: `cargo bench -p sayri --bench ipc`.
//!
//! * start → ready: spawn `sayri daemon` until a client receives the `ready` greeting (median of 5);
//! * idle RSS 10 s after start (`VmRSS` from /proc);
//! * ping round trip over one connection, p50/p99 of 10,000;
//! * broadcast throughput to 64 reading clients (embedded daemon, real sockets), in bursts of 512
//!   events so every reader keeps within its queue.

use sayri::daemon::{Daemon, default_dispatcher};
use sayri::paths::Paths;
use sayri_testkit::procs::ChildGuard;
use serde_json::{Map, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sayri");

/// A daemon stopped when the guard drops (also when the bench panics half-way).
fn spawn(dir: &Path) -> ChildGuard {
    ChildGuard::spawn_tied(
        Command::new(BIN)
            .arg("daemon")
            .env("SAYRI_CONFIG_DIR", dir.join("c"))
            .env("SAYRI_STATE_DIR", dir.join("s"))
            .env_remove("XDG_RUNTIME_DIR")
            .env("SAYRI_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        Duration::from_secs(5),
    )
    .expect("spawn sayri daemon")
}

fn connect_ready(socket: &Path) -> Option<BufReader<UnixStream>> {
    let s = UnixStream::connect(socket).ok()?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    line.contains("\"ready\"").then_some(r)
}

fn stop(mut child: ChildGuard) {
    let status = child.stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "the daemon did not stop cleanly on SIGTERM: {status:?}"
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let socket: PathBuf = dir.path().join("s/sayri-daemon.sock");
    start_to_ready(dir.path(), &socket);
    idle_rss_and_ping(dir.path(), &socket);
    broadcast_throughput();
    let left = sayri_testkit::procs::stop_leftovers(dir.path(), Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "the bench left processes running: {left:?}"
    );
}

/// Spawns the daemon five times; prints the median time until a client gets `ready`.
fn start_to_ready(dir: &Path, socket: &Path) {
    let mut starts = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let child = spawn(dir);
        let client = loop {
            if let Some(c) = connect_ready(socket) {
                break c;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "daemon did not start"
            );
            std::thread::sleep(Duration::from_micros(200));
        };
        starts.push(t.elapsed());
        drop(client);
        stop(child);
    }
    starts.sort();
    println!(
        "daemon start -> ready: median {:.2} ms (min {:.2} ms, max {:.2} ms, 5 runs, includes exec and 0.2 ms polling)",
        starts[2].as_secs_f64() * 1e3,
        starts[0].as_secs_f64() * 1e3,
        starts[4].as_secs_f64() * 1e3
    );
}

/// Idle RSS 10 s after start, then ping round trips on one connection of the same daemon.
fn idle_rss_and_ping(dir: &Path, socket: &Path) {
    let child = spawn(dir);
    let mut reader = loop {
        if let Some(c) = connect_ready(socket) {
            break c;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    std::thread::sleep(Duration::from_secs(10));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
            .unwrap_or_default()
    };
    println!(
        "idle RSS after 10 s: {} KiB (threads: {})",
        field("VmRSS:"),
        field("Threads:")
    );

    let mut writer = reader.get_ref().try_clone().unwrap();
    let mut rtts = Vec::with_capacity(10_000);
    let mut line = String::new();
    for i in 0..11_000u64 {
        let req = format!("{{\"cmd\":\"ping\",\"id\":{i}}}\n");
        let t = Instant::now();
        writer.write_all(req.as_bytes()).unwrap();
        line.clear();
        reader.read_line(&mut line).unwrap();
        if i >= 1000 {
            rtts.push(t.elapsed()); // first 1000 are warm-up
        }
    }
    rtts.sort();
    println!(
        "ping round trip (10,000): p50 {:.1} us, p99 {:.1} us, max {:.1} us",
        percentile(&rtts, 0.5).as_secs_f64() * 1e6,
        percentile(&rtts, 0.99).as_secs_f64() * 1e6,
        rtts.last().unwrap().as_secs_f64() * 1e6
    );
    drop(writer);
    drop(reader);
    stop(child);
}

/// Events per second broadcast to 64 reading clients of an embedded daemon.
fn broadcast_throughput() {
    let dir2 = tempfile::tempdir_in("/tmp").unwrap();
    let paths = Paths {
        config_dir: dir2.path().join("c"),
        state_dir: dir2.path().join("s"),
        runtime_dir: dir2.path().join("s"),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let daemon = rt.block_on(async {
        Daemon::bind_with_config(paths.clone(), Default::default(), default_dispatcher()).unwrap()
    });
    let state = daemon.state();
    let server = rt.spawn(daemon.run());
    const CLIENTS: usize = 64;
    const EVENTS: u64 = 20_000;
    let counters: Vec<Arc<AtomicU64>> = (0..CLIENTS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let readers: Vec<_> = counters
        .iter()
        .map(|n| {
            let n = n.clone();
            let mut r = connect_ready(&paths.socket()).expect("connect");
            std::thread::spawn(move || {
                let mut line = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line.contains("\"shutdown\"") {
                        return;
                    }
                    n.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    while state.broadcaster.client_count() < CLIENTS {
        std::thread::sleep(Duration::from_millis(1));
    }
    let t = Instant::now();
    for i in 0..EVENTS {
        let mut p = Map::new();
        p.insert("delta".into(), json!("token"));
        state.broadcaster.broadcast("assistant_delta", p);
        if (i + 1) % 512 == 0 || i + 1 == EVENTS {
            while counters.iter().any(|c| c.load(Ordering::Relaxed) < i + 1) {
                std::thread::yield_now();
            }
        }
    }
    let el = t.elapsed();
    let delivered: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    println!(
        "broadcast to {CLIENTS} clients: {EVENTS} events in {:.2} s = {:.0} events/s, {:.0} frames delivered/s ({delivered} frames, {} clients kept)",
        el.as_secs_f64(),
        EVENTS as f64 / el.as_secs_f64(),
        delivered as f64 / el.as_secs_f64(),
        state.broadcaster.client_count()
    );
    state.request_shutdown();
    rt.block_on(server).unwrap();
    for r in readers {
        let _ = r.join();
    }
}
