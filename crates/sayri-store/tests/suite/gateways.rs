//! Gateway instances, their peers and chats in the real SQLite file.

use super::fresh;
use sayri_core::domain::gateway::GatewayInstance;
use sayri_protocol::SandboxLevel;
use sayri_store::{GatewayChat, InstanceSave};

fn instance(id: &str) -> GatewayInstance {
    let mut i = GatewayInstance::new(id, "telegram");
    i.level_cap = SandboxLevel::IsolatedDev;
    i.secrets
        .insert("TELEGRAM_BOT_TOKEN".into(), "GATEWAY_HOME_TOKEN".into());
    i.options
        .insert("api-base".into(), "http://127.0.0.1:1".into());
    i
}

#[test]
fn instances_round_trip_and_modes_refuse_what_they_should() {
    let (_d, store) = fresh();
    let home = instance("home");
    assert!(
        store
            .save_gateway_instance(&home, InstanceSave::Create, 1.0)
            .unwrap()
    );
    let e = store
        .save_gateway_instance(&home, InstanceSave::Create, 2.0)
        .unwrap_err();
    assert!(e.to_string().contains("exists already"), "{e}");
    let e = store
        .save_gateway_instance(&instance("work"), InstanceSave::Update, 2.0)
        .unwrap_err();
    assert!(e.to_string().contains("no gateway instance work"), "{e}");
    let mut changed = home.clone();
    changed.agent = "ops".into();
    assert!(
        !store
            .save_gateway_instance(&changed, InstanceSave::Upsert, 3.0)
            .unwrap()
    );
    assert_eq!(
        store.gateway_instance("home").unwrap(),
        Some(changed.clone())
    );
    assert_eq!(store.gateway_instances().unwrap(), vec![changed]);
    assert_eq!(store.gateway_instance("nope").unwrap(), None);
}

#[test]
fn deleting_an_instance_takes_its_peers_and_chats_and_a_new_one_starts_unpaired() {
    let (_d, store) = fresh();
    store
        .save_gateway_instance(&instance("home"), InstanceSave::Create, 1.0)
        .unwrap();
    store
        .authorize_peer("1001", "home", "default", 2.0, "pin", "Ada")
        .unwrap();
    store
        .authorize_peer("1001", "work", "default", 2.0, "pin", "Ada")
        .unwrap();
    let chat = GatewayChat {
        session_id: "remote-home-1001-1".into(),
        agent_id: "default".into(),
    };
    store.set_gateway_chat("home", "1001", &chat, 3.0).unwrap();
    assert_eq!(store.gateway_chat("home", "1001").unwrap(), Some(chat));
    assert!(store.delete_gateway_instance("home").unwrap());
    assert!(!store.delete_gateway_instance("home").unwrap());
    assert!(!store.is_peer_authorized("1001", "home").unwrap());
    assert!(store.is_peer_authorized("1001", "work").unwrap());
    assert_eq!(store.gateway_chat("home", "1001").unwrap(), None);
    // A peer row left under an id (e.g. by the original Sayri) does not pair anyone with a
    // new instance of that id.
    store
        .authorize_peer("1001", "home", "default", 4.0, "pin", "Ada")
        .unwrap();
    store
        .save_gateway_instance(&instance("home"), InstanceSave::Create, 5.0)
        .unwrap();
    assert!(!store.is_peer_authorized("1001", "home").unwrap());
}

#[test]
fn an_unreadable_row_is_an_error_naming_the_instance() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(sayri_store::Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO gateway_instances VALUES ('bad', 'telegram', '{not json', 1, 1)",
        [],
    )
    .unwrap();
    drop(conn);
    let store = sayri_store::Store::open(&path).unwrap();
    let e = store.gateway_instances().unwrap_err();
    assert!(e.to_string().contains("gateway instance bad"), "{e}");
}

#[test]
fn a_recorded_answer_to_an_update_is_found_again_until_it_ages_out_or_its_instance_goes() {
    let (_dir, store) = super::fresh();
    store
        .save_gateway_reply(
            "tg",
            "77",
            "1001",
            r#"{"type":"done","text":"It is noon."}"#,
            1000.0,
        )
        .unwrap();
    assert_eq!(
        store.gateway_reply("tg", "77").unwrap().as_deref(),
        Some(r#"{"type":"done","text":"It is noon."}"#)
    );
    assert_eq!(store.gateway_reply("other", "77").unwrap(), None);
    // A week later another record is written: the old one goes.
    let later = 1000.0 + sayri_store::KEEP_REPLY_SECONDS + 1.0;
    store
        .save_gateway_reply("tg", "78", "1001", r#"{"type":"done","text":"x"}"#, later)
        .unwrap();
    assert_eq!(store.gateway_reply("tg", "77").unwrap(), None);
    assert!(store.gateway_reply("tg", "78").unwrap().is_some());
    store.delete_gateway_instance("tg").unwrap();
    assert_eq!(store.gateway_reply("tg", "78").unwrap(), None);
}
