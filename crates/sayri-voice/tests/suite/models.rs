//! Voice model management: import, download (over loopback HTTP), sha256 checks, progress,
//! removal, and the ggml file the setup script converted from CTranslate2.

use super::support::store;
use sayri_voice::models::{
    Event, ModelError, ModelKind, ModelStore, Progress, Request, download, sha256_file,
};
use std::io::{Read, Write};
use std::net::TcpListener;

fn fake_model(dir: &std::path::Path, name: &str, bytes: usize) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, vec![7u8; bytes]).unwrap();
    p
}

#[test]
fn import_checks_sha256_and_installs_nothing_on_mismatch() {
    let src = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let s = ModelStore::at(root.path());
    let file = fake_model(src.path(), "alexa.onnx", 300_000);
    let good = sha256_file(&file).unwrap();
    let bad = "0".repeat(64);
    let err = s
        .import(ModelKind::WakeWord, "alexa", &file, Some(&bad), &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, ModelError::Checksum { .. }), "{err}");
    assert!(err.to_string().contains("nothing was installed"));
    assert!(s.list().is_empty(), "no model and no .part left behind");
    let left: Vec<String> = std::fs::read_dir(root.path().join("wakeword"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        vec!["alexa.onnx.lock".to_string()],
        "only the model's lock file"
    );
    let mut seen = Vec::new();
    let m = s
        .import(
            ModelKind::WakeWord,
            "alexa",
            &file,
            Some(&good.to_uppercase()),
            &mut |p: Progress| seen.push(p),
        )
        .unwrap();
    assert_eq!(m.bytes, 300_000);
    assert_eq!(
        seen.last().map(|p| (p.done, p.total)),
        Some((300_000, Some(300_000)))
    );
    assert_eq!(s.list().len(), 1);
    s.remove(ModelKind::WakeWord, "alexa").unwrap();
    assert!(s.list().is_empty());
    let again = s.remove(ModelKind::WakeWord, "alexa").unwrap_err();
    assert!(again.to_string().contains("not installed"), "{again}");
}

#[test]
fn a_piper_voice_needs_its_config_and_names_are_checked() {
    let src = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let s = ModelStore::at(root.path());
    let onnx = fake_model(src.path(), "v.onnx", 10);
    let e = s
        .import(ModelKind::PiperVoice, "v", &onnx, None, &mut |_| {})
        .unwrap_err();
    assert!(e.to_string().contains("v.onnx.json"), "{e}");
    std::fs::write(src.path().join("v.onnx.json"), "{}").unwrap();
    let m = s
        .import(ModelKind::PiperVoice, "v", &onnx, None, &mut |_| {})
        .unwrap();
    assert_eq!(m.bytes, 12, "voice and config counted");
    let e = s
        .import(ModelKind::Whisper, "../evil", &onnx, None, &mut |_| {})
        .unwrap_err();
    assert!(e.to_string().contains("bad model name"), "{e}");
}

/// Serves `body` once per connection on loopback, as a plain HTTP/1.1 response.
fn serve(body: Vec<u8>, connections: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let mut s = stream.unwrap();
            let mut req = [0u8; 2048];
            let _ = s.read(&mut req);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            for chunk in body.chunks(64 * 1024) {
                let _ = s.write_all(chunk);
            }
        }
    });
    format!("http://{addr}/ggml-test.bin")
}

#[test]
fn download_reports_progress_and_checks_sha256() {
    let body: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("b");
    std::fs::write(&f, &body).unwrap();
    let sha = sha256_file(&f).unwrap();
    let url = serve(body, 2);
    let root = tempfile::tempdir().unwrap();
    let s = ModelStore::at(root.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let wrong = "f".repeat(64);
    let e = rt
        .block_on(download(
            &s,
            &Request::new(ModelKind::Whisper, "test", &url, Some(&wrong), "a test"),
            &mut |_| {},
        ))
        .unwrap_err();
    assert!(matches!(e, ModelError::Checksum { .. }), "{e}");
    assert!(s.list().is_empty());
    let mut last = None;
    let m = rt
        .block_on(download(
            &s,
            &Request::new(ModelKind::Whisper, "test", &url, Some(&sha), "a test"),
            &mut |e| {
                if let Event::Progress(p) = e {
                    last = Some(p)
                }
            },
        ))
        .unwrap()
        .model;
    assert_eq!(m.bytes, 700_000);
    assert_eq!(
        last.map(|p: Progress| (p.done, p.total)),
        Some((700_000, Some(700_000)))
    );
    assert_eq!(s.list()[0].name, "test");
}

#[test]
fn download_failure_names_the_url() {
    let root = tempfile::tempdir().unwrap();
    let s = ModelStore::at(root.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt
        .block_on(download(
            &s,
            &Request::new(
                ModelKind::Whisper,
                "x",
                "http://127.0.0.1:9/none.bin",
                None,
                "a test",
            ),
            &mut |_| {},
        ))
        .unwrap_err();
    assert!(e.to_string().contains("127.0.0.1:9/none.bin"), "{e}");
    assert!(s.list().is_empty());
}

#[test]
fn converted_tiny_en_has_the_reference_layout() {
    let p = store().require(ModelKind::Whisper, "tiny.en").unwrap();
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(
        bytes.len(),
        77_704_698,
        "size of whisper.cpp's own conversion"
    );
    let i32_at = |o: usize| i32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    assert_eq!(i32_at(0), 0x6767_6d6c, "ggml magic");
    let hp: Vec<i32> = (0..11).map(|k| i32_at(4 + 4 * k)).collect();
    assert_eq!(hp, vec![51864, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1]);
}
