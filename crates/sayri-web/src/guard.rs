//! Who may use the server, checked before any route runs.
//!
//! In order, for every request:
//! 1. **Host** must be `127.0.0.1:PORT` or `localhost:PORT` of this server. A web page whose
//!    name an attacker re-points at 127.0.0.1 (DNS rebinding) sends its own name: refused (421).
//! 2. **Login**: `?s=SECRET` on `/` trades the per-launch secret for a new random session,
//!    set as the cookie, and redirects to `/`. It works **once**: the secret is spent by its
//!    first use, so the address left in the browser's history or a terminal's scrollback logs
//!    no one in again (a browser that already holds a session is just sent to `/`). It is
//!    accepted only from a navigation the user started or from this origin (`Sec-Fetch-Site`
//!    `none` or `same-origin`, or absent for non-browser clients) and with no foreign `Origin`:
//!    a secret passed by another site is refused (403), sets nothing and is not spent.
//!    `?open=TICKET` does the same with the one-time `--open` ticket, from any navigation.
//! 3. **Cookie**: every other request needs the cookie `sayri_web_PORT` holding a session this
//!    server issued — never the launch secret itself (`HttpOnly; SameSite=Strict`: page script
//!    cannot read it, other sites' requests do not carry it). Without it: 401.
//! 4. **Origin** on the WebSocket upgrade must be `http://` + the request's Host: a page of
//!    another origin cannot open the bridge even from the user's browser (403).
//!
//! Every response, refusals included, carries [`SECURITY_HEADERS`] and the
//! Content-Security-Policy, and never a CORS header.

use crate::assets;
use crate::bridge::{self, DaemonConnector};
use crate::secret::Secret;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long an `--open` ticket stays valid (it is also spent by its first use).
pub const OPEN_TICKET_TTL: Duration = Duration::from_secs(120);

/// Longest WebSocket message accepted from the page (the daemon's own line limit).
pub const MAX_WS_MESSAGE: usize = 1 << 20;

/// Headers on every response besides the Content-Security-Policy.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
    (
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    ),
];

/// The most sessions one bubble keeps (each login makes one; the oldest is forgotten).
pub const MAX_SESSIONS: usize = 32;

/// The server's identity and credentials.
pub struct Gate {
    port: u16,
    secret: Secret,
    secret_spent: Mutex<bool>,
    open_ticket: Mutex<Option<(Secret, Instant)>>,
    sessions: Mutex<Vec<Secret>>,
}

impl Gate {
    /// A gate for the server on `port` with `secret`.
    pub fn new(port: u16, secret: Secret) -> Gate {
        Gate {
            port,
            secret,
            secret_spent: Mutex::new(false),
            open_ticket: Mutex::new(None),
            sessions: Mutex::new(Vec::new()),
        }
    }

    /// Spends the launch secret if `candidate` is it and it was not used before.
    fn spend_secret(&self, candidate: &str) -> bool {
        let mut spent = self
            .secret_spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ok = !*spent && self.secret.matches(candidate);
        if ok {
            *spent = true;
        }
        ok
    }

    /// A new session (the cookie's value), remembered by this gate.
    fn new_session(&self) -> Secret {
        let s = Secret::random();
        let mut all = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if all.len() >= MAX_SESSIONS {
            all.remove(0);
        }
        all.push(s.clone());
        s
    }

    /// Whether `candidate` is a session this gate issued.
    fn session_ok(&self, candidate: &str) -> bool {
        let all = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        all.iter()
            .fold(false, |found, s| s.matches(candidate) | found)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The per-launch secret.
    pub fn secret(&self) -> &Secret {
        &self.secret
    }

    /// A new one-time `--open` ticket (replacing any earlier one).
    pub fn new_open_ticket(&self) -> Secret {
        let ticket = Secret::random();
        *self.lock_ticket() = Some((ticket.clone(), Instant::now()));
        ticket
    }

    fn lock_ticket(&self) -> std::sync::MutexGuard<'_, Option<(Secret, Instant)>> {
        self.open_ticket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Spends the `--open` ticket if `candidate` is it and it is still fresh.
    fn spend_open_ticket(&self, candidate: &str) -> bool {
        let mut slot = self.lock_ticket();
        let ok = slot
            .as_ref()
            .is_some_and(|(t, at)| at.elapsed() < OPEN_TICKET_TTL && t.matches(candidate));
        if ok {
            *slot = None;
        }
        ok
    }

    /// The cookie's name: one per port, so two bubbles on one machine do not overwrite each
    /// other's login.
    pub fn cookie_name(&self) -> String {
        format!("sayri_web_{}", self.port)
    }

    /// The Content-Security-Policy of every response: scripts, styles and images only from this
    /// server, no inline script or `eval`, no frames, plugins or `<base>`, WebSockets only to
    /// this server, and `innerHTML`-style sinks disabled (Trusted Types with no policy).
    pub fn content_security_policy(&self) -> String {
        let p = self.port;
        format!(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
             font-src 'self'; connect-src 'self' ws://127.0.0.1:{p} ws://localhost:{p}; \
             media-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; \
             form-action 'none'; frame-ancestors 'none'; \
             require-trusted-types-for 'script'; trusted-types 'none'"
        )
    }

    /// Whether `host` (the `Host` header) names this server.
    pub fn host_ok(&self, host: &str) -> bool {
        let Some((name, port)) = host.rsplit_once(':') else {
            return false;
        };
        port == self.port.to_string()
            && (name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost"))
    }
}

/// The whole application: the guard around the page, its files and the bridge.
pub fn router<C: DaemonConnector>(
    gate: Arc<Gate>,
    connector: Arc<C>,
    shutdown: CancellationToken,
) -> Router {
    let ws_state = (connector, shutdown);
    Router::new()
        .route("/ws", get(websocket::<C>).with_state(ws_state))
        .fallback(static_file)
        .layer(middleware::from_fn_with_state(gate.clone(), check))
        .layer(middleware::from_fn_with_state(gate, security_headers))
}

async fn websocket<C: DaemonConnector>(
    State((connector, shutdown)): State<(Arc<C>, CancellationToken)>,
    upgrade: WebSocketUpgrade,
) -> Response {
    upgrade
        .max_message_size(MAX_WS_MESSAGE)
        .on_upgrade(move |socket| bridge::run(socket, connector, shutdown))
}

async fn static_file(method: Method, req: Request) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return refuse(StatusCode::METHOD_NOT_ALLOWED, "only GET is served here");
    }
    match assets::find(req.uri().path()) {
        Some(asset) => ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response(),
        None => refuse(StatusCode::NOT_FOUND, "no such page"),
    }
}

/// A plain-text refusal that says what to do.
fn refuse(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{why}\n"),
    )
        .into_response()
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The login parameters of the query string: (`s`, `open`).
fn login_params(query: Option<&str>) -> (Option<String>, Option<String>) {
    let (mut s, mut open) = (None, None);
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "s" => s = Some(v.into_owned()),
            "open" => open = Some(v.into_owned()),
            _ => {}
        }
    }
    (s, open)
}

/// Whether a login request comes from a navigation the user started or from this origin.
fn first_party(headers: &HeaderMap, host: &str) -> bool {
    let site_ok = match header_str(headers, header::HeaderName::from_static("sec-fetch-site")) {
        None => true,
        Some(site) => site == "none" || site == "same-origin",
    };
    let origin_ok = match header_str(headers, header::ORIGIN) {
        None => true,
        Some(origin) => origin == format!("http://{host}"),
    };
    site_ok && origin_ok
}

/// The redirect to `/`, setting the cookie to `session` when there is one.
fn to_page(gate: &Gate, session: Option<Secret>) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SEE_OTHER;
    let headers = resp.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    if let Some(session) = session {
        let cookie = format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            gate.cookie_name(),
            session.expose()
        );
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            headers.insert(header::SET_COOKIE, v);
        }
    }
    resp
}

async fn check(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let Some(host) = header_str(headers, header::HOST).filter(|h| gate.host_ok(h)) else {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            &format!(
                "this is the Sayri web bubble; open it as http://127.0.0.1:{}/ (other host names are refused)",
                gate.port()
            ),
        );
    };
    let name = gate.cookie_name();
    let has_session = cookie(headers, &name).is_some_and(|c| gate.session_ok(c));
    let (secret, ticket) = login_params(req.uri().query());
    if secret.is_some() || ticket.is_some() {
        let at_root = req.uri().path() == "/";
        let valid = at_root
            && if let Some(t) = ticket {
                gate.spend_open_ticket(&t)
            } else {
                first_party(headers, host)
                    && secret.as_deref().is_some_and(|s| gate.spend_secret(s))
            };
        if valid {
            return to_page(&gate, Some(gate.new_session()));
        }
        if at_root && has_session && first_party(headers, host) {
            // The same browser opening the spent address again: already logged in.
            return to_page(&gate, None);
        }
        tracing::warn!("refused a login to the web bubble");
        return refuse(
            StatusCode::FORBIDDEN,
            "this login address is not valid (wrong, already used, or opened by another site); a login address works once — run `sayri web` again for a new one, or open the address it printed yourself",
        );
    }
    if !has_session {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "not logged in to the Sayri web bubble; open the address `sayri web` printed (it holds this launch's secret)",
        );
    }
    if req.uri().path() == "/ws" {
        let origin_ok =
            header_str(headers, header::ORIGIN).is_some_and(|o| o == format!("http://{host}"));
        if !origin_ok {
            tracing::warn!("refused a WebSocket from another origin");
            return refuse(
                StatusCode::FORBIDDEN,
                "the bridge only accepts the Sayri page itself",
            );
        }
    }
    next.run(req).await
}

async fn security_headers(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(*name, HeaderValue::from_static(value));
    }
    if let Ok(v) = HeaderValue::from_str(&gate.content_security_policy()) {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new(18741, Secret::random())
    }

    #[test]
    fn only_loopback_names_with_our_port_are_our_host() {
        let g = gate();
        for ok in ["127.0.0.1:18741", "localhost:18741", "LOCALHOST:18741"] {
            assert!(g.host_ok(ok), "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "127.0.0.1:18742",
            "evil.example:18741",
            "127.0.0.1.evil.example:18741",
            "[::1]:18741",
            "0.0.0.0:18741",
            "127.0.0.2:18741",
            "",
        ] {
            assert!(!g.host_ok(bad), "{bad}");
        }
    }

    #[test]
    fn the_launch_secret_works_once_and_sessions_are_not_the_secret() {
        let g = gate();
        let secret = g.secret().expose().to_string();
        assert!(!g.spend_secret("nope"));
        assert!(g.spend_secret(&secret));
        assert!(!g.spend_secret(&secret), "a second use is refused");
        let s = g.new_session();
        assert_ne!(s.expose(), secret);
        assert!(g.session_ok(s.expose()));
        assert!(!g.session_ok(&secret), "the launch secret is no cookie");
        assert!(!g.session_ok(""));
    }

    #[test]
    fn old_sessions_are_forgotten_past_the_limit() {
        let g = gate();
        let first = g.new_session();
        for _ in 0..MAX_SESSIONS {
            g.new_session();
        }
        assert!(!g.session_ok(first.expose()));
    }

    #[test]
    fn an_open_ticket_works_once() {
        let g = gate();
        let t = g.new_open_ticket();
        assert!(!g.spend_open_ticket(g.secret().expose()));
        assert!(g.spend_open_ticket(t.expose()));
        assert!(!g.spend_open_ticket(t.expose()));
    }

    #[test]
    fn the_policy_allows_no_inline_script_eval_frames_or_foreign_images() {
        let csp = gate().content_security_policy();
        for part in [
            "default-src 'self'",
            "script-src 'self';",
            "img-src 'self'",
            "frame-src 'none'",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(part), "{part} missing from {csp}");
        }
        assert!(!csp.contains("unsafe"));
    }

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("x_sayri_web_1=a; sayri_web_1=b; c=d"),
        );
        assert_eq!(cookie(&h, "sayri_web_1"), Some("b"));
        assert_eq!(cookie(&h, "sayri_web_2"), None);
    }
}
