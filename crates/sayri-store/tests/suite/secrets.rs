//! Secrets in the database file: writes pass the store's redactor; a value that becomes a secret
//! is rewritten out of every text column of every table, leaving no byte of it in the file or its
//! write-ahead log; history search cannot tell whether a secret contains a query.

use base64::Engine as _;
use sayri_core::ports::{
    ApprovalStore, NewMessage, PreferenceUpdate, Role, SessionSeed, SessionStore, ToolCallRecord,
};
use sayri_permissions::Approval;
use sayri_store::Store;
use sayri_vault::{SecretRedactor, SharedRedactor};
use std::sync::Arc;
use zeroize::Zeroizing;

/// The canary: distinctive, with characters base64 and URLs treat specially.
const CANARY: &str = "st0re-Kx9+Qm/Zt4~Wv7Rp";
const MARKER: &str = "$SECRET:STORE_TOKEN";

fn secret() -> SecretRedactor {
    SecretRedactor::new(vec![("STORE_TOKEN".into(), Zeroizing::new(CANARY.into()))])
}

/// A store on a fresh file whose redactor starts empty and can be given the secret later.
fn store() -> (tempfile::TempDir, Store, SharedRedactor) {
    let dir = tempfile::tempdir().unwrap();
    let shared = SharedRedactor::default();
    let store = Store::open(dir.path().join("sessions.db"))
        .unwrap()
        .with_redactor(Arc::new(shared.clone()));
    (dir, store, shared)
}

/// The forms of the canary that must not be in the file: plain, hex, base64 (any offset).
fn forms() -> Vec<Vec<u8>> {
    let mut v = vec![CANARY.as_bytes().to_vec(), hex::encode(CANARY).into_bytes()];
    for offset in 0..3usize {
        let mut input = vec![0u8; offset];
        input.extend_from_slice(CANARY.as_bytes());
        let enc = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&input);
        let start = (8 * offset).div_ceil(6);
        v.push(enc.as_bytes()[start..start + 16].to_vec());
    }
    v
}

/// Which canary forms the database file and its WAL hold.
fn leaks(dir: &tempfile::TempDir) -> Vec<String> {
    let mut out = Vec::new();
    for name in ["sessions.db", "sessions.db-wal"] {
        let Ok(bytes) = std::fs::read(dir.path().join(name)) else {
            continue;
        };
        for f in forms() {
            if bytes.windows(f.len()).any(|w| w == f.as_slice()) {
                out.push(format!("{name}: {}", String::from_utf8_lossy(&f)));
            }
        }
    }
    out
}

fn seed<'a>(id: &'a str, title: &'a str) -> SessionSeed<'a> {
    SessionSeed {
        id,
        agent_id: "default",
        title,
        parent: None,
    }
}

/// Stores the canary in every kind of row, as the engine, the broker and a gateway would.
fn fill(store: &Store, dir: &tempfile::TempDir) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("ci:{CANARY}"));
    let title = format!("deploy with {CANARY}");
    store
        .append_message(
            &seed("s1", &title),
            &NewMessage::new(Role::User, format!("my token is {CANARY}"), 1.0),
        )
        .unwrap();
    let mut a = NewMessage::new(
        Role::Assistant,
        format!("```bash\ncurl -u ci:{CANARY} http://x\n```"),
        2.0,
    );
    a.reasoning = Some(format!("the user gave {CANARY}"));
    store.append_message(&seed("s1", "-"), &a).unwrap();
    let mut t = NewMessage::new(Role::Tool, format!("Authorization: Basic {b64}"), 3.0);
    t.tool_call = Some(ToolCallRecord {
        command: format!("curl -u ci:{CANARY} http://x"),
        exit_code: Some(0),
        status: "success".into(),
        output: format!("{}\n{b64}", hex::encode(CANARY)),
        duration_ms: 1.0,
        delegated: None,
    });
    store.append_message(&seed("s1", "-"), &t).unwrap();
    store
        .append_message(
            &seed("s2", "other"),
            &NewMessage::new(Role::User, "nothing secret here", 4.0),
        )
        .unwrap();
    store
        .rename_session("s2", &format!("renamed {CANARY}"))
        .unwrap();
    // A title cut inside the secret (the first 30 characters of a request).
    let cut: String = format!("key {CANARY} and more").chars().take(20).collect();
    store
        .append_message(&seed("s4", &cut), &NewMessage::new(Role::User, "hi", 4.5))
        .unwrap();
    store
        .record_preference(&PreferenceUpdate {
            agent_id: "default".into(),
            intent: format!("deploy using {CANARY}"),
            command: format!("deploy --token {CANARY}"),
            success: true,
            rejected_command: Some(format!("echo {CANARY}")),
            notes: Some(format!("note {CANARY}")),
            now: 5.0,
        })
        .unwrap();
    store
        .add_approval(&Approval {
            agent_id: "default".into(),
            action: "shell".into(),
            resource: format!("curl -u ci:{CANARY} http://x"),
            created_at: 6.0,
        })
        .unwrap();
    // Columns only the original Python Sayri or a gateway wrote.
    let conn = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    conn.execute(
        "INSERT INTO messages (session_id, role, content, tool_calls_json, metadata, timestamp)
         VALUES ('s2', 'tool', 'old', ?1, ?2, 7)",
        [
            format!("[{{\"name\":\"bash\",\"arguments\":\"echo {CANARY}\"}}]"),
            format!("{{\"note\":\"{CANARY}\"}}"),
        ],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO gateway_peers (peer_id, channel, agent_id, metadata) VALUES ('p', 'c', 'a', ?1)",
        [format!("{{\"token\":\"{CANARY}\"}}")],
    )
    .unwrap();
}

#[test]
fn a_value_that_becomes_a_secret_is_rewritten_out_of_every_table_and_the_file() {
    let (dir, store, shared) = store();
    fill(&store, &dir);
    assert!(!leaks(&dir).is_empty(), "the fixture holds the canary");

    shared.replace(secret());
    let report = store.rewrite_secrets(&shared).unwrap();
    assert_eq!(report.messages, 4, "{report:?}");
    assert_eq!(report.sessions, 3, "{report:?}");
    assert_eq!(
        (report.preferences, report.approvals, report.peers),
        (1, 1, 1)
    );
    assert_eq!(leaks(&dir), Vec::<String>::new(), "{report:?}");

    // What is read back carries the marker where the secret was.
    let msgs = store.messages("s1").unwrap();
    assert_eq!(msgs[0].content, format!("my token is {MARKER}"));
    assert_eq!(
        msgs[1].reasoning.as_deref(),
        Some(format!("the user gave {MARKER}").as_str())
    );
    let call = msgs[2].tool_call.as_ref().unwrap();
    assert_eq!(call.command, format!("curl -u ci:{MARKER} http://x"));
    assert!(call.output.starts_with(MARKER), "{}", call.output);
    assert!(msgs[2].content.contains(MARKER), "{}", msgs[2].content);
    assert_eq!(
        store.session("s1").unwrap().unwrap().title,
        format!("deploy with {MARKER}")
    );
    assert_eq!(
        store.session("s2").unwrap().unwrap().title,
        format!("renamed {MARKER}")
    );
    assert_eq!(
        store.session("s4").unwrap().unwrap().title,
        format!("key {MARKER}")
    );
    let p = &store.list_preferences(None, 10).unwrap()[0];
    assert_eq!(p.command, format!("deploy --token {MARKER}"));
    assert_eq!(p.rejected_command, format!("echo {MARKER}"));
    assert_eq!(
        store.all_approvals().unwrap()[0].resource,
        format!("curl -u ci:{MARKER} http://x")
    );
    // A second rewrite finds nothing left.
    assert_eq!(store.rewrite_secrets(&shared).unwrap().total(), 0);
}

#[test]
fn writes_with_a_known_secret_never_store_it() {
    let (dir, store, shared) = store();
    shared.replace(secret());
    fill(&store, &dir);
    // Only the rows written behind the store's back (raw SQL) hold it.
    let report = store.rewrite_secrets(&shared).unwrap();
    assert_eq!(report.total(), 2, "{report:?}");
    assert_eq!((report.messages, report.peers), (1, 1));
    assert!(leaks(&dir).is_empty());
}

#[test]
fn rows_that_become_equal_merge() {
    let (dir, store, shared) = store();
    let other = "st0re-Zz1+Yy/Xx2~Ww3Vv";
    for (value, ok) in [(CANARY, true), (other, false), (CANARY, true)] {
        store
            .record_preference(&PreferenceUpdate {
                agent_id: "default".into(),
                intent: "deploy".into(),
                command: format!("deploy --token {value}"),
                success: ok,
                rejected_command: None,
                notes: None,
                now: 1.0,
            })
            .unwrap();
        store
            .add_approval(&Approval {
                agent_id: "default".into(),
                action: "shell".into(),
                resource: format!("deploy --token {value}"),
                created_at: 1.0,
            })
            .unwrap();
    }
    // Both values become the same secret's marker.
    shared.replace(SecretRedactor::new(vec![
        ("STORE_TOKEN".into(), Zeroizing::new(CANARY.into())),
        ("STORE_TOKEN_OLD".into(), Zeroizing::new(other.into())),
    ]));
    store.rewrite_secrets(&shared).unwrap();
    let prefs = store.list_preferences(None, 10).unwrap();
    let mut commands: Vec<_> = prefs.iter().map(|p| p.command.clone()).collect();
    commands.sort();
    assert_eq!(
        commands,
        [
            "deploy --token $SECRET:STORE_TOKEN",
            "deploy --token $SECRET:STORE_TOKEN_OLD"
        ]
    );
    let main = prefs
        .iter()
        .find(|p| p.command.ends_with("STORE_TOKEN"))
        .unwrap();
    assert_eq!((main.success_count, main.failure_count), (2, 0));
    assert_eq!(store.all_approvals().unwrap().len(), 2);
    assert!(leaks(&dir).is_empty());

    // Now the old value is renamed into the same key: the rows collapse into one.
    shared.replace(SecretRedactor::new(vec![
        ("STORE_TOKEN".into(), Zeroizing::new(CANARY.into())),
        ("STORE_TOKEN".into(), Zeroizing::new(other.into())),
    ]));
    let conn = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    conn.execute(
        "UPDATE agent_preferences SET command = ?1 WHERE command LIKE '%OLD'",
        [format!("deploy --token {other}")],
    )
    .unwrap();
    conn.execute(
        "UPDATE security_authorizations SET resource = ?1 WHERE resource LIKE '%OLD'",
        [format!("deploy --token {other}")],
    )
    .unwrap();
    drop(conn);
    let r = store.rewrite_secrets(&shared).unwrap();
    assert_eq!((r.preferences, r.approvals), (1, 1), "{r:?}");
    let prefs = store.list_preferences(None, 10).unwrap();
    assert_eq!(prefs.len(), 1, "{prefs:?}");
    assert_eq!((prefs[0].success_count, prefs[0].failure_count), (2, 1));
    assert_eq!(prefs[0].score, 0.5);
    assert_eq!(store.all_approvals().unwrap().len(), 1);
}

#[test]
fn history_search_is_no_oracle_for_a_secret_still_in_a_row() {
    let (dir, store, shared) = store();
    shared.replace(secret());
    store
        .append_message(
            &seed("s1", "chat"),
            &NewMessage::new(Role::User, "first words", 1.0),
        )
        .unwrap();
    // A row the redactor never saw (written before the value was a secret, not rewritten yet).
    let conn = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)
         VALUES ('s1', 'tool', ?1, 2)",
        [format!("deploy ok, token {CANARY} accepted")],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO sessions (id, title, agent_id, created_at, updated_at)
         VALUES ('s3', ?1, 'default', 3, 3)",
        [format!("title {CANARY}")],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s3', 'user', 'x', 3)",
        [],
    )
    .unwrap();
    drop(conn);
    // Every prefix, suffix and middle piece of the secret, in either case, finds nothing —
    // exactly as for text that is nowhere — in this session and globally.
    let chars: Vec<char> = CANARY.chars().collect();
    let mut probes = Vec::new();
    for n in 1..=chars.len() {
        probes.push(chars[..n].iter().collect::<String>());
        probes.push(chars[chars.len() - n..].iter().collect::<String>());
    }
    probes.push(chars[5..12].iter().collect());
    probes.push(CANARY.to_uppercase());
    let nowhere = store.search_messages("zz-nowhere-zz", None, 8).unwrap();
    assert!(nowhere.is_empty());
    // What the rows show once redacted; a short probe may match these, which reveals nothing.
    let shown = [
        "first words".to_string(),
        format!("deploy ok, token {MARKER} accepted"),
        "chat".into(),
        "x".into(),
        format!("title {MARKER}"),
    ];
    for p in &probes {
        let lower = p.to_ascii_lowercase();
        if shown
            .iter()
            .any(|t| t.to_ascii_lowercase().contains(&lower))
        {
            continue;
        }
        for scope in [Some("s1"), None] {
            let hits = store.search_messages(p, scope, 8).unwrap();
            assert!(hits.is_empty(), "{p:?} in {scope:?} revealed {hits:?}");
        }
    }
    // Ordinary words of the same row still find it, with the secret masked.
    let hits = store.search_messages("accepted", Some("s1"), 8).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        hits[0].content,
        format!("deploy ok, token {MARKER} accepted")
    );
    let hits = store.search_messages("title", None, 8).unwrap();
    assert_eq!(hits[0].session_title, format!("title {MARKER}"));
    // Once rewritten, the marker finds where the secret was.
    store.rewrite_secrets(&shared).unwrap();
    assert_eq!(
        store.search_messages(MARKER, Some("s1"), 8).unwrap().len(),
        1
    );
}

#[test]
fn search_fills_its_limit_with_real_hits_after_dropping_oracle_rows() {
    let (dir, store, shared) = store();
    shared.replace(secret());
    for i in 0..5 {
        store
            .append_message(
                &seed("s1", "chat"),
                &NewMessage::new(Role::User, format!("token note {i}"), f64::from(i)),
            )
            .unwrap();
    }
    let conn = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    for i in 0..5 {
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'tool', ?1, 10)",
            [format!("raw {i} {CANARY}")],
        )
        .unwrap();
    }
    drop(conn);
    // "st0re" matches the five raw rows in SQL, never after redaction.
    assert!(store.search_messages("st0re", None, 3).unwrap().is_empty());
    let hits = store.search_messages("note", Some("s1"), 3).unwrap();
    let texts: Vec<_> = hits.iter().map(|h| h.content.as_str()).collect();
    assert_eq!(texts, ["token note 2", "token note 3", "token note 4"]);
}

#[test]
fn redaction_stamps_round_trip_and_replace() {
    let (_dir, store, _) = store();
    assert!(store.redaction_stamps().unwrap().is_empty());
    store
        .set_redaction_stamps(&[("A".into(), 10), ("B".into(), 20)], 1.0)
        .unwrap();
    store
        .set_redaction_stamps(&[("B".into(), 30)], 2.0)
        .unwrap();
    let s = store.redaction_stamps().unwrap();
    assert_eq!(s.into_iter().collect::<Vec<_>>(), [("B".to_string(), 30)]);
}
