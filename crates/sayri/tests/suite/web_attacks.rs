//! Attacks on `sayri web`, over raw HTTP/1.1 written byte for byte and from a page of another
//! origin in headless Chromium: no secret or a wrong one, a wrong `Host` (DNS rebinding), a
//! cross-origin WebSocket upgrade, the secret handed over by another site, commands outside the
//! bridge's allow-list, and connections to the machine's other addresses. Each is refused, and
//! a control request shows the same path works when everything is right.

use super::scripted_turns::start_model;
use super::support::{Env, RawClient, eventually};
use super::web_rig::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

/// A response read off the wire.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `head` (request line and headers, without the final blank line) to 127.0.0.1:`port`
/// and reads the response head and its `Content-Length` body.
fn http(port: u16, head: &str) -> Raw {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("{head}\r\n\r\n").as_bytes()).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed before a response head");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head_text = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head_text.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = buf[end + 4..].to_vec();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while body.len() < len {
        let n = s.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Raw {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn get(port: u16, path: &str, extra: &[String]) -> Raw {
    let mut head = format!("GET {path} HTTP/1.1\r\nConnection: close");
    for h in extra {
        head.push_str("\r\n");
        head.push_str(h);
    }
    http(port, &head)
}

fn host(web: &WebProc) -> String {
    format!("Host: 127.0.0.1:{}", web.port)
}

fn cookie(web: &WebProc, value: &str) -> String {
    format!("Cookie: sayri_web_{}={value}", web.port)
}

fn upgrade(web: &WebProc, origin: Option<&str>, cookie_value: &str) -> Raw {
    let mut extra = vec![
        host(web),
        cookie(web, cookie_value),
        "Upgrade: websocket".to_string(),
        "Connection: Upgrade".to_string(),
        "Sec-WebSocket-Version: 13".to_string(),
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==".to_string(),
    ];
    if let Some(o) = origin {
        extra.push(format!("Origin: {o}"));
    }
    let mut head = "GET /ws HTTP/1.1".to_string();
    for h in extra {
        head.push_str("\r\n");
        head.push_str(&h);
    }
    http(web.port, &head)
}

fn start(
    env: &Env,
) -> (
    super::scripted_turns::Model,
    super::support::Daemon,
    WebProc,
) {
    let model = start_model(vec![]);
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    let daemon = env.start_daemon();
    let web = env.start_web();
    (model, daemon, web)
}

#[test]
fn requests_without_the_secret_or_with_a_wrong_one_are_refused() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let page = include_str!("../../../sayri-web/assets/index.html");
    let wrong = "0".repeat(64);
    for path in ["/", "/app.js", "/style.css", "/icon.svg", "/ws", "/nope"] {
        for extra in [
            vec![host(&web)],
            vec![host(&web), cookie(&web, &wrong)],
            vec![host(&web), cookie(&web, "")],
        ] {
            let r = get(web.port, path, &extra);
            assert_eq!(r.status, 401, "{path} {extra:?}: {r:?}");
            assert!(
                r.body.contains("open the address `sayri web` printed"),
                "{r:?}"
            );
            assert!(r.header("set-cookie").is_none());
            assert!(
                r.header("content-security-policy").is_some(),
                "refusals carry the policy too"
            );
            assert!(
                r.headers
                    .iter()
                    .all(|(n, _)| !n.to_ascii_lowercase().starts_with("access-control-"))
            );
        }
    }
    let secret = web.secret().to_string();
    let near = format!(
        "{}{}",
        &secret[..63],
        if secret.ends_with('0') { '1' } else { '0' }
    );
    for bad in [wrong.as_str(), near.as_str(), "", &secret[..32]] {
        let r = get(web.port, &format!("/?s={bad}"), &[host(&web)]);
        assert_eq!(r.status, 403, "secret {bad:?}: {r:?}");
        assert!(r.header("set-cookie").is_none());
    }
    // Control: the secret logs in, and the session cookie (not the secret) then opens the page.
    let login = get(web.port, &format!("/?s={secret}"), &[host(&web)]);
    assert_eq!(login.status, 303, "{login:?}");
    assert_eq!(login.header("location"), Some("/"));
    let set = login.header("set-cookie").unwrap();
    let session = set
        .strip_prefix(&format!("sayri_web_{}=", web.port))
        .and_then(|v| v.strip_suffix("; HttpOnly; SameSite=Strict; Path=/"))
        .unwrap_or_else(|| panic!("{set}"))
        .to_string();
    assert!(
        session.len() == 64 && session != secret,
        "the cookie is a session of its own: {set}"
    );
    web.remember_session(&session);
    assert_eq!(
        get(web.port, "/", &[host(&web), cookie(&web, &secret)]).status,
        401,
        "the launch secret is no cookie"
    );
    let ok = get(
        web.port,
        "/",
        &[
            host(&web),
            cookie(&web, &session),
            "Origin: http://evil.example".to_string(),
        ],
    );
    assert_eq!((ok.status, ok.body.as_str()), (200, page));
    assert!(
        ok.headers
            .iter()
            .all(|(n, _)| !n.to_ascii_lowercase().starts_with("access-control-")),
        "no CORS header, whoever asks: {ok:?}"
    );
}

#[test]
fn a_wrong_host_is_refused_even_with_the_secret() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let secret = web.secret().to_string();
    let session = web.session();
    let p = web.port;
    let hosts = [
        format!("Host: evil.example:{p}"),
        format!("Host: 127.0.0.1.evil.example:{p}"),
        format!("Host: 127.0.0.1:{}", p.wrapping_add(1)),
        "Host: 127.0.0.1".to_string(),
        format!("Host: 192.0.2.2:{p}"),
        format!("Host: [::1]:{p}"),
    ];
    for h in &hosts {
        for (path, extra) in [
            ("/".to_string(), vec![h.clone(), cookie(&web, &session)]),
            (format!("/?s={secret}"), vec![h.clone()]),
            (
                "/app.js".to_string(),
                vec![h.clone(), cookie(&web, &session)],
            ),
        ] {
            let r = get(p, &path, &extra);
            assert_eq!(r.status, 421, "{h} {path}: {r:?}");
            assert!(r.header("set-cookie").is_none(), "{h}");
            assert!(!r.body.contains("app.js"));
        }
    }
    let no_host = http(
        p,
        &format!(
            "GET / HTTP/1.1\r\nConnection: close\r\n{}",
            cookie(&web, &session)
        ),
    );
    assert_eq!(no_host.status, 421, "{no_host:?}");
    // Control: both loopback names of this port are served.
    for h in [
        format!("Host: 127.0.0.1:{p}"),
        format!("Host: localhost:{p}"),
    ] {
        assert_eq!(
            get(p, "/", &[h.clone(), cookie(&web, &session)]).status,
            200,
            "{h}"
        );
    }
}

#[test]
fn a_websocket_upgrade_from_another_origin_is_refused() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let session = web.session();
    let p = web.port;
    for origin in [
        Some("http://evil.example".to_string()),
        Some(format!("http://evil.example:{p}")),
        Some(format!("http://127.0.0.1:{}", p.wrapping_add(1))),
        Some(format!("https://127.0.0.1:{p}")),
        Some(format!("http://localhost:{p}")),
        Some("null".to_string()),
        None,
    ] {
        let r = upgrade(&web, origin.as_deref(), &session);
        assert_eq!(r.status, 403, "origin {origin:?}: {r:?}");
        assert!(r.header("upgrade").is_none());
    }
    let good = upgrade(&web, Some(&format!("http://127.0.0.1:{p}")), &session);
    assert_eq!(
        good.status, 101,
        "control: the page's own origin is upgraded: {good:?}"
    );

    // In the browser: a page of another origin on this machine (another port of 127.0.0.1, so
    // the login cookie is even sent along) can neither open the bridge nor read the page.
    let evil = EvilSite::serve(format!(
        "<!doctype html><title>evil</title><script>\
         const out = [];\
         const ws = new WebSocket('ws://127.0.0.1:{p}/ws');\
         ws.onopen = () => {{ out.push('open'); ws.send(JSON.stringify({{cmd:'talk',params:{{text:'pwned'}},id:1}})); }};\
         ws.onmessage = (e) => out.push('message ' + e.data);\
         ws.onerror = () => out.push('error');\
         fetch('http://127.0.0.1:{p}/', {{credentials: 'include'}}).then(r => r.text()).then(t => out.push('read ' + t.length), () => out.push('unreadable'));\
         setInterval(() => document.title = out.join('|'), 50);\
         </script>"
    ));
    let rt = runtime();
    rt.run(async {
        let chrome = Chrome::launch(&env, "cross_origin_websocket").await;
        let (page, _) = chrome.tab(None).await;
        log_in(&page, &web).await;
        page.goto(evil.url.as_str()).await.unwrap();
        wait_for(
            &page,
            "document.title.includes('error') && document.title.includes('unreadable')",
            LONG,
            "the other origin's attempts to fail",
        )
        .await;
        let title = js(&page, "document.title").await;
        assert!(
            !title.as_str().unwrap_or_default().contains("open"),
            "{title}"
        );
        chrome.screenshot(&page, "evil-origin").await;
        chrome.close().await;
    });
    let mut c = RawClient::connect(&env.socket());
    let sessions = c.call("sessions_list", json!({}), 1);
    assert_eq!(
        sessions["result"],
        json!([]),
        "nothing reached the daemon: {sessions}"
    );
}

#[test]
fn a_secret_passed_by_another_origin_is_refused() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let secret = web.secret().to_string();
    let p = web.port;
    let login = format!("/?s={secret}");
    for extra in [
        "Sec-Fetch-Site: cross-site".to_string(),
        "Sec-Fetch-Site: same-site".to_string(),
        "Origin: http://evil.example".to_string(),
        format!("Origin: http://127.0.0.1:{}", p.wrapping_add(1)),
        "Origin: null".to_string(),
    ] {
        let r = get(p, &login, &[host(&web), extra.clone()]);
        assert_eq!(r.status, 403, "{extra}: {r:?}");
        assert!(r.header("set-cookie").is_none(), "{extra}");
    }
    // In the browser: a link on another site that carries the secret logs nobody in.
    let evil = EvilSite::serve(format!(
        "<!doctype html><title>evil</title><a id=go href=\"http://127.0.0.1:{p}{login}\">free stuff</a>"
    ));
    runtime().run(async {
        let chrome = Chrome::launch(&env, "secret_from_another_origin").await;
        let (page, _) = chrome.tab(None).await;
        page.goto(evil.url.as_str()).await.unwrap();
        page.find_element("#go").await.unwrap().click().await.unwrap();
        wait_for(
            &page,
            &format!("location.port === '{p}' && document.body !== null && document.body.innerText.includes('not valid')"),
            LONG,
            "the refusal of the login",
        )
        .await;
        chrome.screenshot(&page, "login-refused").await;
        let cookies = chrome.browser.get_cookies().await.unwrap();
        assert!(
            cookies.iter().all(|c| !c.name.starts_with("sayri_web")),
            "no login cookie was set: {cookies:?}"
        );
        page.goto(web.url("/").as_str()).await.unwrap();
        wait_for(&page, "document.body !== null && document.body.innerText.includes('not logged in')", LONG, "the page to stay locked").await;
        chrome.close().await;
    });
    // Control: none of those refusals spent the secret; opened by the user (Sec-Fetch-Site:
    // none) it logs in.
    let own = get(p, &login, &[host(&web), "Sec-Fetch-Site: none".to_string()]);
    assert_eq!(own.status, 303, "{own:?}");
}

#[test]
fn commands_outside_the_allow_list_are_refused_and_never_reach_the_daemon() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let mut c = RawClient::connect(&env.socket());
    let autostart =
        c.call("config_get", json!({"key": "ui.autostart"}), 1)["result"]["value"].clone();
    let refused = [
        (
            "config_set",
            json!({"key": "ui.autostart", "value": !autostart.as_bool().unwrap()}),
        ),
        ("vault_set", json!({"key": "WEB_CANARY", "value": "x"})),
        ("vault_delete", json!({"key": "WEB_CANARY"})),
        ("vault_list", json!({})),
        ("skills_install", json!({"slug": "evil"})),
        ("permission_forget", json!({})),
        ("agent_save", json!({"name": "wide", "sandbox_level": 4})),
        ("agent_delete", json!({"agent_id": "default"})),
        ("session_delete", json!({"session_id": "x"})),
        ("client_hello", json!({"access": "management"})),
        ("quit", json!({})),
        ("ask", json!({"text": "hi"})),
        ("no_such_command", json!({})),
    ];
    let frames: Vec<Value> = refused
        .iter()
        .enumerate()
        .map(|(i, (cmd, params))| json!({"cmd": cmd, "params": params, "id": i}))
        .collect();
    let script = format!(
        "new Promise((done) => {{ \
           const ws = new WebSocket('ws://' + location.host + '/ws'); const got = []; \
           ws.onmessage = (e) => {{ const m = JSON.parse(e.data); \
             if (m.event === 'ready') {{ for (const f of {frames}) ws.send(JSON.stringify(f)); \
               ws.send(JSON.stringify({{cmd: 'ping', id: 'control'}})); }} \
             else if (!m.event) {{ got.push(m); if (m.id === 'control') {{ ws.close(); done(got); }} }} }}; \
         }})",
        frames = serde_json::to_string(&frames).unwrap()
    );
    let answers = runtime().run(async {
        let chrome = Chrome::launch(&env, "allow_list").await;
        let (page, _) = chrome.tab(None).await;
        log_in(&page, &web).await;
        let answers = js(&page, &script).await;
        chrome.close().await;
        answers
    });
    let answers = answers.as_array().unwrap().clone();
    assert_eq!(answers.len(), refused.len() + 1, "{answers:?}");
    for (i, (cmd, _)) in refused.iter().enumerate() {
        let a = answers.iter().find(|a| a["id"] == json!(i)).unwrap();
        assert_eq!(a["ok"], false, "{cmd}: {a}");
        assert_eq!(a["code"], "denied", "{cmd}: {a}");
        assert!(
            a["error"]
                .as_str()
                .unwrap()
                .contains("not available in the web bubble"),
            "{a}"
        );
    }
    let control = answers.iter().find(|a| a["id"] == "control").unwrap();
    assert_eq!(control["result"], "pong", "{control}");
    // The daemon never saw them: it runs, nothing was stored or changed.
    assert_eq!(c.call("vault_list", json!({}), 1)["result"], json!([]));
    assert_eq!(
        c.call("config_get", json!({"key": "ui.autostart"}), 2)["result"]["value"],
        autostart
    );
    assert_eq!(
        c.call("agents_list", json!({}), 3)["result"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn the_server_listens_on_both_loopback_addresses_and_nowhere_else() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let port_hex = format!("{:04X}", web.port);
    let listening = |table: &str| -> Vec<String> {
        std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (addr, port) = f.get(1)?.split_once(':')?;
                (port == port_hex && f.get(3) == Some(&"0A")).then(|| addr.to_string())
            })
            .collect()
    };
    assert_eq!(
        listening("/proc/net/tcp"),
        ["0100007F"],
        "bound to 127.0.0.1 only"
    );
    assert_eq!(
        listening("/proc/net/tcp6"),
        ["00000000000000000000000001000000"],
        "bound to [::1] too, never to [::]"
    );
    let out = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .unwrap();
    let addrs: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().skip_while(|w| *w != "inet").nth(1))
        .filter_map(|a| a.split('/').next().map(str::to_string))
        .filter(|a| !a.starts_with("127."))
        .collect();
    for addr in &addrs {
        let r = TcpStream::connect_timeout(
            &format!("{addr}:{}", web.port).parse().unwrap(),
            Duration::from_secs(3),
        );
        assert!(r.is_err(), "reachable on {addr}");
    }
    eprintln!("checked non-loopback addresses: {addrs:?}");
    assert!(
        TcpStream::connect(("127.0.0.1", web.port)).is_ok(),
        "control: loopback works"
    );
}

#[test]
fn open_hands_the_browser_a_private_page_with_a_one_time_ticket_never_the_secret() {
    let env = Env::new();
    let model = start_model(vec![]);
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"m\"\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    let _daemon = env.start_daemon();
    // A stand-in for xdg-open that records its arguments (written aside and renamed, so the
    // file never exists half-written).
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let args_file = env.dir.path().join("xdg-open.args");
    std::fs::write(
        bin.join("xdg-open"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {0}.part && mv {0}.part {0}\n",
            args_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("xdg-open"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let web = env.start_web_with(&["--open"], &[("PATH", path.as_str())]);
    assert!(
        eventually(Duration::from_secs(10), || args_file.exists()),
        "xdg-open was not run"
    );
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(
        !args.contains(web.secret()),
        "the secret is on a command line: {args}"
    );
    let page_path = args.trim();
    let meta = std::fs::metadata(page_path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{page_path}");
    let page = std::fs::read_to_string(page_path).unwrap();
    assert!(
        !page.contains(web.secret()),
        "the page holds a ticket, not the secret"
    );
    let ticket_url = page
        .split("url=")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let ticket_path = ticket_url
        .trim_start_matches(&format!("http://127.0.0.1:{}", web.port))
        .to_string();
    // A file page's redirect is a cross-site navigation: the ticket works from there, once.
    let first = get(
        web.port,
        &ticket_path,
        &[host(&web), "Sec-Fetch-Site: cross-site".to_string()],
    );
    assert_eq!(first.status, 303, "{first:?}");
    assert!(
        first.header("set-cookie").is_some_and(|c| c
            .starts_with(&format!("{}=", web.cookie_name()))
            && !c.contains(web.secret())),
        "the ticket gives a session of its own: {first:?}"
    );
    let again = get(web.port, &ticket_path, &[host(&web)]);
    assert_eq!(
        again.status, 403,
        "a ticket is spent by its first use: {again:?}"
    );
}

/// A web site of another origin on this machine: serves `page` to every request.
struct EvilSite {
    url: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EvilSite {
    fn serve(page: String) -> EvilSite {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!(
            "http://127.0.0.1:{}/",
            listener.local_addr().unwrap().port()
        );
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.set_nonblocking(false);
                        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut buf = [0u8; 8192];
                        let _ = s.read(&mut buf);
                        let _ = s.write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                                page.len()
                            )
                            .as_bytes(),
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        EvilSite {
            url,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for EvilSite {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A stand-in daemon on the test's socket: greets each connection with `ready`, records the
/// requests of each connection, and answers `client_hello` with `hello_answer` (the `id` is
/// filled in) and every other request with `ok`.
struct FakeDaemon {
    /// The requests of each connection, in order of connection.
    connections: std::sync::Arc<std::sync::Mutex<Vec<Vec<Value>>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeDaemon {
    fn serve(socket: &std::path::Path, hello_answer: Value) -> FakeDaemon {
        use std::io::{BufRead, BufReader};
        use std::sync::atomic::Ordering;
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        let connections = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<Value>>::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (seen, flag) = (connections.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((mut s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
                let index = {
                    let mut all = seen.lock().unwrap();
                    all.push(Vec::new());
                    all.len() - 1
                };
                let (seen, hello_answer) = (seen.clone(), hello_answer.clone());
                std::thread::spawn(move || {
                    let ready = json!({"event": "ready", "info": {"version": "fake"}});
                    if writeln!(s, "{ready}").is_err() {
                        return;
                    }
                    let Ok(reader) = s.try_clone() else { return };
                    for line in BufReader::new(reader).lines() {
                        let Ok(line) = line else { return };
                        let Ok(req) = serde_json::from_str::<Value>(&line) else {
                            return;
                        };
                        seen.lock().unwrap()[index].push(req.clone());
                        let mut answer = if req["cmd"] == "client_hello" {
                            hello_answer.clone()
                        } else {
                            json!({"ok": true, "result": null})
                        };
                        answer["id"] = req["id"].clone();
                        if writeln!(s, "{answer}").is_err() {
                            return;
                        }
                    }
                });
            }
        });
        FakeDaemon {
            connections,
            stop,
            thread: Some(thread),
        }
    }

    fn connections(&self) -> Vec<Vec<Value>> {
        self.connections.lock().unwrap().clone()
    }
}

impl Drop for FakeDaemon {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Opens the page's WebSocket as the page would (own origin, login cookie) and returns the
/// frames the server sends, `(opcode, payload)`, until it closes or `until` holds for one.
fn websocket_frames(web: &WebProc, until: impl Fn(u8, &[u8]) -> bool) -> Vec<(u8, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", web.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let p = web.port;
    write!(
        s,
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nOrigin: http://127.0.0.1:{p}\r\n{}\r\n\
         Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        cookie(web, &web.session())
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut frames = Vec::new();
    let mut upgraded = false;
    loop {
        if !upgraded && let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            assert!(head.starts_with("HTTP/1.1 101"), "{head}");
            buf.drain(..end + 4);
            upgraded = true;
        }
        // Server frames are unmasked: FIN/opcode byte, a length (7 bits, or 126 + 16 bits, or
        // 127 + 64 bits), the payload.
        while upgraded && buf.len() >= 2 {
            let (len, at) = match buf[1] & 0x7f {
                126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                127 if buf.len() >= 10 => (
                    u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                126 | 127 => break,
                n => (n as usize, 2),
            };
            if buf.len() < at + len {
                break;
            }
            let op = buf[0] & 0x0f;
            let payload = buf[at..at + len].to_vec();
            buf.drain(..at + len);
            let done = op == 8 || until(op, &payload);
            frames.push((op, payload));
            if done {
                return frames;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return frames,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn the_bridge_limits_its_daemon_connection_before_anything_else_and_fails_closed_when_refused() {
    // A daemon that accepts the limit: the bridge's first request names exactly the assistant
    // class plus permission answers, agent switches and "Remember this", and only then the page
    // gets `ready`.
    let env = Env::new();
    let accepting = FakeDaemon::serve(
        &env.socket(),
        json!({"ok": true, "result": {"access": "assistant", "allow": ["agent_switch", "memory_add", "permission_answer"]}}),
    );
    let web = env.start_web();
    let frames = websocket_frames(&web, |op, _| op == 1);
    let first = serde_json::from_slice::<Value>(&frames[0].1).unwrap();
    assert_eq!(first["event"], "ready", "{first}");
    let bridge = accepting.connections().last().cloned().unwrap();
    assert_eq!(
        (&bridge[0]["cmd"], &bridge[0]["params"]),
        (
            &json!("client_hello"),
            &json!({"access": "assistant", "allow": ["permission_answer", "agent_switch", "memory_add"]})
        ),
        "{bridge:?}"
    );
    drop(web);
    drop(accepting);
    std::fs::remove_file(env.socket()).unwrap();

    // A daemon that does not know `client_hello` (an older one): nothing is bridged; the page
    // is told why and the WebSocket is closed, and the daemon hears nothing after the hello.
    let refusing = FakeDaemon::serve(
        &env.socket(),
        json!({"ok": false, "code": "unknown_command", "error": "unknown command: client_hello"}),
    );
    let web = env.start_web();
    let before = refusing.connections().len();
    let frames = websocket_frames(&web, |_, _| false);
    let (close_op, close_payload) = frames.last().cloned().unwrap();
    assert_eq!(close_op, 8, "{frames:?}");
    assert_eq!(
        u16::from_be_bytes([close_payload[0], close_payload[1]]),
        4002,
        "closed as `no daemon`"
    );
    let events: Vec<Value> = frames
        .iter()
        .filter(|(op, _)| *op == 1)
        .map(|(_, p)| serde_json::from_slice(p).unwrap())
        .collect();
    assert!(events.iter().all(|e| e["event"] != "ready"), "{events:?}");
    assert!(
        events.iter().any(|e| e["event"] == "error"
            && e["error"]
                .as_str()
                .is_some_and(|t| t.contains("did not accept the web bubble's access limits"))),
        "{events:?}"
    );
    let after = refusing.connections();
    assert_eq!(after.len(), before + 1, "one bridge connection");
    let cmds: Vec<&Value> = after[before].iter().map(|r| &r["cmd"]).collect();
    assert_eq!(
        cmds,
        [&json!("client_hello")],
        "nothing after the refused hello"
    );
}
