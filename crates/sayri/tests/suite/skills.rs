//! Skills on the real binary and daemon: install scanned before anything replaces the installed
//! copy (CLI and IPC), a changed skill or one approved by another scanner version is neither
//! listed in the prompt nor readable by `read_skill` until rescanned, uninstall takes only an
//! installed slug, and hostile archives are refused with nothing written outside the temporary
//! folder.

use super::scripted_turns::{start_model, wait_response, write_config};
use super::support::*;
use sayri_testkit::skills::{fixture, read_dir};
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn case(name: &str) -> String {
    fixture(&format!("cases/{name}")).display().to_string()
}

fn installed(env: &Env) -> PathBuf {
    env.config_dir().join("skills/note-helper")
}

fn record(env: &Env) -> Value {
    let text = std::fs::read(env.config_dir().join("skills/.records/note-helper.json")).unwrap();
    serde_json::from_slice(&text).unwrap()
}

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn list_state(env: &Env) -> String {
    let o = env.run(&["skills", "list", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .find(|s| s["slug"] == "note-helper")
        .map(|s| s["state"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn an_update_that_turns_malicious_is_refused_everywhere_and_v1_stays_byte_identical() {
    let env = Env::new();
    let o = env.run(&["skills", "install", &case("45-skill-v1")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rec = record(&env);
    assert_eq!(rec["report"]["verdict"], "ALLOW");
    assert_eq!(
        rec["scanner_version"],
        sayri_core::domain::skills::SCANNER_VERSION
    );
    assert!(rec["content_hash"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(rec["files"].as_object().unwrap().len(), 2, "{rec}");
    let v1 = read_dir(&installed(&env));

    // A fresh scan, a reinstall under the same name, an update, and an update that accepts
    // warnings: every one refuses v2 with exit 4, and the installed files stay v1.
    let scan = env.run(&["skills", "scan", &case("45-skill-v2"), "--json"]);
    assert_eq!(code(&scan), 4, "{}", stdout(&scan));
    let report: Value = serde_json::from_slice(&scan.stdout).unwrap();
    let kinds: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"fetch_execute"), "{kinds:?}");
    assert!(kinds.contains(&"pre_approval"), "{kinds:?}");
    for args in [
        vec!["skills", "install", &case("45-skill-v2")],
        vec![
            "skills",
            "install",
            &case("45-skill-v2"),
            "--name",
            "note-helper",
        ],
        vec!["skills", "update", "note-helper", &case("45-skill-v2")],
        vec![
            "skills",
            "update",
            "note-helper",
            &case("45-skill-v2"),
            "--accept-warnings",
        ],
    ] {
        let o = env.run(&args);
        assert_eq!(code(&o), 4, "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("BLOCK"), "{}", stderr(&o));
        assert_eq!(
            read_dir(&installed(&env)),
            v1,
            "{args:?} changed the installed copy"
        );
    }

    // Over IPC, with a daemon running: a result carrying the verdict and the findings.
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call(
        "skills_install",
        json!({"path": case("45-skill-v2"), "install_as": "note-helper", "confirm": true}),
        1,
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"]["installed"], false, "{r}");
    assert_eq!(r["result"]["verdict"], "BLOCK", "{r}");
    assert!(
        r["result"]["findings"].as_array().unwrap().len() >= 2,
        "{r}"
    );
    assert_eq!(read_dir(&installed(&env)), v1);
    let r = c.call("skills_list", json!({}), 2);
    assert_eq!(r["result"][0]["state"], "ready", "{r}");
    // A relative path or a registry slug is not read from the daemon's folder.
    let r = c.call("skills_install", json!({"path": "note-helper"}), 3);
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(read_dir(&installed(&env)), v1);
}

/// A scripted turn that reads skill `note-helper` and then answers.
fn read_skill_turn(c: &mut RawClient, id: u64) -> Value {
    c.write(
        (json!({"cmd": "ask", "params": {"text": "note: buy milk", "timeout": 60}, "id": id})
            .to_string()
            + "\n")
            .as_bytes(),
    );
    wait_response(c, id).0
}

fn reply_read_skill() -> Reply {
    Reply::sse(sse::content_stream(&["```read_skill\nnote-helper\n```"]))
}

#[test]
fn a_changed_skill_is_not_offered_nor_read_until_a_rescan_admits_it() {
    let env = Env::new();
    let model = start_model(vec![
        reply_read_skill(),
        Reply::sse(sse::content_stream(&["Noted."])),
        reply_read_skill(),
        Reply::sse(sse::content_stream(&["Noted again."])),
        reply_read_skill(),
        Reply::sse(sse::content_stream(&["Noted once more."])),
    ]);
    write_config(&env, &model, 30, "default");
    assert_eq!(
        code(&env.run(&["skills", "install", &case("45-skill-v1")])),
        0
    );
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok();

    // Ready: listed in the system prompt, and read_skill gives the whole SKILL.md.
    let r = read_skill_turn(&mut c, 1);
    assert_eq!(r["ok"], true, "{r}");
    let bodies = chat_turns(&model);
    let system = bodies[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    println!("system prompt with one skill:\n{system}");
    assert!(
        system.contains("- note-helper: Append a short note"),
        "{system}"
    );
    let observed = last_message(&bodies[1]);
    assert!(observed.contains("bash bin/note.sh"), "{observed}");

    // Edited by hand: not listed, read_skill refuses and says what to run, list says changed.
    std::fs::copy(
        fixture("cases/45-skill-tampered/SKILL.md"),
        installed(&env).join("SKILL.md"),
    )
    .unwrap();
    let r = read_skill_turn(&mut c, 2);
    assert_eq!(r["ok"], true, "{r}");
    let bodies = chat_turns(&model);
    let system = bodies[2]["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("note-helper"), "{system}");
    let observed = last_message(&bodies[3]);
    assert!(
        observed.contains("changed since it was scanned; run `sayri skills scan note-helper`"),
        "{observed}"
    );
    assert!(!observed.contains("sayri.conf"), "{observed}");
    assert_eq!(list_state(&env), "changed");

    // Rescanned as it is now: BLOCK, stays disabled.
    let o = env.run(&["skills", "scan", "note-helper"]);
    assert_eq!(code(&o), 4, "{}", stdout(&o));
    assert_eq!(list_state(&env), "changed");

    // v1's SKILL.md restored and rescanned: ALLOW, offered again.
    std::fs::copy(
        fixture("cases/45-skill-v1/SKILL.md"),
        installed(&env).join("SKILL.md"),
    )
    .unwrap();
    let o = env.run(&["skills", "scan", "note-helper"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(list_state(&env), "ready");
    read_skill_turn(&mut c, 3);
    let bodies = chat_turns(&model);
    assert!(
        bodies[4]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("- note-helper:")
    );
    assert!(last_message(&bodies[5]).contains("bash bin/note.sh"));
}

/// The chat requests of turns (title requests left out).
fn chat_turns(model: &super::scripted_turns::Model) -> Vec<Value> {
    model
        .llm
        .chat_bodies()
        .into_iter()
        .filter(|b| b.get("max_tokens") != Some(&json!(15)))
        .collect()
}

fn last_message(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_record_from_another_scanner_version_is_not_reused() {
    let env = Env::new();
    assert_eq!(
        code(&env.run(&["skills", "install", &case("45-skill-v1")])),
        0
    );
    let path = env.config_dir().join("skills/.records/note-helper.json");
    let mut rec = record(&env);
    rec["scanner_version"] = json!(0);
    rec["report"]["scanner_version"] = json!(0);
    std::fs::write(&path, rec.to_string()).unwrap();
    assert_eq!(list_state(&env), "rescan");
    let o = env.run(&["skills", "read", "note-helper"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("another scanner version"),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&env.run(&["skills", "scan", "note-helper"])), 0);
    assert_eq!(list_state(&env), "ready");
    assert_eq!(
        record(&env)["scanner_version"],
        sayri_core::domain::skills::SCANNER_VERSION
    );
}

#[test]
fn uninstall_takes_only_a_slug_that_sayri_installed() {
    let env = Env::new();
    assert_eq!(
        code(&env.run(&["skills", "install", &case("45-skill-v1")])),
        0
    );
    let victim = env.dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "keep").unwrap();
    let hand_made = env.config_dir().join("skills/hand-made");
    std::fs::create_dir_all(&hand_made).unwrap();
    std::fs::write(hand_made.join("SKILL.md"), "# mine\n").unwrap();
    for bad in [
        victim.display().to_string(),
        "../../victim".to_string(),
        "note-helper/../../victim".to_string(),
        ".records".to_string(),
        "hand-made".to_string(),
        "missing".to_string(),
    ] {
        let o = env.run(&["skills", "remove", &bad]);
        assert_eq!(code(&o), 1, "{bad}: {}", stdout(&o));
        assert!(!stderr(&o).is_empty());
    }
    assert!(victim.join("keep.txt").exists());
    assert!(hand_made.join("SKILL.md").exists());
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call(
        "skills_uninstall",
        json!({"slug": victim.display().to_string()}),
        1,
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(victim.join("keep.txt").exists());
    let r = c.call("skills_uninstall", json!({"slug": "note-helper"}), 2);
    assert_eq!(r["result"]["removed"], true, "{r}");
    assert!(!installed(&env).exists());
    assert!(
        !env.config_dir()
            .join("skills/.records/note-helper.json")
            .exists()
    );
    assert!(hand_made.join("SKILL.md").exists());
}

// ---------------------------------------------------------------------------------------------
// Archives

const SKILL_MD: &[u8] = b"---\nname: tiny\ndescription: A tiny skill.\n---\nSay hi.\n";

fn zip_with(path: &Path, entries: &[(&str, &[u8])]) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in entries {
        z.start_file(*name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A tar header block for `name` of `kind`, `size` bytes, linking to `link`.
fn tar_header(name: &[u8], kind: tar::EntryType, size: u64, link: &[u8]) -> Vec<u8> {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.as_old_mut().linkname[..link.len()].copy_from_slice(link);
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_cksum();
    h.as_bytes().to_vec()
}

fn tar_file(name: &[u8], body: &[u8]) -> Vec<u8> {
    let mut v = tar_header(name, tar::EntryType::Regular, body.len() as u64, b"");
    v.extend_from_slice(body);
    v.resize(v.len().div_ceil(512) * 512, 0);
    v
}

fn tar_gz(blocks: &[Vec<u8>]) -> Vec<u8> {
    let mut all: Vec<u8> = blocks.concat();
    all.extend_from_slice(&[0u8; 1024]);
    gz(&all)
}

#[test]
fn hostile_archives_are_refused_with_nothing_written_outside_the_temporary_folder() {
    let env = Env::new();
    let work = env.dir.path().join("work");
    let tmp = env.dir.path().join("tmp");
    let outside = env.dir.path().join("outside");
    for d in [&work, &tmp, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    let skill = b"tiny/SKILL.md".as_slice();
    let abs = format!("{}/abs.txt", outside.display());

    let mut cases: Vec<(&str, &str, PathBuf)> = Vec::new();
    let p = work.join("slip.zip");
    zip_with(
        &p,
        &[
            ("tiny/SKILL.md", SKILL_MD),
            ("tiny/../../outside/slip.txt", b"x"),
        ],
    );
    cases.push(("zip-slip", "outside the skill", p));
    let p = work.join("abs.zip");
    zip_with(&p, &[("tiny/SKILL.md", SKILL_MD), (&abs, b"x")]);
    cases.push(("absolute path in a zip", "outside the skill", p));
    let p = work.join("slip.tar.gz");
    std::fs::write(
        &p,
        tar_gz(&[
            tar_file(skill, SKILL_MD),
            tar_file(b"../outside/slip.txt", b"x"),
        ]),
    )
    .unwrap();
    cases.push(("tar with ..", "outside the skill", p));
    let p = work.join("link.tar.gz");
    let to = outside.display().to_string();
    std::fs::write(
        &p,
        tar_gz(&[
            tar_file(skill, SKILL_MD),
            tar_header(b"tiny/out", tar::EntryType::Symlink, 0, to.as_bytes()),
            tar_file(b"tiny/out/planted.txt", b"x"),
        ]),
    )
    .unwrap();
    cases.push(("symlink to outside", "is a symlink", p));
    let p = work.join("hard.tar.gz");
    std::fs::write(
        &p,
        tar_gz(&[
            tar_file(skill, SKILL_MD),
            tar_header(b"tiny/passwd", tar::EntryType::Link, 0, b"/etc/passwd"),
        ]),
    )
    .unwrap();
    cases.push(("hard link to outside", "is a hard link", p));
    let p = work.join("dev.tar.gz");
    std::fs::write(
        &p,
        tar_gz(&[
            tar_file(skill, SKILL_MD),
            tar_header(b"tiny/null", tar::EntryType::Char, 0, b""),
        ]),
    )
    .unwrap();
    cases.push(("device file", "special file", p));
    let p = work.join("bomb.zip");
    let names: Vec<String> = (0..10_000).map(|i| format!("tiny/f{i}.txt")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("tiny/SKILL.md", SKILL_MD)];
    entries.extend(names.iter().map(|n| (n.as_str(), b"".as_slice())));
    zip_with(&p, &entries);
    cases.push(("10 000 files", "more than 2000 entries", p));
    // A 1 GiB entry: the header declares it, the data are 1 MiB gzip members of zeros
    // repeated (a few hundred KiB on disk).
    let p = work.join("sparse.tar.gz");
    let mut bytes = gz(&[
        tar_file(skill, SKILL_MD),
        tar_header(b"tiny/big.bin", tar::EntryType::Regular, 1 << 30, b""),
    ]
    .concat());
    let zeros = gz(&vec![0u8; 1 << 20]);
    for _ in 0..1024 {
        bytes.extend_from_slice(&zeros);
    }
    std::fs::write(&p, bytes).unwrap();
    cases.push(("1 GiB entry", "more than 64 MiB", p));

    for (what, why, archive) in &cases {
        let o = env
            .cmd()
            .env("TMPDIR", &tmp)
            .args(["skills", "install", &archive.display().to_string()])
            .output()
            .unwrap();
        assert_eq!(code(&o), 1, "{what}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains(why), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains("refused"), "{what}: {}", stderr(&o));
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(
            left.is_empty(),
            "{what}: the temporary folder was left behind"
        );
        let planted: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(planted.is_empty(), "{what}: wrote outside: {planted:?}");
        assert!(
            !env.config_dir().join("skills/tiny").exists(),
            "{what} was installed"
        );
    }

    // The same skill, packed honestly, installs.
    let p = work.join("good.tar.gz");
    std::fs::write(&p, tar_gz(&[tar_file(skill, SKILL_MD)])).unwrap();
    let o = env
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["skills", "install", &p.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        std::fs::read(env.config_dir().join("skills/tiny/SKILL.md")).unwrap(),
        SKILL_MD
    );
}
