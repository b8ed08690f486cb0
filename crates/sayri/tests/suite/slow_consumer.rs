//! Case 28: a client that stops reading must not stall the daemon or other clients. Its queue is
//! bounded; on overflow it is dropped with a log line, and it only ever saw whole frames.
//! SIGTERM still stops the daemon promptly while a non-reading client is connected.

use super::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn shrink_rcvbuf(s: &std::os::unix::net::UnixStream) {
    let size: libc::c_int = 4096;
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

/// Client B: pipelines `n` config_set requests (each broadcasts `settings_changed`) and reads
/// everything; returns how many responses it got.
fn writer_client(socket: std::path::PathBuf, n: u64) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut b = RawClient::connect(&socket);
        let mut w = b.writer.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            for i in 0..n {
                let line = json!({"cmd": "config_set", "params": {"key": "ui.orb_size", "value": 100 + (i % 200)}, "id": i}).to_string() + "\n";
                w.write_all(line.as_bytes()).unwrap();
            }
        });
        let mut responses = 0;
        let mut line = String::new();
        while responses < n {
            line.clear();
            b.reader.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("event").is_none() {
                assert_eq!(v["ok"], true, "{v}");
                responses += 1;
            }
        }
        sender.join().unwrap();
        responses
    })
}

#[test]
fn a_non_reading_client_is_dropped_while_others_keep_going() {
    let env = Env::new();
    let mut d = env.start_daemon();

    // A: connects and never reads.
    let a = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
    shrink_rcvbuf(&a);

    // B: generates thousands of broadcasts.
    const N: u64 = 3000;
    let b = writer_client(env.socket(), N);

    // C: 1000 pings meanwhile, each answered.
    let mut c = RawClient::connect(&env.socket());
    let mut worst = Duration::ZERO;
    for i in 0..1000u64 {
        let t = Instant::now();
        let r = c.call("ping", json!({}), i);
        assert_eq!(r["result"], "pong");
        worst = worst.max(t.elapsed());
    }
    eprintln!("1000 pings during the broadcast storm: worst round trip {worst:?}");
    assert_eq!(b.join().unwrap(), N);

    // A was dropped: reading it now yields whole lines, then EOF.
    assert!(
        eventually(Duration::from_secs(10), || d
            .log_text()
            .contains("dropping client")),
        "no drop logged: {}",
        d.log_text()
    );
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut &a, &mut got).unwrap();
    let text = String::from_utf8(got).unwrap();
    let complete: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .collect();
    let rest = text.len() - complete.iter().map(|l| l.len()).sum::<usize>();
    for l in &complete {
        serde_json::from_str::<Value>(l)
            .unwrap_or_else(|e| panic!("not a whole frame: {l:?}: {e}"));
    }
    assert!(
        rest < 512,
        "at most one frame cut off by the close, got {rest} trailing bytes"
    );
    let events = complete.len().saturating_sub(1); // minus the greeting
    assert!(
        (events as u64) < N,
        "A received {events} of {N} events before being dropped"
    );

    // SIGTERM with a stuck client (A2 never reads, its kernel buffer is full).
    let a2 = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
    shrink_rcvbuf(&a2);
    assert_eq!(writer_client(env.socket(), 600).join().unwrap(), 600);
    let status = d
        .terminate(Duration::from_secs(5))
        .expect("daemon did not exit within 5 s of SIGTERM");
    assert!(status.success(), "{status}");
    drop(a2);
}
