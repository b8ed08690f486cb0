//! Long-term memory on the real database file: facts added, listed, edited and forgotten with
//! their FTS5 index in step (checked on the index itself), searches whose query characters are
//! never FTS syntax, imports that are all or nothing, and facts holding a vault secret refused
//! with no trace in the file.

use base64::Engine as _;
use sayri_core::domain::memory::{FactError, MemorySource};
use sayri_store::{MemoryError, Store, migrations};
use sayri_vault::SecretRedactor;
use std::path::Path;
use std::sync::Arc;
use zeroize::Zeroizing;

const SECRET: &str = "mem-Kx9+Qm/Zt4~Wv7Rp";

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let redactor = SecretRedactor::new(vec![("MEM_TOKEN".into(), Zeroizing::new(SECRET.into()))]);
    let store = Store::open(dir.path().join("sessions.db"))
        .unwrap()
        .with_redactor(Arc::new(redactor));
    (dir, store)
}

/// A second connection to the same file, to look at the tables directly.
fn raw(dir: &tempfile::TempDir) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap()
}

/// The rowids the FTS index finds for the plain term `word`.
fn indexed(conn: &rusqlite::Connection, word: &str) -> Vec<i64> {
    let mut st = conn
        .prepare("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?1 ORDER BY rowid")
        .unwrap();
    st.query_map([format!("\"{word}\"")], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn rows(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("SELECT COUNT(*) FROM memory", [], |r| r.get(0))
        .unwrap()
}

fn file_bytes(dir: &Path) -> Vec<u8> {
    ["sessions.db", "sessions.db-wal"]
        .iter()
        .filter_map(|n| std::fs::read(dir.join(n)).ok())
        .flatten()
        .collect()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn the_bundled_sqlite_has_fts5_with_the_diacritics_folding_tokenizer() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let fts5: bool = conn
        .query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(fts5);
    conn.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 2');
         INSERT INTO t VALUES ('Ñandú CAFÉ');",
    )
    .unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM t WHERE t MATCH 'nandu cafe'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_version_11_file_gains_the_memory_table_and_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // What a version-11 build left: none of the memory schema.
        conn.execute_batch(
            "DROP TRIGGER memory_fts_insert; DROP TRIGGER memory_fts_delete;
             DROP TRIGGER memory_fts_update; DROP TABLE memory_fts; DROP TABLE memory;
             DROP TABLE memory_proposals; PRAGMA user_version = 11;",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
    let f = store
        .memory_add("The cat is called Mishi", None, MemorySource::Person, 5.0)
        .unwrap();
    assert_eq!(indexed(&raw(&dir), "mishi"), [f.id]);
}

#[test]
fn a_fact_is_added_listed_and_found_with_its_provenance_and_dates() {
    let (dir, store) = store();
    let a = store
        .memory_add(
            "  I prefer metric units \n",
            None,
            MemorySource::Person,
            10.0,
        )
        .unwrap();
    let b = store
        .memory_add(
            "Deploys go through staging first",
            Some("ops"),
            MemorySource::Model,
            11.0,
        )
        .unwrap();
    assert_eq!(a.text, "I prefer metric units", "trimmed");
    assert_eq!((a.source.as_str(), a.agent.as_deref()), ("person", None));
    assert_eq!(
        (a.created_at, a.updated_at, a.recalled_count),
        (10.0, 10.0, 0)
    );
    assert_eq!(a.last_recalled_at, None);
    assert_eq!(
        (b.source.as_str(), b.agent.as_deref()),
        ("model", Some("ops"))
    );

    let all = store.memory_list(None).unwrap();
    assert_eq!(all, [a.clone(), b.clone()]);
    // An agent sees its own facts and those for every agent.
    assert_eq!(
        store.memory_list(Some("ops")).unwrap(),
        [a.clone(), b.clone()]
    );
    assert_eq!(
        store.memory_list(Some("writer")).unwrap(),
        std::slice::from_ref(&a)
    );
    assert_eq!(store.memory_get(b.id).unwrap(), Some(b.clone()));
    assert_eq!(store.memory_get(999).unwrap(), None);

    // Any case, with or without accents, any of the words, best first.
    let c = store
        .memory_add(
            "Mi café favorito está en Cusco",
            None,
            MemorySource::Person,
            12.0,
        )
        .unwrap();
    let found = store.memory_search("CAFE cusco", 10).unwrap();
    assert_eq!(found.first().map(|f| f.id), Some(c.id));
    let found = store.memory_search("staging metric", 10).unwrap();
    let ids: Vec<i64> = found.iter().map(|f| f.id).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&a.id) && ids.contains(&b.id));
    assert_eq!(store.memory_search("staging metric", 1).unwrap().len(), 1);
    assert!(store.memory_search("nowhere", 10).unwrap().is_empty());
    assert_eq!(indexed(&raw(&dir), "cusco"), [c.id]);
}

#[test]
fn an_edit_changes_the_text_and_the_index_together() {
    let (dir, store) = store();
    let f = store
        .memory_add(
            "The printer is on floor two",
            None,
            MemorySource::Person,
            1.0,
        )
        .unwrap();
    let e = store
        .memory_edit(f.id, "The printer is on floor three", 2.0)
        .unwrap();
    assert_eq!((e.created_at, e.updated_at), (1.0, 2.0));
    assert_eq!(e.text, "The printer is on floor three");
    let conn = raw(&dir);
    assert!(indexed(&conn, "two").is_empty());
    assert_eq!(indexed(&conn, "three"), [f.id]);
    assert_eq!(
        store.memory_edit(77, "x", 3.0),
        Err(MemoryError::NotFound(77))
    );
    assert_eq!(
        store.memory_edit(f.id, "   ", 3.0),
        Err(MemoryError::Fact(FactError::Empty))
    );
}

#[test]
fn forget_removes_the_row_and_its_index_entry_and_leaves_no_text_in_the_file() {
    let (dir, store) = store();
    let keep = store
        .memory_add(
            "Water the ficus on Sundays",
            None,
            MemorySource::Person,
            1.0,
        )
        .unwrap();
    let gone = store
        .memory_add(
            "Zorblaxian quartermaster Vendelwick",
            None,
            MemorySource::Person,
            2.0,
        )
        .unwrap();
    let conn = raw(&dir);
    assert_eq!(indexed(&conn, "vendelwick"), [gone.id]);
    assert!(store.memory_forget(gone.id).unwrap());
    assert!(!store.memory_forget(gone.id).unwrap(), "already gone");
    assert_eq!(rows(&conn), 1);
    assert!(indexed(&conn, "vendelwick").is_empty());
    assert!(indexed(&conn, "zorblaxian").is_empty());
    assert_eq!(indexed(&conn, "ficus"), [keep.id]);
    // Read from the index itself (not through its content table): no term is left for the
    // forgotten fact's id.
    conn.execute_batch(
        "CREATE VIRTUAL TABLE temp.memory_vocab USING fts5vocab('main', 'memory_fts', 'instance');",
    )
    .unwrap();
    let left = |id: i64| -> i64 {
        conn.query_row(
            "SELECT COUNT(*) FROM temp.memory_vocab WHERE doc = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(left(gone.id), 0, "no index entry for the forgotten fact");
    assert!(left(keep.id) > 0, "the kept fact is still indexed");
    // The index's own integrity check agrees with the table.
    conn.execute(
        "INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap();
    drop(conn);
    let bytes = file_bytes(dir.path());
    for word in ["Vendelwick", "Zorblaxian", "vendelwick", "zorblaxian"] {
        assert!(!contains(&bytes, word), "{word} is still in the file");
    }
    assert!(store.memory_search("vendelwick", 10).unwrap().is_empty());
    // A new fact never takes a forgotten id.
    let next = store
        .memory_add("New", None, MemorySource::Person, 3.0)
        .unwrap();
    assert!(next.id > gone.id);
}

#[test]
fn fts_syntax_in_a_search_is_plain_words() {
    let (_dir, store) = store();
    let near = store
        .memory_add("NEAR the lake house", None, MemorySource::Person, 1.0)
        .unwrap();
    let quote = store
        .memory_add(
            "She said hello to the team",
            None,
            MemorySource::Person,
            2.0,
        )
        .unwrap();
    let star = store
        .memory_add(
            "Star ratings are out of five",
            None,
            MemorySource::Person,
            3.0,
        )
        .unwrap();
    let dash = store
        .memory_add("The well-known route", None, MemorySource::Person, 4.0)
        .unwrap();
    for (query, want) in [
        ("NEAR", near.id),
        ("NEAR(lake house)", near.id),
        ("\"hello", quote.id),
        ("hello\" OR \"", quote.id),
        ("star*", star.id),
        ("-route", dash.id),
        ("well-known", dash.id),
        ("text:five", star.id),
        ("^five", star.id),
        ("{text}: lake", near.id),
    ] {
        let found = store
            .memory_search(query, 10)
            .unwrap_or_else(|e| panic!("{query:?} was read as syntax: {e}"));
        assert_eq!(
            found.first().map(|f| f.id),
            Some(want),
            "{query:?}: {found:?}"
        );
    }
    // `star*` is the word `star`, not the prefix query: `Starling` is not found by it.
    store
        .memory_add("Starlings nest here", None, MemorySource::Person, 5.0)
        .unwrap();
    let found = store.memory_search("star*", 10).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    // Only operators and symbols: no words, nothing found, no error.
    for query in ["\"", "*", "-", "AND", "()", "\"\""] {
        let found = store.memory_search(query, 10).unwrap();
        assert!(found.is_empty() || query == "AND", "{query:?}: {found:?}");
    }
}

#[test]
fn a_fact_holding_a_vault_secret_plain_or_encoded_is_refused_and_nothing_is_stored() {
    let (dir, store) = store();
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    let hex = hex::encode(SECRET);
    for text in [
        format!("my token is {SECRET}"),
        format!("token (base64) {b64}"),
        format!("token (hex) {hex}"),
    ] {
        let e = store
            .memory_add(&text, None, MemorySource::Person, 1.0)
            .unwrap_err();
        assert_eq!(e, MemoryError::Fact(FactError::Secret), "{text}");
        assert!(!e.to_string().contains(SECRET), "{e}");
    }
    let f = store
        .memory_add("a harmless fact", None, MemorySource::Person, 1.0)
        .unwrap();
    assert_eq!(
        store.memory_edit(f.id, &format!("now {b64}"), 2.0),
        Err(MemoryError::Fact(FactError::Secret))
    );
    let line = format!("{{\"text\": \"imported {SECRET}\"}}\n");
    let e = store.memory_import(&line, 3.0).unwrap_err();
    assert!(
        matches!(&e, MemoryError::BadLine { line: 1, reason } if reason.contains("secret")),
        "{e}"
    );
    assert_eq!(store.memory_list(None).unwrap(), [f]);
    drop(store);
    let bytes = file_bytes(dir.path());
    for form in [SECRET, b64.trim_end_matches('='), hex.as_str()] {
        assert!(!contains(&bytes, form), "{form} is in the file");
    }
}

#[test]
fn text_length_is_checked_in_characters() {
    let (_dir, store) = store();
    let long = "ñ".repeat(500);
    assert_eq!(
        store
            .memory_add(&long, None, MemorySource::Person, 1.0)
            .unwrap()
            .text,
        long
    );
    let e = store
        .memory_add(&format!("{long}!"), None, MemorySource::Person, 1.0)
        .unwrap_err();
    assert_eq!(e, MemoryError::Fact(FactError::TooLong { chars: 501 }));
    let e = store
        .memory_add("x", Some("../etc"), MemorySource::Person, 1.0)
        .unwrap_err();
    assert!(
        matches!(e, MemoryError::Fact(FactError::BadAgent(_))),
        "{e}"
    );
}

#[test]
fn export_then_import_round_trips_and_repeats_are_skipped() {
    let (_dir, store) = store();
    store
        .memory_add("Lunch is at one", None, MemorySource::Person, 100.0)
        .unwrap();
    store
        .memory_add(
            "Use the blue folder",
            Some("ops"),
            MemorySource::Model,
            200.0,
        )
        .unwrap();
    let (count, lines) = store.memory_export().unwrap();
    assert_eq!(count, 2);
    assert_eq!(lines.lines().count(), 2);
    assert!(lines.ends_with('\n'));
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["text"], "Lunch is at one");
    assert_eq!(first["source"], "person");

    let (_dir2, other) = self::store();
    assert_eq!(other.memory_import(&lines, 500.0).unwrap(), (2, 0));
    let got = other.memory_list(None).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].text, "Lunch is at one");
    assert_eq!(got[0].created_at, 100.0, "the file's dates are kept");
    assert_eq!(got[1].agent.as_deref(), Some("ops"));
    assert!(got.iter().all(|f| f.source == "import"), "{got:?}");
    // The same file again, and a line repeated within a file, add nothing.
    let twice = format!("{lines}\n{{\"text\": \"New one\"}}\n{{\"text\": \"New one\"}}\n");
    assert_eq!(other.memory_import(&twice, 600.0).unwrap(), (1, 3));
    assert_eq!(other.memory_search("lunch", 10).unwrap().len(), 1);
    // A line saying the same as a stored fact but for case, spacing or a final full stop is
    // the same fact (as for `memory_add`).
    let alike = "{\"text\": \"lunch  is at ONE.\"}\n{\"text\": \"use the blue folder\", \"agent\": \"ops\"}\n";
    assert_eq!(other.memory_import(alike, 700.0).unwrap(), (0, 2));
}

#[test]
fn an_import_with_one_bad_line_is_refused_whole_naming_the_line() {
    let (dir, store) = store();
    let cases = [
        ("{\"text\": \"ok\"}\nnot json\n", 2, "invalid JSON"),
        (
            "{\"text\": \"ok\"}\n\n{\"txt\": \"typo\"}\n",
            3,
            "unknown field",
        ),
        ("{\"agent\": \"ops\"}\n", 1, "missing field"),
        ("{\"text\": \"ok\"}\n{\"text\": \"  \"}\n", 2, "empty"),
        ("{\"text\": \"ok\", \"agent\": \"a b\"}\n", 1, "agent id"),
        (
            "{\"text\": \"ok\", \"created_at\": \"yesterday\"}\n",
            1,
            "wrong type",
        ),
    ];
    for (text, line, says) in cases {
        let e = store.memory_import(text, 1.0).unwrap_err();
        match &e {
            MemoryError::BadLine { line: l, reason } => {
                assert_eq!(*l, line, "{text:?}: {e}");
                assert!(reason.contains(says), "{text:?}: {e}");
            }
            other => panic!("{text:?}: {other}"),
        }
        assert!(e.to_string().contains("nothing was imported"), "{e}");
        assert!(
            !e.to_string().contains("yesterday"),
            "no value is quoted: {e}"
        );
    }
    let conn = raw(&dir);
    assert_eq!(rows(&conn), 0, "nothing was written");
    assert!(indexed(&conn, "ok").is_empty(), "nothing was indexed");
}
