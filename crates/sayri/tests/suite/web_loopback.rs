//! The web bubble owns both loopback addresses of its port, or does not start, and its login
//! address logs in once: the real `sayri web` process against a stranger that squats one
//! address (our own loopback listener), and plain HTTP.

use super::support::*;
use super::web_rig::WebProc;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A free port on both 127.0.0.1 and [::1] (checked by binding both, then letting go).
fn free_port() -> u16 {
    loop {
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("::1", port)).is_ok() {
            return port;
        }
    }
}

/// TCP sockets listening on `port` in this network namespace, as (table, address hex).
fn listeners(port: u16) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Some((addr, p)) = f.get(1).and_then(|a| a.split_once(':')) else {
                continue;
            };
            if f.get(3) == Some(&"0A") && u16::from_str_radix(p, 16) == Ok(port) {
                out.push((table, addr.to_string()));
            }
        }
    }
    out
}

/// `sayri --no-start web --port PORT`, run to its end (it must refuse); how long it took.
fn web_refusing(env: &Env, port: u16) -> (std::process::Output, Duration) {
    let start = Instant::now();
    let mut c = env.cmd();
    c.args(["--no-start", "web", "--port", &port.to_string()]);
    let mut child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = start + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (out, start.elapsed())
}

#[test]
fn a_taken_address_on_either_loopback_makes_the_bubble_refuse_within_3_s_naming_it() {
    let env = Env::new();
    for (squat_at, shown) in [("::1", "[::1]"), ("127.0.0.1", "127.0.0.1")] {
        let port = free_port();
        let stranger = std::net::TcpListener::bind((squat_at, port)).unwrap();
        let (out, took) = web_refusing(&env, port);
        assert!(!out.status.success(), "{shown}: it started");
        assert!(
            took < Duration::from_secs(3),
            "{shown}: refused after {took:?}"
        );
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{shown}:{port} is taken")) && err.contains("--port"),
            "{shown}: {err}"
        );
        let l = listeners(port);
        assert_eq!(
            l.len(),
            1,
            "{shown}: only the stranger listens, nothing of Sayri's: {l:?}"
        );
        drop(stranger);
    }
}

/// A raw HTTP GET; the status code and the whole answer.
fn get(addr: &str, port: u16, path: &str, headers: &[String]) -> (u16, String) {
    let mut s = TcpStream::connect((addr, port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

fn start(env: &Env) -> (Daemon, WebProc) {
    let daemon = env.start_daemon();
    let web = env.start_web();
    (daemon, web)
}

#[test]
fn both_loopbacks_are_bound_no_process_can_share_them_and_localhost_on_v6_reaches_the_bubble() {
    let env = Env::new();
    let (_daemon, web) = start(&env);
    let p = web.port;
    let mut l = listeners(p);
    l.sort();
    assert_eq!(
        l,
        [
            ("tcp", "0100007F".to_string()),
            ("tcp6", "00000000000000000000000001000000".to_string())
        ]
    );
    // A process of the same user cannot take either address, not even sharing the port.
    for (family, addr) in [
        (nix::sys::socket::AddressFamily::Inet, "127.0.0.1"),
        (nix::sys::socket::AddressFamily::Inet6, "::1"),
    ] {
        for reuse_port in [false, true] {
            use nix::sys::socket::*;
            let fd = socket(family, SockType::Stream, SockFlag::empty(), None).unwrap();
            setsockopt(&fd, sockopt::ReuseAddr, &true).unwrap();
            if reuse_port {
                setsockopt(&fd, sockopt::ReusePort, &true).unwrap();
            }
            let ip: std::net::IpAddr = addr.parse().unwrap();
            let sa = SockaddrStorage::from(std::net::SocketAddr::new(ip, p));
            let r = bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &sa);
            assert_eq!(
                r,
                Err(nix::Error::EADDRINUSE),
                "{addr}:{p} with SO_REUSEPORT {reuse_port}"
            );
        }
    }
    // A browser that resolves localhost to ::1 reaches the bubble (asking for a login).
    let (code, text) = get("::1", p, "/", &[format!("Host: localhost:{p}")]);
    assert_eq!(code, 401, "{text}");
    assert!(text.contains("Sayri web bubble"), "{text}");
}

#[test]
fn the_login_address_works_once_and_a_second_use_is_refused() {
    let env = Env::new();
    let (_daemon, web) = start(&env);
    let p = web.port;
    let host = format!("Host: 127.0.0.1:{p}");
    let login = format!("/?s={}", web.secret());
    let (code, first) = get("127.0.0.1", p, &login, std::slice::from_ref(&host));
    assert_eq!(code, 303, "{first}");
    let cookie_line = first
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a session cookie");
    let session = cookie_line
        .split_once('=')
        .unwrap()
        .1
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert_ne!(session, web.secret(), "the cookie is not the launch secret");
    let cookie = format!("Cookie: {}={session}", web.cookie_name());

    // The address in the browser's history, opened again elsewhere: refused, no cookie.
    for h in [&host, &format!("Host: localhost:{p}")] {
        let (code, again) = get("127.0.0.1", p, &login, std::slice::from_ref(h));
        assert_eq!(code, 403, "{again}");
        assert!(
            !again.to_ascii_lowercase().contains("set-cookie"),
            "{again}"
        );
        assert!(again.contains("works once"), "{again}");
    }
    // Over [::1] too.
    let (code, _) = get("::1", p, &login, &[format!("Host: localhost:{p}")]);
    assert_eq!(code, 403);
    // The browser that logged in keeps its session, also when it opens the address again.
    let (code, page) = get("127.0.0.1", p, "/", &[host.clone(), cookie.clone()]);
    assert_eq!(code, 200, "{page}");
    let (code, back) = get("127.0.0.1", p, &login, &[host.clone(), cookie.clone()]);
    assert_eq!(code, 303, "{back}");
    assert!(!back.to_ascii_lowercase().contains("set-cookie"), "{back}");
    // The secret never became a cookie.
    let (code, _) = get(
        "127.0.0.1",
        p,
        "/",
        &[
            host,
            format!("Cookie: {}={}", web.cookie_name(), web.secret()),
        ],
    );
    assert_eq!(code, 401);
}
