use super::fresh;
use sayri_core::ports::{NewMessage, Role, SessionSeed, SessionStore, ToolCallRecord, Usage};

fn seed(id: &str) -> SessionSeed<'_> {
    SessionSeed {
        id,
        agent_id: "default",
        title: "First words",
        parent: None,
    }
}

#[test]
fn a_session_exists_only_once_it_has_a_message() {
    let (_d, store) = fresh();
    assert!(store.session("s1").unwrap().is_none());
    assert!(store.list_sessions(10).unwrap().is_empty());
    store
        .append_message(&seed("s1"), &NewMessage::new(Role::User, "hello", 100.0))
        .unwrap();
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!(
        (s.title.as_str(), s.agent_id.as_str(), s.messages),
        ("First words", "default", 1)
    );
    assert_eq!((s.created_at, s.updated_at), (100.0, 100.0));
    // A later message does not overwrite the title (the original's upsert did).
    store
        .append_message(
            &SessionSeed {
                id: "s1",
                agent_id: "other",
                title: "Other",
                parent: None,
            },
            &NewMessage::new(Role::Assistant, "hi", 105.0),
        )
        .unwrap();
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!(
        (s.title.as_str(), s.agent_id.as_str(), s.messages),
        ("First words", "default", 2)
    );
    assert_eq!(s.updated_at, 105.0);
}

#[test]
fn tool_rows_keep_command_exit_code_output_and_usage() {
    let (_d, store) = fresh();
    let tool = ToolCallRecord {
        command: "df -h".into(),
        exit_code: Some(0),
        status: "success".into(),
        output: "Filesystem Size\n/dev/sda1 100G".into(),
        duration_ms: 12.5,
        delegated: None,
    };
    let mut assistant = NewMessage::new(Role::Assistant, "```bash\ndf -h\n```", 1.0);
    assistant.usage = Some(Usage {
        prompt_tokens: 321,
        completion_tokens: 9,
        total_tokens: 330,
    });
    assistant.reasoning = Some("think about disks".into());
    store
        .append_message(&seed("s"), &NewMessage::new(Role::User, "disk?", 0.5))
        .unwrap();
    store.append_message(&seed("s"), &assistant).unwrap();
    let mut t = NewMessage::new(Role::Tool, "[exit 0]", 2.0);
    t.tool_call = Some(tool.clone());
    store.append_message(&seed("s"), &t).unwrap();

    let msgs = store.messages("s").unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0].role, Role::User);
    assert_eq!(msgs[1].usage.unwrap().prompt_tokens, 321);
    assert_eq!(msgs[1].usage.unwrap().completion_tokens, 9);
    assert_eq!(msgs[1].reasoning.as_deref(), Some("think about disks"));
    assert_eq!(msgs[2].role, Role::Tool);
    assert_eq!(msgs[2].tool_call.as_ref(), Some(&tool));
    assert!(msgs[0].id < msgs[1].id && msgs[1].id < msgs[2].id);
}

#[test]
fn list_rename_delete_and_cascade() {
    let (_d, store) = fresh();
    store
        .append_message(&seed("a"), &NewMessage::new(Role::User, "one", 1.0))
        .unwrap();
    store
        .append_message(&seed("b"), &NewMessage::new(Role::User, "two", 2.0))
        .unwrap();
    let ids: Vec<_> = store
        .list_sessions(10)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(store.list_sessions(1).unwrap().len(), 1);
    assert!(store.rename_session("a", "Renamed").unwrap());
    assert!(!store.rename_session("zzz", "x").unwrap());
    assert_eq!(store.session("a").unwrap().unwrap().title, "Renamed");
    assert!(store.delete_session("a").unwrap());
    assert!(!store.delete_session("a").unwrap());
    assert!(store.messages("a").unwrap().is_empty());
    // The cascade really removed the rows (foreign_keys=ON), not just hid them.
    let conn = rusqlite::Connection::open(store.path()).unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE session_id = 'a'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn search_is_substring_case_insensitive_scoped_and_literal() {
    let (_d, store) = fresh();
    store
        .append_message(
            &seed("a"),
            &NewMessage::new(Role::User, "The Printer is broken", 1.0),
        )
        .unwrap();
    store
        .append_message(
            &seed("a"),
            &NewMessage::new(Role::Assistant, "printer fixed", 2.0),
        )
        .unwrap();
    store
        .append_message(
            &SessionSeed {
                id: "b",
                agent_id: "default",
                title: "Printers at home",
                parent: None,
            },
            &NewMessage::new(Role::User, "unrelated 100% text", 3.0),
        )
        .unwrap();
    let in_a = store.search_messages("PRINTER", Some("a"), 6).unwrap();
    assert_eq!(
        in_a.iter().map(|h| h.content.as_str()).collect::<Vec<_>>(),
        ["The Printer is broken", "printer fixed"],
        "oldest first"
    );
    let global = store.search_messages("printer", None, 8).unwrap();
    assert_eq!(global.len(), 3, "title match counts globally: {global:?}");
    assert_eq!(
        store.search_messages("printer", None, 1).unwrap()[0].session_id,
        "b",
        "limit keeps newest"
    );
    // `%` and `_` are literal, not wildcards.
    assert_eq!(store.search_messages("100%", None, 8).unwrap().len(), 1);
    assert_eq!(store.search_messages("0%t", None, 8).unwrap().len(), 0);
    let long = "x".repeat(1000);
    store
        .append_message(&seed("c"), &NewMessage::new(Role::User, long, 4.0))
        .unwrap();
    assert_eq!(
        store.search_messages("xxx", Some("c"), 1).unwrap()[0]
            .content
            .chars()
            .count(),
        400
    );
}

#[test]
fn shared_between_threads() {
    let (_d, store) = fresh();
    let store = std::sync::Arc::new(store);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let id = format!("s{t}");
                    store
                        .append_message(
                            &SessionSeed {
                                id: &id,
                                agent_id: "default",
                                title: "t",
                                parent: None,
                            },
                            &NewMessage::new(Role::User, format!("m{i}"), f64::from(i)),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total: u32 = store
        .list_sessions(10)
        .unwrap()
        .iter()
        .map(|s| s.messages)
        .sum();
    assert_eq!(total, 200);
}
