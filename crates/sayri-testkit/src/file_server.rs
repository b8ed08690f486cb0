//! A loopback HTTP/1.1 file server for download tests: each file can announce its length or
//! not, serve ranges (`Range` with `If-Range` checked against its ETag) or ignore them, cut
//! its first answer short, hold its body at a byte until released (or forever: a stall), or
//! never end. Every request is logged with its `Range` and `If-Range` headers. It runs on
//! plain threads, so sync and async tests alike can use it; it lives as long as the process.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One served file and how it misbehaves.
#[derive(Debug, Clone)]
pub struct File {
    /// The bytes.
    pub body: Vec<u8>,
    /// The `ETag` sent (and compared with `If-Range`).
    pub etag: Option<String>,
    /// Whether a `Range` request gets a `206` (else the whole file, `200`).
    pub ranges: bool,
    /// Send no `Content-Length` (a chunked body).
    pub chunked: bool,
    /// After the body, keep sending bytes (chunked) until the client goes away.
    pub endless: bool,
    /// Close the first answer for this file after this many bytes of its body.
    pub cut_first_after: Option<usize>,
    /// Stop after this many bytes of the body until [`FileServer::release`] (for ever
    /// without it: a stall).
    pub hold_after: Option<usize>,
}

impl File {
    /// `body` with a `Content-Length`, an ETag derived from its length and first bytes, and
    /// ranges served.
    pub fn new(body: Vec<u8>) -> File {
        let tag: u64 = body.iter().take(64).map(|b| u64::from(*b)).sum();
        File {
            etag: Some(format!("\"{}-{tag}\"", body.len())),
            body,
            ranges: true,
            chunked: false,
            endless: false,
            cut_first_after: None,
            hold_after: None,
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The path (`/name`).
    pub path: String,
    /// Its `Range` header.
    pub range: Option<String>,
    /// Its `If-Range` header.
    pub if_range: Option<String>,
}

#[derive(Default)]
struct State {
    files: HashMap<String, File>,
    answered: HashMap<String, usize>,
    seen: Vec<Seen>,
    released: bool,
}

/// The running server (see the module notes).
#[derive(Clone)]
pub struct FileServer {
    base: String,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl FileServer {
    /// Serves `files` (`name` → file, at `/name`) on a loopback port.
    pub fn start(files: Vec<(&str, File)>) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let mut state = State::default();
        for (name, f) in files {
            state.files.insert(format!("/{name}"), f);
        }
        let server = FileServer {
            base,
            state: Arc::new((Mutex::new(state), Condvar::new())),
        };
        let s = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || s.answer(stream));
            }
        });
        server
    }

    /// The URL of file `name`.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// Replaces (or adds) file `name`.
    pub fn set(&self, name: &str, f: File) {
        lock(&self.state.0).files.insert(format!("/{name}"), f);
    }

    /// Lets every held body continue.
    pub fn release(&self) {
        lock(&self.state.0).released = true;
        self.state.1.notify_all();
    }

    /// The requests so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.state.0).seen.clone()
    }

    /// The requests for file `name` so far.
    pub fn seen_for(&self, name: &str) -> Vec<Seen> {
        let path = format!("/{name}");
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    fn answer(&self, mut stream: TcpStream) {
        let Some(seen) = read_head(&stream) else {
            return;
        };
        let (file, nth) = {
            let mut st = lock(&self.state.0);
            st.seen.push(seen.clone());
            let n = {
                let n = st.answered.entry(seen.path.clone()).or_insert(0);
                *n += 1;
                *n
            };
            (st.files.get(&seen.path).cloned(), n)
        };
        let Some(file) = file else {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        };
        let first = range_start(&seen, &file).filter(|f| *f < file.body.len());
        let mut head = String::from(match first {
            Some(_) => "HTTP/1.1 206 Partial Content\r\n",
            None => "HTTP/1.1 200 OK\r\n",
        });
        head.push_str("Connection: close\r\n");
        if let Some(e) = &file.etag {
            head.push_str(&format!("ETag: {e}\r\n"));
        }
        let from = first.unwrap_or(0);
        if first.is_some() {
            let total = file.body.len();
            head.push_str(&format!(
                "Content-Range: bytes {from}-{}/{total}\r\n",
                total - 1
            ));
        }
        if file.chunked || file.endless {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        } else {
            head.push_str(&format!(
                "Content-Length: {}\r\n\r\n",
                file.body.len() - from
            ));
        }
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        self.send_body(&mut stream, &file, from, nth == 1);
    }

    fn send_body(&self, stream: &mut TcpStream, file: &File, from: usize, first: bool) {
        let chunked = file.chunked || file.endless;
        let body = &file.body[from..];
        let stop = if first { file.cut_first_after } else { None };
        let end = stop.unwrap_or(body.len()).min(body.len());
        let hold = file.hold_after.filter(|h| *h < end);
        let mut put = |bytes: &[u8]| -> bool {
            if bytes.is_empty() {
                return true;
            }
            let ok = if chunked {
                write!(stream, "{:x}\r\n", bytes.len()).is_ok()
                    && stream.write_all(bytes).is_ok()
                    && stream.write_all(b"\r\n").is_ok()
            } else {
                stream.write_all(bytes).is_ok()
            };
            ok && stream.flush().is_ok()
        };
        let mut at = 0;
        if let Some(h) = hold {
            if !put(&body[..h]) {
                return;
            }
            at = h;
            let mut st = lock(&self.state.0);
            while !st.released {
                st = self
                    .state
                    .1
                    .wait_timeout(st, Duration::from_secs(600))
                    .map_or_else(|p| p.into_inner().0, |(g, _)| g);
            }
        }
        for piece in body[at..end].chunks(64 * 1024) {
            if !put(piece) {
                return;
            }
        }
        if stop.is_some() {
            return;
        }
        if file.endless {
            while put(&[b'x'; 64 * 1024]) {}
            return;
        }
        if chunked {
            let _ = stream.write_all(b"0\r\n\r\n");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads a request head: its path and range headers.
fn read_head(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut range, mut if_range) = (None, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = Some(value.trim().to_string());
            match name.trim().to_ascii_lowercase().as_str() {
                "range" => range = value,
                "if-range" => if_range = value,
                _ => {}
            }
        }
    }
    Some(Seen {
        path,
        range,
        if_range,
    })
}

/// Where a `206` for `seen` starts: when the file serves ranges, the request asks for
/// `bytes=N-` and its `If-Range` (if any) is the file's ETag.
fn range_start(seen: &Seen, file: &File) -> Option<usize> {
    if !file.ranges {
        return None;
    }
    let first = seen
        .range
        .as_deref()?
        .strip_prefix("bytes=")?
        .strip_suffix('-')?
        .parse()
        .ok()?;
    let same = seen
        .if_range
        .as_deref()
        .is_none_or(|v| Some(v) == file.etag.as_deref());
    same.then_some(first)
}
