//! Proposed facts on the real database file: a fact a routine or a gateway turn proposed waits
//! outside memory (never searched, never indexed), is checked for secrets when proposed and
//! again when accepted, is kept once however often it is proposed, is bounded in number, and
//! leaves no text in the file once rejected.

use base64::Engine as _;
use sayri_core::domain::memory::{FactError, MemorySource};
use sayri_core::ports::Proposed;
use sayri_store::{MemoryError, Store};
use sayri_vault::SecretRedactor;
use std::path::Path;
use std::sync::Arc;
use zeroize::Zeroizing;

const SECRET: &str = "prop-Yh3+Lq/Wn8~Ce2Tz";

fn redactor(secret: &str) -> Arc<SecretRedactor> {
    Arc::new(SecretRedactor::new(vec![(
        "PROP_TOKEN".into(),
        Zeroizing::new(secret.into()),
    )]))
}

fn open(dir: &Path, secret: &str) -> Store {
    Store::open(dir.join("sessions.db"))
        .unwrap()
        .with_redactor(redactor(secret))
}

fn waiting_rows(dir: &Path) -> i64 {
    rusqlite::Connection::open(dir.join("sessions.db"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM memory_proposals", [], |r| r.get(0))
        .unwrap()
}

fn file_holds(dir: &Path, needle: &str) -> bool {
    ["sessions.db", "sessions.db-wal"]
        .iter()
        .filter_map(|n| std::fs::read(dir.join(n)).ok())
        .any(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

#[test]
fn a_proposal_is_outside_memory_until_accepted_and_then_is_a_model_fact_dated_when_proposed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), SECRET);
    let Proposed::Waiting(id) = store
        .memory_propose(
            "The standup moved to 9:30",
            "default",
            "routine-brief",
            50.0,
        )
        .unwrap()
    else {
        panic!("kept as a proposal")
    };
    assert!(store.memory_list(None).unwrap().is_empty());
    assert!(store.memory_search("standup", 10).unwrap().is_empty());
    let waiting = store.memory_proposals().unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        (
            &*waiting[0].agent,
            &*waiting[0].session_id,
            waiting[0].created_at
        ),
        ("default", "routine-brief", 50.0)
    );

    let fact = store.memory_accept(id, 80.0).unwrap();
    assert_eq!(fact.text, "The standup moved to 9:30");
    assert_eq!(fact.source, MemorySource::Model.as_str());
    assert_eq!(fact.agent.as_deref(), Some("default"));
    assert_eq!((fact.created_at, fact.updated_at), (50.0, 80.0));
    assert_eq!(store.memory_search("standup", 10).unwrap().len(), 1);
    assert!(store.memory_proposals().unwrap().is_empty());
    assert_eq!(
        store.memory_accept(id, 81.0),
        Err(MemoryError::NoProposal(id)),
        "accepted once"
    );
}

#[test]
fn the_same_fact_is_kept_once_and_what_memory_holds_is_named_not_proposed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), SECRET);
    let first = store
        .memory_propose("My cat is Mishi", "default", "s1", 1.0)
        .unwrap();
    let again = store
        .memory_propose("my  cat is MISHI.", "default", "s2", 2.0)
        .unwrap();
    assert_eq!(first, again, "one proposal for the same fact");
    let other_agent = store
        .memory_propose("My cat is Mishi", "ops", "s3", 3.0)
        .unwrap();
    assert_ne!(first, other_agent, "another agent's proposal is its own");
    let stored = store
        .memory_add(
            "Lunch is at one",
            Some("default"),
            MemorySource::Person,
            4.0,
        )
        .unwrap();
    assert_eq!(
        store.memory_propose("lunch is at one", "default", "s4", 5.0),
        Ok(Proposed::Known(stored.id))
    );
    assert_eq!(waiting_rows(dir.path()), 2);
}

#[test]
fn a_proposal_holding_a_secret_is_refused_when_proposed_and_when_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    {
        let store = open(dir.path(), SECRET);
        for text in [format!("the token is {SECRET}"), format!("token {b64}")] {
            assert_eq!(
                store.memory_propose(&text, "default", "s", 1.0),
                Err(MemoryError::Fact(FactError::Secret)),
                "{text}"
            );
        }
        assert_eq!(waiting_rows(dir.path()), 0);
    }
    assert!(!file_holds(dir.path(), SECRET) && !file_holds(dir.path(), &b64));

    // A value that became a secret after it was proposed is caught when accepted; the
    // proposal stays for the person to reject.
    let later = "Zq7-later-secret-Vb2";
    let before = open(dir.path(), "something-else-entirely");
    let Ok(Proposed::Waiting(id)) =
        before.memory_propose(&format!("the door code is {later}"), "default", "s", 2.0)
    else {
        panic!("kept")
    };
    drop(before);
    let after = open(dir.path(), later);
    assert_eq!(
        after.memory_accept(id, 3.0),
        Err(MemoryError::Fact(FactError::Secret))
    );
    assert!(after.memory_list(None).unwrap().is_empty());
    assert!(after.memory_reject(id).unwrap());
    assert!(!after.memory_reject(id).unwrap(), "already gone");
    drop(after);
    assert!(
        !file_holds(dir.path(), later),
        "a rejected proposal leaves no text"
    );
}

#[test]
fn proposals_are_bounded_and_a_bad_agent_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), SECRET);
    for n in 0..100 {
        let kept = store.memory_propose(&format!("fact number {n}"), "default", "s", 1.0);
        assert!(matches!(kept, Ok(Proposed::Waiting(_))), "{n}: {kept:?}");
    }
    let e = store
        .memory_propose("one too many", "default", "s", 2.0)
        .unwrap_err();
    assert_eq!(e, MemoryError::TooManyProposals(100));
    assert!(e.to_string().contains("sayri memory review"), "{e}");
    assert_eq!(waiting_rows(dir.path()), 100);
    assert!(matches!(
        store.memory_propose("x", "../etc", "s", 3.0),
        Err(MemoryError::Fact(FactError::BadAgent(_)))
    ));
}

#[test]
fn a_version_12_file_keeps_its_facts_and_gains_the_proposals_table() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), SECRET);
        store
            .memory_add("Lunch is at one", None, MemorySource::Person, 1.0)
            .unwrap();
    }
    {
        let conn = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
        conn.execute_batch("DROP TABLE memory_proposals; PRAGMA user_version = 12;")
            .unwrap();
    }
    let store = open(dir.path(), SECRET);
    assert_eq!(
        store.schema_version().unwrap(),
        sayri_store::migrations::LATEST
    );
    assert_eq!(store.memory_list(None).unwrap().len(), 1, "facts kept");
    assert!(matches!(
        store.memory_propose("The standup is at ten", "default", "s", 2.0),
        Ok(Proposed::Waiting(_))
    ));
}
