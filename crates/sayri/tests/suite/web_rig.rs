//! The rig of the web bubble's tests: `sayri web` as a real process next to a real daemon, and
//! Debian's headless Chromium (`/usr/bin/chromium`) driven over the DevTools protocol
//! (`chromiumoxide`, which never downloads a browser).
//!
//! Chromium is started by the test itself — its own process group, a fresh profile inside the
//! test's temp dir, the flags this closed network needs, a DevTools port chosen by Chromium and
//! read from `DevToolsActivePort` — and its whole group is stopped when [`Chrome`] is closed or
//! dropped, so the leak guard of [`Env`] sees nothing left. Screenshots go to
//! `target/web-screenshots/<test>/`.

use super::support::Env;
use chromiumoxide::cdp::browser_protocol::network::{EnableParams, EventRequestWillBeSent};
use chromiumoxide::{Browser, Page};
use futures::StreamExt;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Flags Chromium needs here: headless, no sandbox as root, and no background connections
/// (this network refuses them, many at a time).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1100,800",
    "--remote-debugging-port=0",
];

// ---------------------------------------------------------------------------------------------
// `sayri web`

/// A running `sayri web`; stopped (SIGTERM) when dropped.
pub struct WebProc {
    child: Option<Child>,
    /// The login address it printed (`http://127.0.0.1:PORT/?s=SECRET`). It works once.
    pub login_url: String,
    /// Its port.
    pub port: u16,
    /// The session cookie's value once a login was made (the login address works once, so
    /// every later request of the test uses this session).
    session: Mutex<Option<String>>,
}

impl WebProc {
    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
    /// The secret in the login address.
    pub fn secret(&self) -> &str {
        self.login_url.split_once("?s=").map_or("", |(_, s)| s)
    }

    /// The name of the bubble's session cookie.
    pub fn cookie_name(&self) -> String {
        format!("sayri_web_{}", self.port)
    }

    /// The session made by this test's login, if one was made.
    pub fn known_session(&self) -> Option<String> {
        self.session.lock().unwrap().clone()
    }

    /// Records the session a login made.
    pub fn remember_session(&self, value: &str) {
        *self.session.lock().unwrap() = Some(value.to_string());
    }

    /// A session cookie value: the first call logs in with the login address (plain HTTP, as
    /// a browser would), later calls return the same session.
    pub fn session(&self) -> String {
        if let Some(s) = self.known_session() {
            return s;
        }
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET /?s={} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.secret(),
            self.port
        )
        .unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        let prefix = format!("{}=", self.cookie_name());
        let value = text
            .lines()
            .find_map(|l| {
                let (name, v) = l.split_once(':')?;
                name.eq_ignore_ascii_case("set-cookie")
                    .then(|| v.trim().strip_prefix(&prefix))
                    .flatten()
                    .map(|v| v.split(';').next().unwrap_or("").to_string())
            })
            .unwrap_or_else(|| panic!("the login made no session: {text}"));
        self.remember_session(&value);
        value
    }
    /// Stops it and returns whether it exited on its own after SIGTERM within 5 s.
    pub fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        // SAFETY: kill takes plain integers and touches no memory of this process.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}

impl Drop for WebProc {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Env {
    /// Starts `sayri --no-start web --port 0` against the running daemon and waits for the
    /// login address it prints.
    pub fn start_web(&self) -> WebProc {
        self.start_web_with(&[], &[])
    }

    /// As [`Env::start_web`] with more arguments and environment variables.
    pub fn start_web_with(&self, args: &[&str], vars: &[(&str, &str)]) -> WebProc {
        let mut cmd = self.cmd();
        cmd.args(["--no-start", "web", "--port", "0"]).args(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        sayri_testkit::procs::tie_to_this_process(&mut cmd);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.dir.path().join("web.log")).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if line.contains("/?s=") {
                    let _ = tx.send(line);
                }
            }
        });
        let login_url = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => line.trim().to_string(),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "sayri web printed no login address: {}",
                    std::fs::read_to_string(self.dir.path().join("web.log")).unwrap_or_default()
                );
            }
        };
        let port = login_url
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {login_url}"));
        WebProc {
            child: Some(child),
            login_url,
            port,
            session: Mutex::new(None),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Chromium

/// A headless Chromium of this test, driven over the DevTools protocol.
pub struct Chrome {
    pub browser: Browser,
    child: Option<Child>,
    handler: tokio::task::JoinHandle<()>,
    shots: PathBuf,
}

/// Where a test's screenshots are kept (`target/web-screenshots/<test>/`).
pub fn screenshot_dir(test: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")));
    let dir = target.join("web-screenshots").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Chrome {
    /// Starts Chromium with a fresh profile in the test's temp dir and connects to it.
    pub async fn launch(env: &Env, test: &str) -> Chrome {
        let profile = env.dir.path().join("chromium-profile");
        std::fs::create_dir_all(&profile).unwrap();
        let log = std::fs::File::create(env.dir.path().join("chromium.log")).unwrap();
        let mut cmd = env.cmd_for(std::path::Path::new(CHROMIUM));
        cmd.args(CHROMIUM_FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0);
        // Killed from outside (a CI time limit), the test still takes Chromium with it.
        sayri_testkit::procs::tie_to_this_process(&mut cmd);
        let child = cmd.spawn().unwrap_or_else(|e| {
            panic!("cannot start {CHROMIUM} ({e}); run ./scripts/setup --tests (it installs Debian's chromium)")
        });
        let mut chrome_child = Some(child);
        let port_file = profile.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let ws_url = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{port}{path}");
                }
            }
            if Instant::now() > deadline {
                stop_group(&mut chrome_child);
                panic!(
                    "Chromium did not open its DevTools port: {}",
                    std::fs::read_to_string(env.dir.path().join("chromium.log"))
                        .unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let (browser, mut handler) = Browser::connect(ws_url).await.unwrap();
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        Chrome {
            browser,
            child: chrome_child,
            handler,
            shots: screenshot_dir(test),
        }
    }

    /// A new tab that records every network request it makes (see [`RequestLog`]) and runs
    /// `init_script` (if any) in every document before the page's own scripts.
    pub async fn tab(&self, init_script: Option<&str>) -> (Page, RequestLog) {
        let page = self.browser.new_page("about:blank").await.unwrap();
        page.execute(EnableParams::default()).await.unwrap();
        let log = RequestLog::default();
        let mut events = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .unwrap();
        let urls = log.0.clone();
        tokio::spawn(async move {
            while let Some(ev) = events.next().await {
                urls.lock().unwrap().push(ev.request.url.clone());
            }
        });
        if let Some(script) = init_script {
            page.evaluate_on_new_document(script).await.unwrap();
        }
        (page, log)
    }

    /// Saves a PNG screenshot of `page` as `<name>.png` in the test's screenshot dir.
    pub async fn screenshot(&self, page: &Page, name: &str) {
        let png = page
            .screenshot(
                chromiumoxide::page::ScreenshotParams::builder()
                    .full_page(true)
                    .build(),
            )
            .await
            .unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    /// Closes the browser and stops its process group.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.close()).await;
        self.handler.abort();
        stop_group(&mut self.child);
    }
}

impl Drop for Chrome {
    fn drop(&mut self) {
        stop_group(&mut self.child);
    }
}

/// SIGTERM to the whole process group, SIGKILL after 5 s; reaps the leader.
fn stop_group(child: &mut Option<Child>) {
    let Some(mut c) = child.take() else { return };
    let pgid = c.id() as i32;
    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = c.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Helpers of the group that outlive the leader go too.
    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = c.wait();
}

/// URLs of every request a tab made (CDP `Network.requestWillBeSent`).
#[derive(Clone, Default)]
pub struct RequestLog(Arc<Mutex<Vec<String>>>);

impl RequestLog {
    pub fn urls(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    /// Requests to anywhere but `origin`.
    pub fn foreign(&self, origin: &str) -> Vec<String> {
        self.urls()
            .into_iter()
            .filter(|u| !u.starts_with(&format!("{origin}/")) && u != "about:blank")
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Page helpers

/// Evaluates `expr` in the page and returns its JSON value.
pub async fn js(page: &Page, expr: &str) -> Value {
    page.evaluate(expr)
        .await
        .unwrap_or_else(|e| panic!("evaluating {expr}: {e}"))
        .into_value()
        .unwrap_or(Value::Null)
}

/// Polls `expr` until it is `true`, up to `limit`; panics with `what` and the page's text.
pub async fn wait_for(page: &Page, expr: &str, limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(r) = page.evaluate(expr).await
            && r.into_value::<bool>().unwrap_or(false)
        {
            return;
        }
        if Instant::now() > deadline {
            let text = js(page, "document.body ? document.body.innerText : ''").await;
            panic!("timed out waiting for {what} ({expr}); the page shows: {text}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types `text` into the message box and presses Enter, as a person would.
pub async fn type_message(page: &Page, text: &str) {
    let input = page.find_element("#input").await.unwrap();
    input.click().await.unwrap();
    input.type_str(text).await.unwrap();
    input.press_key("Enter").await.unwrap();
}

/// Opens the login address in `page` and waits until the bubble is connected to the daemon.
/// The login address works once: when this test already logged in, the browser is given that
/// session's cookie and opens `/` instead.
pub async fn log_in(page: &Page, web: &WebProc) {
    match web.known_session() {
        Some(session) => {
            let cookie = chromiumoxide::cdp::browser_protocol::network::CookieParam::builder()
                .name(web.cookie_name())
                .value(session)
                .url(web.url("/"))
                .build()
                .unwrap();
            page.set_cookie(cookie).await.unwrap();
            page.goto(web.url("/").as_str()).await.unwrap();
        }
        None => {
            page.goto(web.login_url.as_str()).await.unwrap();
            let cookies = page.get_cookies().await.unwrap();
            if let Some(c) = cookies.iter().find(|c| c.name == web.cookie_name()) {
                web.remember_session(&c.value);
            }
        }
    }
    wait_for(
        page,
        "document.getElementById('conn') && document.getElementById('conn').textContent.startsWith('Connected')",
        Duration::from_secs(20),
        "the bubble to connect",
    )
    .await;
    let url = page.url().await.unwrap().unwrap_or_default();
    assert!(
        !url.contains(web.secret()),
        "the secret stays in the address bar: {url}"
    );
}

/// A JS string literal for `s`.
pub fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The longest a test's browser part may run. Every DevTools call has its own 30 s limit, but
/// a test must never hang CI whatever goes wrong: past this it fails, and its Chromium is
/// stopped as the part's future is dropped.
pub const BROWSER_PART_LIMIT: Duration = Duration::from_secs(240);

/// A multi-thread runtime for a test's browser part (the scripted model keeps its own).
pub struct Browsing(tokio::runtime::Runtime);

impl Browsing {
    /// Runs `part` to its end, failing the test when it takes longer than
    /// [`BROWSER_PART_LIMIT`].
    pub fn run<T>(&self, part: impl std::future::Future<Output = T>) -> T {
        self.0.block_on(async {
            match tokio::time::timeout(BROWSER_PART_LIMIT, part).await {
                Ok(out) => out,
                Err(_) => panic!(
                    "the browser part of the test did not finish within {} s",
                    BROWSER_PART_LIMIT.as_secs()
                ),
            }
        })
    }
}

/// A [`Browsing`] runtime.
pub fn runtime() -> Browsing {
    Browsing(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    )
}
