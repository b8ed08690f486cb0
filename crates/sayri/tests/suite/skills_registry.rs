//! Skills by slug from a loopback registry, on the real daemon and CLI: a benign skill is
//! downloaded, scanned and installed with its SHA-256 shown; a malicious one served under
//! another slug is refused by the scanner and leaves nothing; a hostile registry (an endless
//! index, a package announced too big, a download address of plain http to another machine,
//! a zip with `../` members, a hash that differs from the index's, a stall) and a path-like
//! slug are each a clear error with nothing written; `skills_search` finds a registry skill by
//! a word of its description, and a registry that is down still gives the installed skills.

use super::support::*;
use sayri_core::domain::skills::hash::sha256;
use sayri_testkit::file_server::{File, FileServer};
use sayri_testkit::skills::fixture;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

fn skill_md(case: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("cases/{case}/SKILL.md"))).unwrap()
}

/// A zip of `entries` (stored, not compressed).
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in entries {
        z.start_file(*name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// The reverse-shell case (a folder with a script) as a zip archive.
fn malicious_zip() -> Vec<u8> {
    let root = fixture("cases/17-skill");
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    zip_of(&entries)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
}

fn package(id: &str, description: &str, url: &str) -> Value {
    json!({"id": id, "name": id, "author": "tester", "description": description,
           "version": "1.0.0", "type": "sayri_skill", "download_url": url})
}

/// What the skills folder holds (names), records and leftovers included.
fn skills_dir_entries(env: &Env) -> Vec<String> {
    let dir = env.config_dir().join("skills");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let records = dir.join(".records");
    if let Ok(rd) = std::fs::read_dir(records) {
        names.extend(rd.map(|e| format!(".records/{}", e.unwrap().file_name().to_string_lossy())));
    }
    names.sort();
    names
}

struct Rig {
    env: Env,
    server: FileServer,
    benign: Vec<u8>,
    escape_name: String,
}

/// A registry with one benign skill (a bare SKILL.md, its hash in the index), the malicious
/// cases under other slugs, and the hostile packages.
fn rig() -> Rig {
    let env = Env::new();
    let benign = skill_md("16-control-skill");
    let escape_name = format!("sayri-registry-escape-{}.txt", std::process::id());
    let escape = zip_of(&[
        ("SKILL.md", b"---\nname: esc\ndescription: x\n---\nhi\n"),
        (&format!("../{escape_name}"), b"outside"),
    ]);
    let server = FileServer::start(vec![
        ("clean.md", File::new(benign.clone())),
        ("evil.md", File::new(skill_md("16-skill"))),
        ("shell.zip", File::new(malicious_zip())),
        ("escape.zip", File::new(escape)),
        ("huge.zip", File::new(vec![b'P'; 17 * 1024 * 1024])),
    ]);
    let mut clean = package(
        "weather-clean",
        "Short weather briefings for any city.",
        "clean.md",
    );
    clean["sha256"] = json!(sha256(&benign).trim_start_matches("sha256:"));
    let mut tampered = package("tampered", "A skill whose hash is wrong.", "clean.md");
    tampered["sha256"] = json!("0".repeat(64));
    let index = json!({"packages": [
        clean,
        package("evil-weather", "Weather with a runtime installer.", "evil.md"),
        package("net-tools", "Network helpers.", "shell.zip"),
        package("escape", "An archive that writes outside.", "escape.zip"),
        package("huge", "Far too big.", "huge.zip"),
        package("remote-http", "Served over plain http elsewhere.", "http://192.0.2.1/r.zip"),
        tampered,
        {"id": "a-plugin", "type": "sayri_plugin", "description": "weather plugin",
         "download_url": "clean.md"},
    ]});
    server.set("index.json", File::new(index.to_string().into_bytes()));
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[skills]\nregistry_url = \"{}\"\nregistry_timeout = 3\n",
            server.url("index.json")
        ),
    )
    .unwrap();
    Rig {
        env,
        server,
        benign,
        escape_name,
    }
}

fn install(c: &mut RawClient, slug: &str, id: u64) -> Value {
    c.call("skills_install", json!({ "slug": slug }), id)
}

#[test]
fn a_benign_registry_skill_installs_by_slug_and_a_malicious_one_is_blocked_leaving_nothing() {
    let rig = rig();
    let env = &rig.env;
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());

    let r = install(&mut c, "@tester/weather-clean", 1);
    assert_eq!(r["ok"], true, "{r}");
    let res = &r["result"];
    assert_eq!(res["installed"], true, "{r}");
    assert_eq!(res["verdict"], "ALLOW", "{r}");
    assert_eq!(res["slug"], "weather-clean", "{r}");
    let expected = sha256(&rig.benign);
    assert_eq!(
        res["sha256"].as_str().unwrap(),
        expected.trim_start_matches("sha256:")
    );
    assert!(res["message"].as_str().unwrap().contains("sha256"), "{r}");
    assert_eq!(res["download_url"], rig.server.url("clean.md"), "{r}");
    let installed = env.config_dir().join("skills/weather-clean/SKILL.md");
    assert_eq!(std::fs::read(&installed).unwrap(), rig.benign);
    let list = c.call("skills_list", json!({}), 2);
    assert_eq!(list["result"][0]["state"], "ready", "{list}");
    assert!(
        list["result"][0]["source"]
            .as_str()
            .unwrap()
            .contains("sha256"),
        "{list}"
    );
    let before = skills_dir_entries(env);

    // A SKILL.md that pipes a download into bash, and a zip with a reverse shell: BLOCK,
    // reported with the hash of what was downloaded, and no folder or record is left.
    for (id, slug) in [(3, "evil-weather"), (4, "net-tools")] {
        let r = install(&mut c, slug, id);
        assert_eq!(r["ok"], true, "{r}");
        let res = &r["result"];
        assert_eq!(res["installed"], false, "{slug}: {r}");
        assert_eq!(res["verdict"], "BLOCK", "{slug}: {r}");
        assert_eq!(res["sha256"].as_str().unwrap().len(), 64, "{r}");
        assert!(
            res["message"]
                .as_str()
                .unwrap()
                .contains("Nothing was installed"),
            "{r}"
        );
        assert!(!env.config_dir().join("skills").join(slug).exists());
        assert_eq!(skills_dir_entries(env), before, "{slug} left something");
    }
    // `confirm` accepts a WARN, never a BLOCK.
    let r = c.call(
        "skills_install",
        json!({"slug": "evil-weather", "confirm": true}),
        5,
    );
    assert_eq!(r["result"]["installed"], false, "{r}");
    assert_eq!(skills_dir_entries(env), before);
}

#[test]
fn hostile_registries_and_path_like_slugs_are_clear_errors_that_write_nothing() {
    let rig = rig();
    let env = &rig.env;
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let cases: &[(&str, &str, &[&str])] = &[
        ("huge", "invalid_params", &["larger than 16 MiB"]),
        (
            "remote-http",
            "invalid_params",
            &["plain http://", "https://"],
        ),
        ("escape", "invalid_params", &["outside the skill"]),
        ("tampered", "invalid_params", &["SHA-256", "index says"]),
        ("../../etc", "not_found", &["no skill \"etc\"", "../../etc"]),
        ("../..", "invalid_params", &["names no skill"]),
        ("@/", "invalid_params", &["names no skill"]),
        ("a-plugin", "not_found", &["no skill"]),
    ];
    for (i, (slug, code, words)) in cases.iter().enumerate() {
        let r = install(&mut c, slug, i as u64 + 1);
        assert_eq!(r["ok"], false, "{slug}: {r}");
        assert_eq!(r["code"], *code, "{slug}: {r}");
        let msg = r["error"].as_str().unwrap();
        for w in *words {
            assert!(msg.contains(w), "{slug}: {msg:?} lacks {w:?}");
        }
        assert!(skills_dir_entries(env).is_empty(), "{slug} wrote something");
    }
    for dir in [PathBuf::from("/tmp"), env.dir.path().to_path_buf()] {
        assert!(!dir.join(&rig.escape_name).exists(), "a ../ member escaped");
    }

    // Both or neither of path and slug.
    for (id, params) in [
        (20, json!({"slug": "weather-clean", "path": "/tmp/x"})),
        (21, json!({"confirm": true})),
    ] {
        let r = c.call("skills_install", params, id);
        assert_eq!(r["code"], "invalid_params", "{r}");
        assert!(r["error"].as_str().unwrap().contains("exactly one"), "{r}");
    }

    // An index that never ends is capped; one that stalls hits the deadline.
    rig.server.set(
        "index.json",
        File {
            endless: true,
            ..File::new(b"{\"packages\": [".to_vec())
        },
    );
    let r = install(&mut c, "weather-clean", 30);
    assert_eq!(r["code"], "invalid_params", "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("larger than 4 MiB"),
        "{r}"
    );
    rig.server.set(
        "index.json",
        File {
            hold_after: Some(3),
            ..File::new(b"{\"packages\": []}".to_vec())
        },
    );
    let started = std::time::Instant::now();
    let r = install(&mut c, "weather-clean", 31);
    assert_eq!(r["code"], "timeout", "{r}");
    assert!(r["error"].as_str().unwrap().contains("within 3 s"), "{r}");
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    assert!(skills_dir_entries(env).is_empty());
}

#[test]
fn search_finds_registry_skills_by_description_and_survives_a_registry_that_is_down() {
    let rig = rig();
    let env = &rig.env;
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("skills_search", json!({"query": "BRIEFINGS city"}), 1);
    let results = r["result"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{r}");
    assert_eq!(results[0]["slug"], "weather-clean");
    assert_eq!(results[0]["source"], "registry");
    assert_eq!(results[0]["state"], "available");
    assert_eq!(results[0]["installed"], false);
    assert_eq!(results[0]["owner"], "tester");
    // Plugins in the index are not skills.
    let r = c.call("skills_search", json!({"query": "plugin"}), 2);
    assert_eq!(r["result"], json!([]), "{r}");

    assert_eq!(
        install(&mut c, "weather-clean", 3)["result"]["installed"],
        true
    );
    let r = c.call("skills_search", json!({"query": "briefings"}), 4);
    let results = r["result"].as_array().unwrap();
    assert_eq!(results.len(), 1, "listed once: {r}");
    assert_eq!(results[0]["source"], "installed");
    assert_eq!(results[0]["state"], "ready");

    // The registry goes away: installed results, and a warning when asked for one.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/index.json", dead.local_addr().unwrap());
    drop(dead);
    let r = c.call(
        "config_set",
        json!({"key": "skills.registry_url", "value": url}),
        5,
    );
    assert_eq!(r["ok"], true, "{r}");
    let r = c.call("skills_search", json!({"query": "weather"}), 6);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"][0]["slug"], "weather-clean", "{r}");
    let r = c.call(
        "skills_search",
        json!({"query": "weather", "detailed": true}),
        7,
    );
    assert_eq!(r["result"]["results"][0]["slug"], "weather-clean", "{r}");
    let warning = r["result"]["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("not searched") && warning.contains("cannot reach"),
        "{warning}"
    );

    // A plain http registry on another machine is refused as a setting; none set is explained.
    let r = c.call(
        "config_set",
        json!({"key": "skills.registry_url", "value": "http://192.0.2.1/index.json"}),
        8,
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("skills.registry_url"),
        "{r}"
    );
    let r = c.call(
        "config_set",
        json!({"key": "skills.registry_url", "value": ""}),
        9,
    );
    assert_eq!(r["ok"], true, "{r}");
    let r = install(&mut c, "evil-weather", 10);
    assert_eq!(r["code"], "unavailable", "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("sayri config set skills.registry_url"),
        "{r}"
    );
}

#[test]
fn the_cli_installs_by_slug_printing_the_hash_and_searches_the_registry() {
    let rig = rig();
    let env = &rig.env;
    let o = env.run(&["skills", "search", "briefings"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("weather-clean"), "{}", stdout(&o));
    assert!(stdout(&o).contains("registry by tester"), "{}", stdout(&o));

    let o = env.run(&["skills", "install", "weather-clean"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let hash = sha256(&rig.benign);
    assert!(
        stdout(&o).contains(hash.trim_start_matches("sha256:")),
        "{}",
        stdout(&o)
    );
    assert!(
        env.config_dir()
            .join("skills/weather-clean/SKILL.md")
            .exists()
    );

    let o = env.run(&["skills", "install", "evil-weather"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("BLOCK"), "{}", stderr(&o));
    assert!(!env.config_dir().join("skills/evil-weather").exists());
}
