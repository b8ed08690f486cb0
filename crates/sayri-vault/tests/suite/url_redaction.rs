//! A secret with URL-special characters (`@`, `:`, `/`, `+`, `%`, a space) used in URLs by the
//! real `curl` and `git` against a loopback HTTP server: whatever they print — the URL as given,
//! percent-encoded with either hex case or twice, `+` or `%2B`, form-encoded, the Basic
//! credentials, `git credential` output, the pieces a URL parser splits an unencoded secret into —
//! is redacted.

use base64::Engine as _;
use sayri_vault::SecretRedactor;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// Every URL-special character, a literal `%41` (so decoding changes it) and a space.
const URL_SECRET: &str = "u7@Kq:9/Lm+Tz%41Rx~Wp3 Yh&Ng=5";

fn r() -> SecretRedactor {
    SecretRedactor::new(vec![(
        "URL_TOKEN".into(),
        Zeroizing::new(URL_SECRET.into()),
    )])
}

/// A loopback HTTP server answering every request with `401` (Basic realm) and a body that
/// echoes the request line, the `Authorization` header and the request body. Stops after
/// `limit` connections or 60 s.
fn echo_server(limit: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut served = 0;
        while served < limit && Instant::now() < deadline {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            served += 1;
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let (mut auth, mut len) = (String::new(), 0usize);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                let lower = h.to_ascii_lowercase();
                if lower.starts_with("authorization:") {
                    auth = h[14..].trim().to_string();
                }
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len.min(1 << 16)];
            let _ = reader.read_exact(&mut body);
            let text = format!(
                "got {} auth={auth} body={}\n",
                request_line.trim(),
                String::from_utf8_lossy(&body)
            );
            let reply = format!(
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\n\
                 Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let mut s = s;
            let _ = s.write_all(reply.as_bytes());
        }
    });
    port
}

/// Runs `script` in bash with `$S` (the secret), `$E` (it percent-encoded, nothing kept) and
/// `$PORT`; returns stdout and stderr together.
fn run(script: &str, port: u16) -> String {
    let enc = percent(URL_SECRET, b"");
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("S", URL_SECRET)
        .env("E", enc)
        .env("PORT", port.to_string())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    let mut all = String::from_utf8_lossy(&o.stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(&o.stderr));
    all
}

/// Percent-encodes every byte but alphanumerics, `-._~` and those in `keep` (upper-case hex).
fn percent(s: &str, keep: &[u8]) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Decodes `%XX` escapes (either case) once; with `plus`, `+` becomes a space.
fn unpercent(s: &str, plus: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else if plus && b[i] == b'+' {
            out.push(b' ');
            i += 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Base64 characters that depend only on `secret` inside a longer encoding, at each offset.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut input = vec![0u8; offset];
        input.extend_from_slice(secret);
        let enc = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&input);
        let start = (8 * offset).div_ceil(6);
        let end = 8 * (offset + secret.len()) / 6;
        out.push(enc[start..end].to_string());
    }
    out
}

/// No 8-character piece of the secret is left in `out`, as it is, decoded once or twice (with
/// `+` as a space or not), or base64-encoded.
fn assert_clean(what: &str, out: &str, original: &str) {
    let once = unpercent(out, false);
    let twice = unpercent(&once, false);
    let form = unpercent(out, true);
    let form_twice = unpercent(&form, true);
    let chars: Vec<char> = URL_SECRET.chars().collect();
    for hay in [out, &once, &twice, &form, &form_twice] {
        let flat = hay.replace(['\n', '\r'], "");
        for w in chars.windows(8) {
            let piece: String = w.iter().collect();
            assert!(
                !flat.contains(&piece),
                "{what}: {piece:?} survived in\n{out}\n(from\n{original})"
            );
        }
    }
    for core in base64_cores(URL_SECRET.as_bytes()) {
        for w in core.as_bytes().windows(12) {
            let piece = std::str::from_utf8(w).unwrap();
            assert!(
                !out.contains(piece),
                "{what}: base64 {piece:?} survived in\n{out}"
            );
        }
    }
}

/// Each command really runs (its output contains `expect`) and prints the secret in some form,
/// and its redaction leaves none.
fn check(what: &str, script: &str, expect: &str, port: u16) {
    let out = run(script, port);
    assert!(
        out.contains(expect),
        "{what}: the command did not run as expected (no {expect:?}):\n{out}"
    );
    let red = r().redact(&out);
    assert!(
        red.contains("$SECRET:URL_TOKEN"),
        "{what}: no marker, so nothing of the secret was printed?\n{out}"
    );
    assert_clean(what, &red, &out);
}

#[test]
fn curl_prints_of_a_url_special_secret_are_redacted() {
    let port = echo_server(16);
    check(
        "curl -v with encoded userinfo and query",
        r#"curl -sv "http://ci:$E@127.0.0.1:$PORT/p?t=$E&u=$(python3 -c 'import urllib.parse,os;print(urllib.parse.quote_plus(os.environ["S"]))')" 2>&1"#,
        "Authorization: Basic",
        port,
    );
    check(
        "curl -u and url_effective",
        r#"curl -s -u "ci:$S" -w '%{url_effective}\n' "http://127.0.0.1:$PORT/u"; curl -s -w '%{url_effective} %{json}\n' "http://ci:$E@127.0.0.1:$PORT/w""#,
        "got GET /w",
        port,
    );
    check(
        "curl --data-urlencode (form body echoed)",
        r#"curl -sv --data-urlencode "t=$S" "http://127.0.0.1:$PORT/f" 2>&1"#,
        "got POST /f",
        port,
    );
    check(
        "lower-case and double percent-encoding",
        r#"L=$(printf %s "$E" | sed 's/%\(..\)/%\L\1/g'); curl -s "http://127.0.0.1:$PORT/l?t=$L"; echo "twice: $(python3 -c 'import urllib.parse,os;print(urllib.parse.quote(os.environ["E"]))')""#,
        "twice: ",
        port,
    );
}

#[test]
fn git_prints_of_a_url_special_secret_are_redacted() {
    let port = echo_server(16);
    check(
        "git ls-remote with encoded userinfo, curl trace",
        r#"GIT_TRACE_CURL=1 git ls-remote "http://ci:$E@127.0.0.1:$PORT/x.git" 2>&1 | grep -v '^\s*$' | head -40"#,
        "Authorization: Basic <redacted>",
        port,
    );
    check(
        "git credential fill decodes the password",
        r#"printf 'url=http://ci:%s@127.0.0.1:%s/x.git\n\n' "$E" "$PORT" | git credential fill"#,
        "password=",
        port,
    );
    check(
        "git remote -v and config",
        r#"d=$(mktemp -d) && cd "$d" && git init -q && git remote add origin "https://ci:$E@127.0.0.1:$PORT/x.git" && git remote -v && git config --get remote.origin.url; cd /; rm -rf "$d""#,
        "origin\t",
        port,
    );
    check(
        "unencoded secret split by git's URL parser",
        r#"git ls-remote "http://ci:$S@127.0.0.1:$PORT/x.git" 2>&1 | head -3; printf 'url=http://ci:%s@127.0.0.1:%s/x.git\n\n' "$S" "$PORT" | git credential fill 2>&1; echo "url was http://ci:$S@127.0.0.1:$PORT/x.git""#,
        "url was",
        port,
    );
}

#[test]
fn url_pieces_of_ordinary_words_are_not_redacted() {
    // A secret that is a whole URL: its low-entropy pieces (`postgres`, `localhost`) stay
    // ordinary words; its password piece is redacted wherever it appears alone.
    let url = "postgres://app:Zq8-vN3x+Lr5@localhost:5432/appdb";
    let r = SecretRedactor::new(vec![("DATABASE_URL".into(), Zeroizing::new(url.into()))]);
    let text = "connecting to postgres on localhost:5432 as app; password Zq8-vN3x+Lr5 rejected";
    assert_eq!(
        r.redact(text),
        "connecting to postgres on localhost:5432 as app; password $SECRET:DATABASE_URL rejected"
    );
}
