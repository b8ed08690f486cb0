//! The reply and event types read and write the daemon's wire byte for byte.
//!
//! `tests/golden/replies/<command>.ndjson` and `tests/golden/events/<event>.ndjson` hold
//! frames the daemon sent before these types existed (recorded from the `sayri` crate's
//! socket tests, one line per distinct shape; temporary folders renamed `/tmp/sayri-golden`).
//! Each one, read into its type and written again, must give the same bytes: same names, same
//! `null` versus absent, same numbers, nothing lost or added.

use sayri_protocol::event::{self, AnyEvent};
use sayri_protocol::{Event, Response, ndjson, params};
use std::path::{Path, PathBuf};

fn golden(kind: &str) -> Vec<(String, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(kind);
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ndjson"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    files.sort();
    files
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn every_recorded_reply_reads_into_its_type_and_writes_back_the_same_bytes() {
    let mut problems = Vec::new();
    let files = golden("replies");
    assert!(files.len() > 60, "the recordings are there");
    for (cmd, path) in files {
        let info = params::info(&cmd).unwrap_or_else(|| panic!("{cmd} has no params type"));
        for line in lines(&path) {
            let Response::Ok { result, id } = serde_json::from_str(&line).unwrap() else {
                panic!("{cmd}: a recorded reply is a success: {line}");
            };
            match (info.reply_round_trip)(result) {
                Ok(again) => {
                    let written = ndjson::encode_line(&Response::ok(again, id)).unwrap();
                    let written = String::from_utf8(written).unwrap();
                    if written.trim_end() != line {
                        problems.push(format!("{cmd}:\n  recorded {line}\n  written  {written}"));
                    }
                }
                Err(e) => problems.push(format!("{cmd}: {e}\n  {line}")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_recorded_event_reads_into_its_type_and_writes_back_the_same_bytes() {
    let mut problems = Vec::new();
    let files = golden("events");
    assert!(files.len() > 25, "the recordings are there");
    for (name, path) in files {
        for line in lines(&path) {
            let frame: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(frame.event, name, "{line}");
            match AnyEvent::read(&frame) {
                Ok(AnyEvent::Unknown(_)) => problems.push(format!("{name} has no type")),
                Ok(typed) => {
                    let written = ndjson::encode_line(&typed.frame().unwrap()).unwrap();
                    let written = String::from_utf8(written).unwrap();
                    if written.trim_end() != line {
                        problems.push(format!("{name}:\n  recorded {line}\n  written  {written}"));
                    }
                }
                Err(e) => problems.push(format!("{e}\n  {line}")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The replies and events no recording has (the socket tests only see them refused, or
/// through the CLI): each says why, and has a round trip in `round_trip.rs`.
const NOT_RECORDED: &[(&str, &str)] = &[
    ("listen", "the socket tests capture through `sayri listen`"),
    (
        "transcript",
        "the socket tests capture through `sayri listen`",
    ),
];

#[test]
fn every_reply_and_event_kind_is_recorded_or_says_why_not() {
    let replies: Vec<String> = golden("replies").into_iter().map(|(n, _)| n).collect();
    let events: Vec<String> = golden("events").into_iter().map(|(n, _)| n).collect();
    let why = |n: &str| NOT_RECORDED.iter().any(|(m, _)| *m == n);
    for info in params::ALL {
        assert!(
            replies.iter().any(|r| r == info.cmd) || why(info.cmd),
            "no recorded reply of {}",
            info.cmd
        );
    }
    for info in event::ALL {
        assert!(
            events.iter().any(|e| e == info.name) || why(info.name),
            "no recorded event {}",
            info.name
        );
    }
}
