//! `sayri-fake-llm` serves a script file as a process.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

struct Kill(std::process::Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn post(port: u16, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serves_a_script_file_and_logs_requests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.sse"), "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"from file\"}}]}\n\ndata: [DONE]\n\n").unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"replies":[{"content":["Hel","lo"]},{"sse_file":"x.sse"},{"status":401,"json":{"error":{"message":"bad key"}}}],"repeat_last":true}"#,
    )
    .unwrap();
    let log = dir.path().join("requests.ndjson");
    let child = Command::new(env!("CARGO_BIN_EXE_sayri-fake-llm"))
        .arg(&script)
        .arg("--log")
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Kill(child);
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("listening http://127.0.0.1:")
        .unwrap()
        .strip_suffix("/v1")
        .unwrap()
        .parse()
        .unwrap();
    assert!(post(port, r#"{"n":1}"#).contains("\"Hel\""));
    assert!(post(port, r#"{"n":2}"#).contains("from file"));
    assert!(post(port, r#"{"n":3}"#).starts_with("HTTP/1.1 401"));
    assert!(
        post(port, r#"{"n":4}"#).starts_with("HTTP/1.1 401"),
        "repeat_last"
    );
    let mut logged = String::new();
    for _ in 0..100 {
        logged = std::fs::read_to_string(&log).unwrap_or_default();
        if logged.lines().count() == 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ns: Vec<i64> = logged
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["body"]["n"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ns, [1, 2, 3, 4]);
}
