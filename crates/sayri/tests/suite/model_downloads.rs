//! Voice model downloads and checks through the real `sayri` binary, against a loopback file
//! server that overflows, cuts and holds its answers: a download not in the catalog stops at
//! its kind's maximum, a broken one says how much arrived and the next one continues it, two
//! downloads of one model (two CLI processes, or the CLI and the daemon) never share a `.part`
//! file, and `sayri models list` / `verify` tell verified, unverified and corrupt models apart.

use super::support::*;
use sayri_testkit::file_server::{File, FileServer};
use sayri_voice::models::sha256_file;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn sayri(env: &Env, models: &Path, args: &[&str]) -> Output {
    env.cmd()
        .env("SAYRI_VOICE_MODELS_DIR", models)
        .args(args)
        .output()
        .unwrap()
}

/// `sayri ARGS` running, with its stderr lines sent to the receiver as they come.
fn spawn(env: &Env, models: &Path, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = env
        .cmd()
        .env("SAYRI_VOICE_MODELS_DIR", models)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Waits up to `limit` for a line of `rx` containing `text`.
fn line_with(rx: &mpsc::Receiver<String>, text: &str, limit: Duration) -> Option<String> {
    let deadline = std::time::Instant::now() + limit;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(text) => return Some(l),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 17 + u64::from(seed)) as u8)
        .collect()
}

fn digest(bytes: &[u8], dir: &Path) -> String {
    let p = dir.join("digest-input");
    std::fs::write(&p, bytes).unwrap();
    sha256_file(&p).unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
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
fn a_download_by_url_without_a_length_stops_at_the_most_its_kind_may_have() {
    let server = FileServer::start(vec![(
        "endless.onnx",
        File {
            endless: true,
            ..File::new(vec![0u8; 4096])
        },
    )]);
    let env = Env::new();
    let models = env.dir.path().join("models");
    let url = server.url("endless.onnx");
    let sha = "ab".repeat(32);
    let out = sayri(
        &env,
        &models,
        &[
            "models", "download", "wakeword", "endless", "--url", &url, "--sha256", &sha,
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("more than the 33554432 bytes this model may have; nothing was installed"),
        "{err}"
    );
    assert_eq!(
        names_in(&models.join("wakeword")),
        vec!["endless.onnx.lock".to_string()],
        "no model and no .part file"
    );
}

#[test]
fn a_download_cut_short_says_how_much_arrived_and_the_next_one_continues_it() {
    let whole = body(2_000_000, 1);
    let server = FileServer::start(vec![(
        "ggml-cut.bin",
        File {
            cut_first_after: Some(700_000),
            ..File::new(whole.clone())
        },
    )]);
    let env = Env::new();
    let models = env.dir.path().join("models");
    let url = server.url("ggml-cut.bin");
    let sha = digest(&whole, env.dir.path());
    let args = [
        "models", "download", "whisper", "cut", "--url", &url, "--sha256", &sha,
    ];
    let first = sayri(&env, &models, &args);
    assert!(!first.status.success());
    let err = stderr(&first);
    assert!(err.contains("after 700000 of 2000000 bytes (35%)"), "{err}");
    assert!(
        err.contains("the 700000 bytes that arrived are kept, and the next download of it continues from there"),
        "{err}"
    );
    assert!(!err.contains("error decoding response body"), "{err}");
    let second = sayri(&env, &models, &args);
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains(
            "continuing the earlier download of whisper cut from 700000 of 2000000 bytes (35%)"
        ),
        "{}",
        stderr(&second)
    );
    assert!(
        stdout(&second).contains("continued from 0.7 MB, sha256 verified"),
        "{}",
        stdout(&second)
    );
    assert_eq!(
        sha256_file(&models.join("whisper/ggml-cut.bin")).unwrap(),
        sha
    );
    let seen = server.seen_for("ggml-cut.bin");
    assert_eq!(seen[1].range.as_deref(), Some("bytes=700000-"));
}

#[test]
fn a_second_download_of_the_same_model_waits_for_the_first_naming_it_and_fetches_nothing() {
    let whole = body(1_000_000, 2);
    let server = FileServer::start(vec![(
        "w.onnx",
        File {
            hold_after: Some(100_000),
            ..File::new(whole.clone())
        },
    )]);
    let env = Env::new();
    let models = env.dir.path().join("models");
    let url = server.url("w.onnx");
    let sha = digest(&whole, env.dir.path());
    let args = [
        "models", "download", "wakeword", "w", "--url", &url, "--sha256", &sha,
    ];
    let (first, _) = spawn(&env, &models, &args);
    let first_pid = first.id();
    assert!(eventually(Duration::from_secs(20), || !server
        .seen_for("w.onnx")
        .is_empty()));
    let (second, lines) = spawn(&env, &models, &args);
    let waiting = line_with(&lines, "is running", Duration::from_secs(20));
    server.release();
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    let waiting = waiting.expect("the second says whom it waits for");
    assert!(
        waiting.contains(&format!(
            "another download of wakeword w is running (pid {first_pid}: sayri models download); waiting for it to finish"
        )),
        "{waiting}"
    );
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stdout(&first).contains("installed wakeword w"),
        "{}",
        stdout(&first)
    );
    assert!(
        stdout(&second).contains("wakeword w is already installed (sha256 verified)"),
        "{}",
        stdout(&second)
    );
    assert_eq!(
        server.seen_for("w.onnx").len(),
        1,
        "one transfer, one .part"
    );
    assert_eq!(sha256_file(&models.join("wakeword/w.onnx")).unwrap(), sha);
}

#[test]
fn models_list_marks_unverified_and_corrupt_models_and_verify_fails_for_a_corrupt_one() {
    let env = Env::new();
    let models = env.dir.path().join("models");
    let src = env.dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let (plain, checked) = (body(40_000, 3), body(60_000, 4));
    std::fs::write(src.join("plain.onnx"), &plain).unwrap();
    std::fs::write(src.join("checked.onnx"), &checked).unwrap();
    let sha = digest(&checked, env.dir.path());
    let plain_path = src.join("plain.onnx");
    let out = sayri(
        &env,
        &models,
        &["models", "import", "wakeword", plain_path.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("unverified: installed without a checksum"),
        "{}",
        stdout(&out)
    );
    let checked_path = src.join("checked.onnx");
    let out = sayri(
        &env,
        &models,
        &[
            "models",
            "import",
            "vad",
            checked_path.to_str().unwrap(),
            "--sha256",
            &sha,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let list = stdout(&sayri(&env, &models, &["models", "list"]));
    let row = |name: &str| {
        list.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}: {list}"))
            .to_string()
    };
    assert!(row("plain").contains(" unverified "), "{list}");
    assert!(row("checked").contains(" verified "), "{list}");

    let out = sayri(&env, &models, &["models", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("wakeword plain: unchanged since it was installed, but unverified"),
        "{text}"
    );
    assert!(
        text.contains("vad checked: intact: its sha256 matches the checksum given"),
        "{text}"
    );

    // One byte of the checked model changes; its size does not.
    let mut bytes = checked.clone();
    bytes[30_000] ^= 0x40;
    std::fs::write(models.join("vad/checked.onnx"), &bytes).unwrap();
    let out = sayri(&env, &models, &["models", "verify", "checked"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(&format!(
            "vad checked: CORRUPT: the sha256 of checked.onnx is {}",
            digest(&bytes, env.dir.path())
        )) && stdout(&out).contains(&format!("not {sha} (the checksum given)"))
            && stdout(&out).contains(
                "`sayri models import vad FILE --name checked` with a good copy replaces it"
            ),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("1 of 1 voice models is corrupt"),
        "{}",
        stderr(&out)
    );
    let list = stdout(&sayri(&env, &models, &["models", "list"]));
    assert!(
        list.lines()
            .any(|l| l.contains("checked") && l.contains("CORRUPT")),
        "{list}"
    );
    let out = sayri(&env, &models, &["models", "verify", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let corrupt: Vec<(&str, bool)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["corrupt"] == json!(true)))
        .collect();
    assert_eq!(corrupt, vec![("plain", false), ("checked", true)]);

    let out = sayri(&env, &models, &["models", "verify", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no installed voice model is named \"nosuch\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_daemon_waits_for_a_cli_download_of_the_same_model_and_finds_it_installed() {
    let whole = body(800_000, 5);
    let server = FileServer::start(vec![(
        "shared.onnx",
        File {
            hold_after: Some(200_000),
            ..File::new(whole.clone())
        },
    )]);
    let env = Env::new();
    let models = env.dir.path().join("models");
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        "[stt]\nmode = \"manual\"\n",
    )
    .unwrap();
    let mut c = env.cmd();
    c.env("SAYRI_VOICE_MODELS_DIR", &models);
    let _daemon = env.start_daemon_cmd(c);
    let url = server.url("shared.onnx");
    let sha = digest(&whole, env.dir.path());
    let (cli, _) = spawn(
        &env,
        &models,
        &[
            "models", "download", "wakeword", "shared", "--url", &url, "--sha256", &sha,
        ],
    );
    let cli_pid = cli.id();
    assert!(eventually(Duration::from_secs(20), || !server
        .seen_for("shared.onnx")
        .is_empty()));
    let mut client = RawClient::connect(&env.socket());
    client
        .writer
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok();
    let r = client.call(
        "asset_download",
        json!({"kind": "wake_word", "params": {"name": "shared", "url": url, "sha256": sha}}),
        1,
    );
    assert_eq!(r["result"]["started"], true, "{r}");
    let mut waiting = None;
    let last = loop {
        let v = client.read_value();
        if v["event"] != "asset_progress" {
            continue;
        }
        if let Some(w) = v["waiting"].as_str() {
            waiting = Some(w.to_string());
            server.release();
        }
        if v.get("done").is_some() {
            break v;
        }
    };
    let cli = cli.wait_with_output().unwrap();
    assert!(cli.status.success(), "{}", stderr(&cli));
    let waiting = waiting.expect("the daemon said it waits");
    assert!(
        waiting.contains(&format!("(pid {cli_pid}: sayri models download)"))
            && waiting.contains("another download of it runs"),
        "{waiting}"
    );
    assert_eq!(
        (last["done"].clone(), last["already_installed"].clone()),
        (json!(true), json!(true)),
        "{last}"
    );
    assert_eq!(server.seen_for("shared.onnx").len(), 1, "one transfer");
}
