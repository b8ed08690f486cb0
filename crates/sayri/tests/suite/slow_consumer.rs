//! A client that stops reading must not stall the daemon or other clients. Its queue is
//! bounded (frames and bytes); on overflow it is dropped with a log line, it only ever saw whole
//! frames, and SIGTERM still stops the daemon promptly while a non-reading client is connected.

use super::support::*;
use sayri_client::paths::Paths;
use sayri_daemon::daemon::{Daemon, default_dispatcher};
use sayri_protocol::event::turns::{AssistantDelta, AssistantDone};
use serde_json::{Value, json};
use std::io::{BufRead, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn shrink_rcvbuf(s: &UnixStream) {
    let size: libc::c_int = 4096;
    // SAFETY: `size` is a live c_int whose length is passed with it; the descriptor is `s`'s, open for the call.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &size as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
}

/// Everything a dropped client received: whole JSON lines, then at most a cut-off tail, then EOF.
fn read_until_dropped(a: &UnixStream) -> usize {
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    (&*a)
        .read_to_end(&mut got)
        .expect("the dropped client must see EOF");
    let text = String::from_utf8_lossy(&got);
    let complete: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .collect();
    for l in &complete {
        serde_json::from_str::<Value>(l)
            .unwrap_or_else(|e| panic!("not a whole frame: {l:?}: {e}"));
    }
    let rest = text.len() - complete.iter().map(|l| l.len()).sum::<usize>();
    assert!(
        rest < 300 * 1024,
        "only the frame being written may be cut off ({rest} bytes)"
    );
    complete.len()
}

/// 1000 pings on their own connection; returns the worst round trip (printed, not asserted).
/// With `deltas`, it also counts `assistant_delta` events and keeps reading until
/// `assistant_done`, like any UI that stays connected.
fn pinger(
    socket: std::path::PathBuf,
    deltas: Option<Arc<AtomicU64>>,
) -> std::thread::JoinHandle<Duration> {
    std::thread::spawn(move || {
        let mut c = RawClient::connect(&socket);
        let mut worst = Duration::ZERO;
        let mut done = false;
        let count = |v: &Value, done: &mut bool| {
            if let Some(n) = &deltas {
                match v["event"].as_str() {
                    Some("assistant_delta") => {
                        n.fetch_add(1, Ordering::SeqCst);
                    }
                    Some("assistant_done") => *done = true,
                    _ => {}
                }
            }
        };
        for i in 0..1000u64 {
            let t = Instant::now();
            c.write((json!({"cmd": "ping", "id": i}).to_string() + "\n").as_bytes());
            loop {
                let v = c.read_value();
                if v.get("event").is_some() {
                    count(&v, &mut done);
                    continue;
                }
                assert_eq!(v, json!({"ok": true, "result": "pong", "id": i}));
                break;
            }
            worst = worst.max(t.elapsed());
        }
        while deltas.is_some() && !done {
            let v = c.read_value();
            count(&v, &mut done);
        }
        worst
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_deltas_reach_the_reader_while_the_stuck_client_is_dropped() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let paths = Paths {
        config_dir: dir.path().join("c"),
        state_dir: dir.path().join("s"),
        runtime_dir: dir.path().join("s"),
    };
    let daemon =
        Daemon::bind_with_config(paths.clone(), Default::default(), default_dispatcher()).unwrap();
    let state = daemon.state();
    let server = tokio::spawn(daemon.run());
    let socket = paths.socket();

    let a = UnixStream::connect(&socket).unwrap(); // never reads
    shrink_rcvbuf(&a);

    // B reads every event and counts the deltas, checking their order.
    const N: u64 = 20_000;
    let seen = Arc::new(AtomicU64::new(0));
    let mut b = RawClient::connect(&socket);
    let b_seen = seen.clone();
    let b_thread = std::thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            b.reader.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            match v["event"].as_str() {
                Some("assistant_delta") => {
                    let expect = b_seen.load(Ordering::SeqCst);
                    assert_eq!(v["delta"], expect.to_string(), "deltas out of order");
                    b_seen.store(expect + 1, Ordering::SeqCst);
                }
                Some("assistant_done") => return,
                _ => {}
            }
        }
    });
    let c_seen = Arc::new(AtomicU64::new(0));
    let c = pinger(socket.clone(), Some(c_seen.clone()));

    // The producer (standing in for a streaming turn) emits in bursts of 500, as fast as the
    // reading clients B and C read.
    let bc = state.broadcaster.clone();
    while bc.client_count() < 3 {
        tokio::time::sleep(Duration::from_millis(1)).await; // A, B and C are registered
    }
    for i in 0..N {
        bc.emit(&AssistantDelta {
            delta: i.to_string(),
        });
        if (i + 1) % 500 == 0 {
            let deadline = Instant::now() + Duration::from_secs(30);
            while seen.load(Ordering::SeqCst) < i + 1 || c_seen.load(Ordering::SeqCst) < i + 1 {
                assert!(
                    Instant::now() < deadline,
                    "reader stalled at {}",
                    seen.load(Ordering::SeqCst)
                );
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    bc.emit(&AssistantDone {
        text: String::new(),
    });
    tokio::task::spawn_blocking(move || b_thread.join().unwrap())
        .await
        .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), N);
    let worst = tokio::task::spawn_blocking(move || c.join().unwrap())
        .await
        .unwrap();
    eprintln!("1000 pings during 20,000 broadcasts: worst round trip {worst:?}");

    let frames = tokio::task::spawn_blocking(move || read_until_dropped(&a))
        .await
        .unwrap();
    assert!(
        (frames as u64) < N,
        "A received {frames} frames before being dropped"
    );

    // Shutdown completes although a second client is stuck with a full buffer.
    let a2 = UnixStream::connect(&socket).unwrap();
    shrink_rcvbuf(&a2);
    for i in 0..600 {
        bc.emit(&AssistantDelta {
            delta: i.to_string(),
        });
    }
    state.request_shutdown();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("shutdown stalled")
        .unwrap();
    drop(a2);
}

#[test]
fn the_real_daemon_drops_a_stuck_client_logs_it_and_still_obeys_sigterm() {
    let env = Env::new();
    let mut d = env.start_daemon();
    let a = UnixStream::connect(env.socket()).unwrap();
    shrink_rcvbuf(&a);
    let c = pinger(env.socket(), None);

    // B: large settings broadcasts (a list of 64 paths of 4000 bytes, about 256 KiB each)
    // overflow A's 8 MiB byte budget quickly. B waits for each answer, as a normal client
    // does, so its own queue stays short.
    let mut b = RawClient::connect(&env.socket());
    let big = |i: u64, fill: &str| {
        let paths: Vec<String> = (0..64)
            .map(|j| format!("/{i}/{j}/{}", fill.repeat(4000)))
            .collect();
        json!({"key": "sandbox.deny_read", "value": paths})
    };
    for i in 0..48u64 {
        let r = b.call("config_set", big(i, "p"), i);
        assert_eq!(r["ok"], true, "{r}");
    }
    eprintln!("worst ping: {:?}", c.join().unwrap());
    assert!(
        eventually(Duration::from_secs(10), || d
            .log_text()
            .contains("dropping client")),
        "no drop logged: {}",
        d.log_text()
    );
    let frames = read_until_dropped(&a);
    assert!(frames < 48, "A received {frames} frames");

    let a2 = UnixStream::connect(env.socket()).unwrap();
    shrink_rcvbuf(&a2);
    for i in 0..4u64 {
        b.call("config_set", big(i, "q"), 100 + i);
    }
    let status = d
        .terminate(Duration::from_secs(5))
        .expect("daemon did not exit within 5 s of SIGTERM");
    assert!(status.success(), "{status}");
    drop(a2);
}
