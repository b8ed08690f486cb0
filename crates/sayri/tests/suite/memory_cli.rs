//! `sayri memory …` against the real daemon and the real session database: a fact is added,
//! listed with its provenance and dates, found, exported and imported, and forgotten; a fact
//! holding a vault secret — plain or base64 — is refused by `add`, `edit` and `import`, and no
//! byte of the secret (in any form the leak check knows) reaches the database file, its
//! write-ahead log, the daemon's log or what the CLI printed.

use super::secret_rig::*;
use super::support::*;
use base64::Engine as _;
use serde_json::json;
use std::os::unix::fs::PermissionsExt as _;

fn ok(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn refused(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(
        !out.status.success(),
        "{args:?} succeeded: {}",
        stdout(&out)
    );
    format!("{}{}", stdout(&out), stderr(&out))
}

/// Today's date as `sayri memory list` prints it (UTC).
fn today() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    chrono::DateTime::<chrono::Utc>::from_timestamp(now, 0)
        .unwrap()
        .format("%Y-%m-%d")
        .to_string()
}

#[test]
fn memory_cli_adds_lists_with_provenance_and_dates_and_forgets() {
    let env = Env::new();
    let _d = env.start_daemon();
    let empty = ok(&env, &["memory", "list"]);
    assert!(empty.contains("no facts yet"), "{empty}");

    let added = ok(&env, &["memory", "add", "I", "prefer", "metric", "units"]);
    assert!(
        added.contains("remembered fact 1 (for every agent)"),
        "{added}"
    );
    let added = ok(
        &env,
        &[
            "memory",
            "add",
            "--agent",
            "default",
            "Deploys go through staging",
        ],
    );
    assert!(
        added.contains("remembered fact 2 (for agent default)"),
        "{added}"
    );
    let unknown = refused(&env, &["memory", "add", "--agent", "nobody", "x y"]);
    assert!(
        unknown.contains("no agent is named \"nobody\"") && unknown.contains("sayri agents list"),
        "{unknown}"
    );

    let list = ok(&env, &["memory", "list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two facts: {list}");
    for word in [
        "id",
        "source",
        "agent",
        "added (UTC)",
        "changed (UTC)",
        "text",
    ] {
        assert!(lines[0].contains(word), "{list}");
    }
    let first: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&first[..3], ["1", "person", "all"], "{list}");
    assert_eq!(first[3], today(), "added today: {list}");
    assert_eq!(first[5], today(), "changed today: {list}");
    assert!(lines[1].ends_with("I prefer metric units"), "{list}");
    let second: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(&second[..3], ["2", "person", "default"], "{list}");

    let found = ok(&env, &["memory", "search", "METRIC"]);
    assert!(found.contains("I prefer metric units"), "{found}");
    assert!(!found.contains("staging"), "{found}");
    let shown = ok(&env, &["memory", "show", "2"]);
    assert!(shown.contains("for agent default"), "{shown}");
    assert!(shown.contains("recalled: never"), "{shown}");
    let edited = ok(&env, &["memory", "edit", "2", "Deploys go through canary"]);
    assert!(edited.contains("fact 2 now reads"), "{edited}");

    // Export to a private file, forget everything, import it back as `import`.
    let file = env.dir.path().join("facts.jsonl");
    ok(&env, &["memory", "export", file.to_str().unwrap()]);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the export is readable by its owner only");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 2);
    for id in ["1", "2"] {
        let gone = ok(&env, &["memory", "forget", id]);
        assert!(gone.contains(&format!("forgot fact {id}")), "{gone}");
    }
    let empty = ok(&env, &["memory", "list"]);
    assert!(empty.contains("no facts yet"), "{empty}");
    let again = refused(&env, &["memory", "forget", "1"]);
    assert!(
        again.contains("no fact has id 1") && again.contains("sayri memory list"),
        "{again}"
    );
    let imported = ok(&env, &["memory", "import", file.to_str().unwrap()]);
    assert!(imported.contains("imported 2 fact(s)"), "{imported}");
    let list = ok(&env, &["memory", "list"]);
    assert!(
        list.lines().skip(1).all(|l| l.contains(" import ")),
        "{list}"
    );
    std::fs::write(&file, "{\"text\": \"fine\"}\n{\"text\": 3}\n").unwrap();
    let bad = refused(&env, &["memory", "import", file.to_str().unwrap()]);
    assert!(
        bad.contains("line 2") && bad.contains("nothing was imported"),
        "{bad}"
    );
}

#[test]
fn a_fact_holding_a_vault_secret_is_refused_and_the_database_holds_no_trace_of_it() {
    let env = Env::new();
    let mut d = env.start_daemon();
    let secret = canary();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call(
        "vault_set",
        json!({"key": "MEMORY_TOKEN", "value": secret, "description": ""}),
        1,
    );
    assert_eq!(r["result"]["saved"], true, "{r}");
    drop(c);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&secret);
    let mut printed = Vec::new();
    for text in [
        format!("my token is {secret}"),
        format!("the token in base64: {b64}"),
    ] {
        let out = refused(&env, &["memory", "add", &text]);
        assert!(
            out.contains("contains a secret stored in the vault")
                && out.contains("nothing was stored"),
            "{out}"
        );
        printed.push(out);
    }
    ok(&env, &["memory", "add", "a harmless fact"]);
    let out = refused(&env, &["memory", "edit", "1", &format!("now {b64}")]);
    assert!(out.contains("secret"), "{out}");
    printed.push(out);
    let file = env.dir.path().join("import.jsonl");
    std::fs::write(
        &file,
        format!("{{\"text\": \"ok\"}}\n{{\"text\": \"{secret}\"}}\n"),
    )
    .unwrap();
    let out = refused(&env, &["memory", "import", file.to_str().unwrap()]);
    assert!(out.contains("line 2") && out.contains("secret"), "{out}");
    printed.push(out);
    let list = ok(&env, &["memory", "list", "--json"]);
    let facts: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(facts.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(facts[0]["text"], "a harmless fact", "{list}");

    quit_daemon(&env, &mut d);
    for (path, bytes) in file_bytes(&db_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &secret);
    }
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        &secret,
    );
    assert_clean("what the CLI printed", printed.concat().as_bytes(), &secret);
}

#[test]
fn the_same_fact_is_kept_once_and_review_lists_contradictions_and_facts_unused_past_the_ttl() {
    let env = Env::new();
    let _d = env.start_daemon();
    let first = ok(&env, &["memory", "add", "My backup disk is /mnt/tank"]);
    assert!(first.contains("remembered fact 1"), "{first}");
    let again = ok(&env, &["memory", "add", "my  backup disk is /mnt/tank."]);
    assert!(
        again.contains("remembered fact 1"),
        "the same fact: {again}"
    );
    let nothing = ok(&env, &["memory", "review"]);
    assert!(nothing.contains("nothing to review"), "{nothing}");

    ok(&env, &["memory", "add", "My backup disk is /mnt/pool"]);
    // Another agent's fact about the same subject contradicts nothing of every agent's.
    ok(
        &env,
        &[
            "memory",
            "add",
            "--agent",
            "default",
            "My backup disk is /srv/b",
        ],
    );
    let file = env.dir.path().join("old.jsonl");
    // Added (and never recalled) two years ago: past memory.ttl_days (90).
    let old = chrono::Utc::now().timestamp() as f64 - 2.0 * 365.0 * 86_400.0;
    std::fs::write(
        &file,
        format!("{{\"text\": \"The wifi password hint is the cat\", \"created_at\": {old}}}\n"),
    )
    .unwrap();
    ok(&env, &["memory", "import", file.to_str().unwrap()]);

    let review = ok(&env, &["memory", "review"]);
    assert!(
        review.contains("fact 2 contradicts fact 1 about \"my backup disk\""),
        "{review}"
    );
    assert!(review.contains("sayri memory forget 1"), "{review}");
    assert!(!review.contains("/srv/b"), "{review}");
    assert!(review.contains("not recalled in 90 days"), "{review}");
    assert!(
        review.contains("The wifi password hint is the cat"),
        "{review}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&env, &["memory", "review", "--json"])).unwrap();
    assert_eq!(json["ttl_days"], 90);
    assert_eq!(json["conflicts"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["conflicts"][0]["newer"]["id"], 2);
    assert_eq!(json["conflicts"][0]["older"]["id"], 1);
    assert_eq!(json["stale"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["stale"][0]["source"], "import");
    // Review changes nothing.
    assert_eq!(
        ok(&env, &["memory", "list"]).lines().count(),
        5,
        "a header and four facts"
    );
}
