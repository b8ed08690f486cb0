//! Start-up, idle memory and latency of the daemon: start → ready, idle RSS, `sayri ask` wall
//! time with an instant model, and IPC ping round trips.

use crate::procs::{Install, connect_ready};
use crate::report::Row;
use crate::stats::Stat;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

const STARTS: usize = 5;
const ASKS: usize = 30;
const PINGS: usize = 10_000;

/// The rows of this section.
pub fn run(install: &Install) -> Result<Vec<Row>, String> {
    install.prepare()?;
    let mut ready = Vec::new();
    let (mut rss, mut anon, mut file) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let (daemon, took) = install.start_daemon()?;
        ready.push(took);
        std::thread::sleep(Duration::from_secs(2));
        rss.push(daemon.status_kib("VmRSS").unwrap_or(f64::NAN) / 1024.0);
        anon.push(daemon.status_kib("RssAnon").unwrap_or(f64::NAN) / 1024.0);
        file.push(daemon.status_kib("RssFile").unwrap_or(f64::NAN) / 1024.0);
        daemon.stop()?;
    }
    let mut rows = vec![
        Row::new("daemon start → ready", Stat::millis(&ready), "ms")
            .decimals(2)
            .reference("target ≤ 5 ms")
            .note(
                "spawn `sayri daemon` until a client reads the `ready` greeting (0.2 ms polling)",
            ),
        Row::new("daemon RSS idle", Stat::of(&rss), "MB")
            .reference("target ≤ 8 MB; before this work 12–13.6 MB; OpenClaw gateway ≈ 858 MB idle")
            .note(format!(
                "VmRSS 2 s after start; anonymous {:.1} MB, file-backed {:.1} MB (medians)",
                Stat::of(&anon).map_or(f64::NAN, |s| s.median),
                Stat::of(&file).map_or(f64::NAN, |s| s.median)
            )),
    ];
    let (daemon, _) = install.start_daemon()?;
    rows.push(ask_wall(install)?);
    rows.push(ping(install)?);
    daemon.stop()?;
    install.check_no_leftovers()?;
    Ok(rows)
}

/// `sayri ask ping` wall time against the running daemon and an instant model.
fn ask_wall(install: &Install) -> Result<Row, String> {
    let ask = || -> Result<Duration, String> {
        let t = Instant::now();
        let out = install
            .cmd()
            .args(["ask", "ping"])
            .output()
            .map_err(|e| e.to_string())?;
        let took = t.elapsed();
        if !out.status.success() || String::from_utf8_lossy(&out.stdout).trim() != "pong" {
            return Err(format!(
                "`sayri ask ping` failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(took)
    };
    ask()?;
    let times = (0..ASKS).map(|_| ask()).collect::<Result<Vec<_>, _>>()?;
    Ok(Row::new("`sayri ask` wall time, instant model", Stat::millis(&times), "ms")
        .reference("target ≤ 5 ms; ZeroClaw one-shot turn 0.18 s, Codex 0.64 s, nanobot 4.4 s")
        .note("whole CLI process: spawn, connect, one turn (one model request), exit; daemon already running"))
}

/// Ping round trips on one connection.
fn ping(install: &Install) -> Result<Row, String> {
    let mut reader =
        connect_ready(&install.socket()).ok_or("cannot connect to the daemon for pings")?;
    let mut writer = reader.get_ref().try_clone().map_err(|e| e.to_string())?;
    let mut rtts = Vec::with_capacity(PINGS);
    let mut line = String::new();
    for i in 0..(PINGS + 1000) {
        let t = Instant::now();
        writer
            .write_all(format!("{{\"cmd\":\"ping\",\"id\":{i}}}\n").as_bytes())
            .map_err(|e| e.to_string())?;
        line.clear();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if i >= 1000 {
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let p50 = Stat::percentile(&rtts, 0.5).unwrap_or(f64::NAN);
    let p99 = Stat::percentile(&rtts, 0.99).unwrap_or(f64::NAN);
    Ok(Row::new("IPC ping round trip p50", Some(Stat::exact(p50)), "µs")
        .reference("target p50 ≤ 30 µs")
        .note(format!(
            "{PINGS} pings on one connection after 1,000 warm-up; p99 {p99:.1} µs, max {:.1} µs",
            rtts.iter().copied().fold(0.0, f64::max)
        )))
}
