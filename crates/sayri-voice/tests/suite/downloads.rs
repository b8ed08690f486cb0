//! Model downloads against a loopback file server that overflows, cuts, stalls, changes and
//! serves ranges: every download has a size cap, a broken one is continued by the next, two of
//! the same model never share a `.part` file, and what is installed is recorded with what its
//! sha256 was checked against, which `verify` and the listing's integrity read.

use sayri_testkit::file_server::{File, FileServer};
use sayri_voice::models::{
    Event, Integrity, ModelError, ModelKind, ModelStore, Reference, Request, Verdict, download,
    max_bytes, sha256_file,
};
use std::path::Path;
use std::time::Duration;

fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 31 + u64::from(seed)) as u8)
        .collect()
}

fn sha(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    std::fs::write(&p, bytes).unwrap();
    sha256_file(&p).unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The files the store's `kind` directory holds, sorted.
fn files(root: &Path, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join(dir))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_download_with_a_checksum_but_no_known_size_stops_at_the_most_its_kind_may_have() {
    let server = FileServer::start(vec![(
        "big.onnx",
        File {
            endless: true,
            ..File::new(vec![1u8; 1000])
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("big.onnx");
    let digest = "ab".repeat(32);
    let req = Request::new(ModelKind::WakeWord, "big", &url, Some(&digest), "a test");
    let e = rt()
        .block_on(download(&store, &req, &mut |_| {}))
        .unwrap_err();
    let cap = ModelKind::WakeWord.max_download_bytes();
    assert_eq!(cap, 32 << 20);
    assert!(
        e.to_string().contains(&format!(
            "more than the {cap} bytes this model may have; nothing was installed"
        )),
        "{e}"
    );
    assert_eq!(
        files(root.path(), "wakeword"),
        vec!["big.onnx.lock".to_string()],
        "no model, no .part left behind"
    );
}

#[test]
fn the_cap_is_the_catalog_size_for_a_file_the_catalog_knows_and_the_kinds_maximum_otherwise() {
    let tiny = sayri_voice::models::catalog::lookup(ModelKind::Whisper, "tiny").unwrap();
    let catalog_cap = u64::from(tiny.megabytes) * (1 << 20) * 11 / 10;
    // Known by name and checksum, by checksum alone under another name, or by name without one.
    assert_eq!(
        max_bytes(ModelKind::Whisper, "tiny", Some(tiny.sha256)),
        catalog_cap
    );
    let upper = tiny.sha256.to_ascii_uppercase();
    assert_eq!(
        max_bytes(ModelKind::Whisper, "mine", Some(&upper)),
        catalog_cap
    );
    assert_eq!(max_bytes(ModelKind::Whisper, "tiny", None), catalog_cap);
    // The catalog's name with another checksum is another file: only the kind bounds it.
    let other = "cd".repeat(32);
    assert_eq!(
        max_bytes(ModelKind::Whisper, "tiny", Some(&other)),
        ModelKind::Whisper.max_download_bytes()
    );
    // A whisper checksum does not size a file of another kind.
    assert_eq!(
        max_bytes(ModelKind::PiperVoice, "v", Some(tiny.sha256)),
        ModelKind::PiperVoice.max_download_bytes()
    );
}

#[test]
fn an_announced_length_over_the_cap_is_refused_before_a_byte_is_written() {
    let server = FileServer::start(vec![("m.bin", File::new(vec![0u8; 5000]))]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("m.bin");
    let mut req = Request::new(ModelKind::Whisper, "m", &url, None, "a test");
    req.max_bytes = Some(4096);
    let e = rt()
        .block_on(download(&store, &req, &mut |_| {}))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("announces 5000 bytes, more than the 4096 this model may have"),
        "{e}"
    );
    assert!(!root.path().join("whisper/ggml-m.bin.part").exists());
}

#[test]
fn a_transfer_cut_short_is_continued_by_the_next_download_and_installs_the_whole_file() {
    let whole = body(300_000, 3);
    let digest = sha(&whole);
    let server = FileServer::start(vec![(
        "m.bin",
        File {
            cut_first_after: Some(120_000),
            ..File::new(whole.clone())
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("m.bin");
    let req = Request::new(ModelKind::Whisper, "m", &url, Some(&digest), "a test");
    let rt = rt();
    let e = rt
        .block_on(download(&store, &req, &mut |_| {}))
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("after 120000 of 300000 bytes (40%)"),
        "{text}"
    );
    assert!(
        text.contains("the 120000 bytes that arrived are kept"),
        "{text}"
    );
    assert!(!text.contains("error decoding response body"), "{text}");
    assert!(store.list().is_empty(), "nothing installed yet");
    let mut events = Vec::new();
    let done = rt
        .block_on(download(&store, &req, &mut |e| {
            if !matches!(e, Event::Progress(_)) {
                events.push(e)
            }
        }))
        .unwrap();
    assert_eq!(done.resumed_from, 120_000);
    assert_eq!(
        events,
        vec![Event::Resuming {
            from: 120_000,
            total: Some(300_000)
        }]
    );
    assert_eq!(sha256_file(&done.model.path).unwrap(), digest);
    let seen = server.seen_for("m.bin");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].range.as_deref(), Some("bytes=120000-"));
    assert_eq!(seen[1].if_range, File::new(whole).etag);
    assert_eq!(
        files(root.path(), "whisper"),
        vec!["ggml-m.bin".to_string(), "ggml-m.bin.lock".to_string()],
        "the .part and its description are gone"
    );
}

#[test]
fn a_file_changed_on_the_server_since_the_first_part_is_fetched_again_from_zero() {
    let old = body(200_000, 1);
    let new = body(200_000, 2);
    let server = FileServer::start(vec![(
        "m.bin",
        File {
            cut_first_after: Some(50_000),
            etag: Some("\"old\"".into()),
            ..File::new(old.clone())
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("m.bin");
    let digest = sha(&new);
    let req = Request::new(ModelKind::Whisper, "m", &url, Some(&digest), "a test");
    let rt = rt();
    rt.block_on(download(&store, &req, &mut |_| {}))
        .unwrap_err();
    server.set(
        "m.bin",
        File {
            etag: Some("\"new\"".into()),
            ..File::new(new.clone())
        },
    );
    let mut events = Vec::new();
    let done = rt
        .block_on(download(&store, &req, &mut |e| {
            if !matches!(e, Event::Progress(_)) {
                events.push(e)
            }
        }))
        .unwrap();
    assert_eq!(done.resumed_from, 0);
    assert_eq!(
        events,
        vec![Event::Restarting {
            kept: 50_000,
            why: "the file changed on the server".into()
        }]
    );
    assert_eq!(
        sha256_file(&done.model.path).unwrap(),
        digest,
        "the new version whole, nothing of the old one"
    );
}

#[test]
fn a_partial_copy_for_another_checksum_is_not_continued() {
    let whole = body(100_000, 5);
    let server = FileServer::start(vec![(
        "m.bin",
        File {
            cut_first_after: Some(30_000),
            ..File::new(whole.clone())
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("m.bin");
    let rt = rt();
    let wrong = "0".repeat(64);
    let first = Request::new(ModelKind::Whisper, "m", &url, Some(&wrong), "a test");
    rt.block_on(download(&store, &first, &mut |_| {}))
        .unwrap_err();
    assert!(root.path().join("whisper/ggml-m.bin.part").exists());
    let digest = sha(&whole);
    let second = Request::new(ModelKind::Whisper, "m", &url, Some(&digest), "a test");
    let done = rt.block_on(download(&store, &second, &mut |_| {})).unwrap();
    assert_eq!(done.resumed_from, 0);
    assert_eq!(server.seen_for("m.bin")[1].range, None, "a plain GET");
    assert_eq!(sha256_file(&done.model.path).unwrap(), digest);
}

#[test]
fn a_stalled_download_gives_up_after_the_stall_timeout_it_was_given() {
    let server = FileServer::start(vec![(
        "m.bin",
        File {
            hold_after: Some(1000),
            ..File::new(body(4000, 9))
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("m.bin");
    let mut req = Request::new(ModelKind::Whisper, "m", &url, None, "a test");
    req.stall = Duration::from_millis(400);
    let started = std::time::Instant::now();
    let e = rt()
        .block_on(download(&store, &req, &mut |_| {}))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    let text = e.to_string();
    assert!(
        text.contains("no data for 400 ms after 1000 of 4000 bytes (25%)"),
        "{text}"
    );
    assert!(
        text.contains("the 1000 bytes that arrived are kept"),
        "{text}"
    );
    server.release();
}

#[test]
fn a_second_download_of_the_same_model_waits_for_the_first_and_finds_it_installed() {
    let whole = body(200_000, 7);
    let digest = sha(&whole);
    let server = FileServer::start(vec![(
        "m.bin",
        File {
            hold_after: Some(50_000),
            ..File::new(whole)
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("m.bin");
    let rt = rt();
    let (first, second) = rt.block_on(async {
        let a = Request::new(ModelKind::Whisper, "m", &url, Some(&digest), "the first");
        let b = Request::new(ModelKind::Whisper, "m", &url, Some(&digest), "the second");
        let mut first_events = Vec::new();
        let mut second_events = Vec::new();
        let mut on_first = |e| first_events.push(e);
        let mut on_second = |e| second_events.push(e);
        let first = download(&store, &a, &mut on_first);
        let second = async {
            // The first holds the lock by the time its body has started.
            while server.seen_for("m.bin").is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            let release = async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                server.release();
            };
            let (got, ()) = tokio::join!(download(&store, &b, &mut on_second), release);
            got
        };
        let (f, s) = tokio::join!(first, second);
        (f.map(|d| (d, first_events)), s.map(|d| (d, second_events)))
    });
    let (first, _) = first.unwrap();
    let (second, events) = second.unwrap();
    assert!(!first.already_installed);
    assert!(
        second.already_installed,
        "found installed, not fetched again"
    );
    let waiting: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Waiting { holder } => Some(holder),
            _ => None,
        })
        .collect();
    assert_eq!(
        waiting,
        vec![&format!("pid {}: the first", std::process::id())],
        "told once who holds it"
    );
    assert_eq!(server.seen_for("m.bin").len(), 1, "one transfer");
}

#[test]
fn removing_a_model_that_is_being_downloaded_is_refused_naming_the_download() {
    let server = FileServer::start(vec![(
        "m.bin",
        File {
            hold_after: Some(10),
            ..File::new(body(1000, 1))
        },
    )]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    std::fs::create_dir_all(root.path().join("whisper")).unwrap();
    std::fs::write(root.path().join("whisper/ggml-m.bin"), b"old").unwrap();
    let url = server.url("m.bin");
    let rt = rt();
    let result = rt.block_on(async {
        let req = Request::new(ModelKind::Whisper, "m", &url, None, "sayri models download");
        let mut quiet = |_| {};
        let running = download(&store, &req, &mut quiet);
        let remove = async {
            while server.seen_for("m.bin").is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let r = store.remove(ModelKind::Whisper, "m");
            server.release();
            r
        };
        tokio::join!(running, remove).1
    });
    match result {
        Err(ModelError::Busy { holder, .. }) => {
            assert!(holder.ends_with(": sayri models download"), "{holder}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_import_without_a_checksum_is_unverified_and_verify_notices_a_changed_byte() {
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("alexa.onnx");
    std::fs::write(&file, body(50_000, 4)).unwrap();
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let m = store
        .import(ModelKind::WakeWord, "alexa", &file, None, &mut |_| {})
        .unwrap();
    assert!(
        matches!(store.integrity(&m), Integrity::Unverified { ref why } if why.contains("installed without a checksum")),
        "{:?}",
        store.integrity(&m)
    );
    let v = store
        .verify(ModelKind::WakeWord, "alexa", None, &mut |_| {})
        .unwrap();
    assert!(matches!(v, Verdict::Unchanged { .. }), "{v:?}");
    // One byte changes, the size does not: only reading the file shows it.
    let mut bytes = std::fs::read(&m.path).unwrap();
    bytes[20_000] ^= 1;
    std::fs::write(&m.path, &bytes).unwrap();
    assert!(matches!(store.integrity(&m), Integrity::Unverified { .. }));
    let v = store
        .verify(ModelKind::WakeWord, "alexa", None, &mut |_| {})
        .unwrap();
    assert!(v.is_corrupt(), "{v:?}");
    assert!(
        v.describe()
            .contains("the one recorded when it was installed"),
        "{}",
        v.describe()
    );
    assert!(
        matches!(store.integrity(&m), Integrity::Corrupt { .. }),
        "the listing shows the last check"
    );
}

#[test]
fn a_checksum_given_to_verify_makes_an_unverified_model_verified_and_a_size_change_is_corrupt() {
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("v.onnx");
    let bytes = body(20_000, 6);
    std::fs::write(&file, &bytes).unwrap();
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let m = store
        .import(ModelKind::Vad, "v", &file, None, &mut |_| {})
        .unwrap();
    let wrong = "1".repeat(64);
    assert!(
        store
            .verify(ModelKind::Vad, "v", Some(&wrong), &mut |_| {})
            .unwrap()
            .is_corrupt()
    );
    let v = store
        .verify(ModelKind::Vad, "v", Some(&sha(&bytes)), &mut |_| {})
        .unwrap();
    assert!(
        matches!(
            v,
            Verdict::Intact {
                against: Reference::Given,
                ..
            }
        ),
        "{v:?}"
    );
    assert_eq!(
        store.integrity(&m),
        Integrity::Verified {
            against: Reference::Given
        }
    );
    std::fs::write(&m.path, &bytes[..100]).unwrap();
    assert!(
        matches!(store.integrity(&m), Integrity::Corrupt { ref why } if why.contains("it has 100 bytes, 20000 when it was installed")),
        "{:?}",
        store.integrity(&m)
    );
}

#[test]
fn a_downloaded_voice_records_its_config_and_verify_notices_when_the_config_changes() {
    let voice = body(30_000, 8);
    let server = FileServer::start(vec![
        ("v.onnx", File::new(voice.clone())),
        ("v.onnx.json", File::new(b"{\"audio\":{}}".to_vec())),
    ]);
    let root = tempfile::tempdir().unwrap();
    let store = ModelStore::at(root.path());
    let url = server.url("v.onnx");
    let digest = sha(&voice);
    let req = Request::new(ModelKind::PiperVoice, "v", &url, Some(&digest), "a test");
    let d = rt().block_on(download(&store, &req, &mut |_| {})).unwrap();
    let record = store.record(ModelKind::PiperVoice, "v").unwrap();
    assert_eq!(record.reference, Reference::Given);
    assert_eq!(record.source, url);
    assert!(record.config_sha256.is_some());
    assert!(matches!(
        store
            .verify(ModelKind::PiperVoice, "v", None, &mut |_| {})
            .unwrap(),
        Verdict::Intact { .. }
    ));
    std::fs::write(
        root.path().join("piper/v.onnx.json"),
        b"{\"audio\":{\"x\":1}}",
    )
    .unwrap();
    let v = store
        .verify(ModelKind::PiperVoice, "v", None, &mut |_| {})
        .unwrap();
    assert!(
        matches!(&v, Verdict::Corrupt { file, .. } if file.ends_with("v.onnx.json")),
        "{v:?}"
    );
    assert!(matches!(
        store.integrity(&d.model),
        Integrity::Corrupt { .. }
    ));
}
