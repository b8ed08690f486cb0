//! `asset_download` over the real daemon: a real Piper voice from the local package cache
//! (installed by `./scripts/setup --tests`), served by a loopback HTTP server, arrives with
//! `asset_progress` events in whole, growing percents ending at 100, is installed only after
//! its sha256 matched, and then speaks through the real `sayri say`. The same asset is never
//! downloaded twice at once, and a file whose sha256 differs installs nothing.

use super::support::*;
use sayri_voice::models::{ModelStore, sha256_file};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HINT: &str = "voice models are not installed: run ./scripts/setup --tests (or --voice)";

/// A loopback HTTP server for `files` (`/name` → bytes). The body of `hold` is sent a quarter
/// at a time up to the first quarter, then waits for `release` before sending the rest.
pub(super) struct FileServer {
    pub(super) base: String,
    pub(super) requests: Arc<Mutex<Vec<String>>>,
}

pub(super) fn serve(
    files: Vec<(String, Vec<u8>)>,
    hold: Option<(&str, mpsc::Receiver<()>)>,
) -> FileServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let files = Arc::new(files);
    let held = hold.map(|(name, rx)| (format!("/{name}"), Arc::new(Mutex::new(Some(rx)))));
    let log = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let (files, log, held) = (files.clone(), log.clone(), held.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(s.try_clone().unwrap());
                let mut first = String::new();
                reader.read_line(&mut first).unwrap();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                        break;
                    }
                }
                let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
                log.lock().unwrap().push(path.clone());
                let Some((_, body)) = files.iter().find(|(n, _)| format!("/{n}") == path) else {
                    let _ = s.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    return;
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                s.write_all(head.as_bytes()).unwrap();
                let waiting = held
                    .as_ref()
                    .filter(|(p, _)| *p == path)
                    .and_then(|(_, rx)| rx.lock().unwrap().take());
                let mut sent = 0;
                if let Some(rx) = waiting {
                    let quarter = body.len() / 4;
                    let _ = s.write_all(&body[..quarter]);
                    let _ = s.flush();
                    sent = quarter;
                    let _ = rx.recv_timeout(Duration::from_secs(120));
                }
                let _ = s.write_all(&body[sent..]);
            });
        }
    });
    FileServer { base, requests }
}

/// The real voice model store of the package cache.
fn cache() -> ModelStore {
    let store = ModelStore::open_default();
    let voice = store.root().join("piper/en_US-joe-medium.onnx");
    assert!(voice.is_file(), "{HINT} ({} missing)", voice.display());
    store
}

/// A daemon whose voice model store is `models` (empty at first), speaking to `speaker`.
fn daemon(env: &Env, models: &Path, piper: &Path, speaker: &Path) -> Daemon {
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[stt]\nmode = \"manual\"\n\n[tts]\nlanguage = \"en_US\"\nvoice = \"joe\"\nquality = \"medium\"\noutput_device = \"file:{}\"\n",
            speaker.display()
        ),
    )
    .unwrap();
    let mut c = env.cmd();
    c.env("SAYRI_VOICE_MODELS_DIR", models)
        .env("SAYRI_PIPER", piper);
    env.start_daemon_cmd(c)
}

/// `asset_progress` events of `token` until the one with `done`.
fn progress_until_done(c: &mut RawClient, token: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let v = c.read_value();
        if v["event"] == "asset_progress" && v["token"] == token {
            let done = v.get("done").is_some();
            out.push(v);
            if done {
                return out;
            }
        }
    }
}

#[test]
fn a_voice_downloaded_from_the_package_cache_reports_whole_percents_to_100_and_then_speaks() {
    let cached = cache();
    let piper = cached
        .piper_program()
        .unwrap_or_else(|| panic!("{HINT} (no piper program)"));
    let onnx = cached.root().join("piper/en_US-joe-medium.onnx");
    let sha = sha256_file(&onnx).unwrap();
    let (release, held) = mpsc::channel();
    let server = serve(
        vec![
            (
                "en_US-joe-medium.onnx".into(),
                std::fs::read(&onnx).unwrap(),
            ),
            (
                "en_US-joe-medium.onnx.json".into(),
                std::fs::read(cached.root().join("piper/en_US-joe-medium.onnx.json")).unwrap(),
            ),
        ],
        Some(("en_US-joe-medium.onnx", held)),
    );
    let env = Env::new();
    let models = env.dir.path().join("models");
    let speaker = env.dir.path().join("spoken.wav");
    let _d = daemon(&env, &models, &piper, &speaker);
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_secs(120)))
        .ok();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok();

    // Not installed yet: the setting that names it is refused.
    let r = c.call(
        "config_set",
        json!({"key": "tts.piper_voice", "value": "en_US-joe-medium"}),
        1,
    );
    assert_eq!(r["code"], "invalid_params", "{r}");

    let params = json!({"kind": "piper_voice", "params": {
        "language": "en_US", "voice": "joe", "quality": "medium",
        "url": format!("{}/en_US-joe-medium.onnx", server.base), "sha256": sha}});
    let r = c.call("asset_download", params.clone(), 2);
    let token = "piper_voice:en_US-joe-medium";
    assert_eq!(
        r["result"],
        json!({"started": true, "token": token, "kind": "piper_voice", "name": "en_US-joe-medium"}),
        "{r}"
    );
    // While the server holds the rest of the file, the same asset is not downloaded twice.
    let again = c.call("asset_download", params, 3);
    assert_eq!(
        again["result"],
        json!({"started": false, "already_running": true, "token": token}),
        "{again}"
    );
    let mut events = Vec::new();
    while events
        .last()
        .is_none_or(|e: &Value| e["percent"].as_u64().unwrap_or(0) < 20)
    {
        let v = watcher.read_value();
        if v["event"] == "asset_progress" {
            events.push(v);
        }
    }
    release.send(()).unwrap();
    events.extend(progress_until_done(&mut watcher, token));

    let percents: Vec<u64> = events
        .iter()
        .map(|e| e["percent"].as_u64().expect("whole percents"))
        .collect();
    assert_eq!(percents.first(), Some(&0), "{percents:?}");
    assert_eq!(percents.last(), Some(&100), "{percents:?}");
    assert!(
        percents.windows(2).all(|w| w[0] < w[1]),
        "growing, never repeated: {percents:?}"
    );
    assert!(percents.len() > 10, "progress on the way: {percents:?}");
    for e in &events {
        assert_eq!(
            (e["token"].as_str(), e["kind"].as_str()),
            (Some(token), Some("piper_voice"))
        );
    }
    let last = events.last().unwrap();
    assert_eq!(last["done"], true, "{last}");
    let installed = models.join("piper/en_US-joe-medium.onnx");
    assert_eq!(last["path"], json!(installed), "{last}");
    assert_eq!(sha256_file(&installed).unwrap(), sha);
    assert!(models.join("piper/en_US-joe-medium.onnx.json").is_file());
    assert!(
        !models.join("piper/en_US-joe-medium.onnx.part").exists(),
        "no partial file stays"
    );
    assert_eq!(
        server.requests.lock().unwrap().clone(),
        ["/en_US-joe-medium.onnx", "/en_US-joe-medium.onnx.json"],
        "one transfer of each file"
    );

    // Usable: the setting takes it, and the real `sayri say` speaks with it.
    let r = c.call(
        "config_set",
        json!({"key": "tts.piper_voice", "value": "en_US-joe-medium"}),
        4,
    );
    assert_eq!(r["ok"], true, "{r}");
    let wav = env.dir.path().join("hello.wav");
    let out = env
        .cmd()
        .env("SAYRI_VOICE_MODELS_DIR", &models)
        .env("SAYRI_PIPER", &piper)
        .args([
            "say",
            "--to-file",
            wav.to_str().unwrap(),
            "The voice arrived.",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "sayri say: {}", stderr(&out));
    assert!(
        stderr(&out).contains("piper en_US-joe-medium"),
        "spoken by the downloaded voice: {}",
        stderr(&out)
    );
    let spoken = std::fs::metadata(&wav).unwrap().len();
    assert!(spoken > 20_000, "about a second of speech: {spoken} bytes");
}

#[test]
fn a_download_whose_sha256_differs_installs_nothing_and_bad_requests_say_what_to_give() {
    let cached = cache();
    let jarvis = cached.root().join("wakeword/hey_jarvis_v0.1.onnx");
    assert!(jarvis.is_file(), "{HINT}");
    let server = serve(
        vec![(
            "hey_jarvis_v0.1.onnx".into(),
            std::fs::read(&jarvis).unwrap(),
        )],
        None,
    );
    let env = Env::new();
    let models = env.dir.path().join("models");
    let piper = PathBuf::from("/nonexistent/piper");
    let _d = daemon(&env, &models, &piper, &env.dir.path().join("out.wav"));
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok();
    let url = format!("{}/hey_jarvis_v0.1.onnx", server.base);
    let r = c.call(
        "asset_download",
        json!({"kind": "wake_word", "params": {"name": "hey_jarvis_v0.1", "url": url,
                                                "sha256": "0".repeat(64)}}),
        1,
    );
    assert_eq!(r["result"]["started"], true, "{r}");
    let events = progress_until_done(&mut c, "wake_word:hey_jarvis_v0.1");
    let last = events.last().unwrap();
    assert_eq!(last["done"], false, "{last}");
    assert!(
        last["error"].as_str().unwrap().contains("sha256 mismatch")
            && last["error"]
                .as_str()
                .unwrap()
                .contains("nothing was installed"),
        "{last}"
    );
    let left: Vec<_> = std::fs::read_dir(models.join("wakeword"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("hey_jarvis_v0.1.onnx.lock")],
        "no model and no partial file, only the model's lock file"
    );

    // The right checksum installs it, under its name.
    let sha = sha256_file(&jarvis).unwrap();
    let r = c.call(
        "asset_download",
        json!({"kind": "wake_word", "params": {"name": "hey_jarvis_v0.1", "url": url, "sha256": sha}}),
        2,
    );
    assert_eq!(r["result"]["started"], true, "{r}");
    let last = progress_until_done(&mut c, "wake_word:hey_jarvis_v0.1")
        .pop()
        .unwrap();
    assert_eq!(
        (last["done"].clone(), last["percent"].clone()),
        (json!(true), json!(100))
    );
    assert_eq!(
        sha256_file(&models.join("wakeword/hey_jarvis_v0.1.onnx")).unwrap(),
        sha
    );

    for (params, says) in [
        (
            json!({"kind": "whisper_model", "params": {"model_size": "huge"}}),
            "unknown whisper model: huge",
        ),
        (
            json!({"kind": "piper_voice", "params": {"language": "en_US", "voice": "joe"}}),
            "params.sha256 is missing",
        ),
        (
            json!({"kind": "wake_word", "params": {"name": "x", "url": "file:///etc/passwd", "sha256": sha}}),
            "not an http",
        ),
        (
            json!({"kind": "wake_word", "params": {"name": "../../x", "url": url, "sha256": sha}}),
            "bad model name",
        ),
        (
            json!({"kind": "sound_font", "params": {}}),
            "unknown variant",
        ),
    ] {
        let r = c.call("asset_download", params.clone(), 3);
        assert_eq!(r["code"], "invalid_params", "{params}: {r}");
        assert!(r["error"].as_str().unwrap().contains(says), "{params}: {r}");
    }
}
