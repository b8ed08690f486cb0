use super::fresh;
use sayri_core::ports::ApprovalStore;
use sayri_permissions::Approval;

fn ap(agent: &str, action: &str, resource: &str, at: f64) -> Approval {
    Approval {
        agent_id: agent.into(),
        action: action.into(),
        resource: resource.into(),
        created_at: at,
    }
}

#[test]
fn approvals_survive_reopening_and_replace_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let store = sayri_store::Store::open(&path).unwrap();
        store
            .add_approval(&ap("default", "shell", "git status", 1.0))
            .unwrap();
        store
            .add_approval(&ap("default", "shell", "ls *", 2.0))
            .unwrap();
        store
            .add_approval(&ap("other", "shell", "ls *", 3.0))
            .unwrap();
        store
            .add_approval(&ap("default", "shell", "git status", 4.0))
            .unwrap();
    }
    let store = sayri_store::Store::open(&path).unwrap();
    let mine = store.approvals_for("default").unwrap();
    assert_eq!(
        mine.iter().map(|a| a.resource.as_str()).collect::<Vec<_>>(),
        ["ls *", "git status"]
    );
    assert_eq!(mine[1].created_at, 4.0);
    assert_eq!(store.all_approvals().unwrap().len(), 3);
    assert_eq!(store.forget_approvals(Some("shell"), "other").unwrap(), 1);
    assert_eq!(store.forget_approvals(None, "").unwrap(), 2);
    assert!(store.all_approvals().unwrap().is_empty());
}

#[test]
fn gateway_peers_fail_closed_and_belong_to_one_channel() {
    let (_d, store) = fresh();
    assert!(!store.is_peer_authorized("@bob", "matrix").unwrap());
    assert!(
        store
            .authorize_peer("@bob", "matrix", "default", 5.0, "pin", "Bob")
            .unwrap()
    );
    assert!(store.is_peer_authorized("@bob", "matrix").unwrap());
    assert!(!store.is_peer_authorized("@bob", "telegram").unwrap());
    // The same person paired with a second instance keeps the first pairing.
    assert!(
        store
            .authorize_peer("@bob", "telegram", "ops", 6.0, "desktop", "")
            .unwrap()
    );
    assert!(
        !store
            .authorize_peer("@bob", "telegram", "ops", 7.0, "desktop", "")
            .unwrap(),
        "pairing twice is not new"
    );
    let peers = store.peers().unwrap();
    assert_eq!(peers.len(), 2);
    assert_eq!(
        (
            peers[0].channel.as_str(),
            peers[0].authorized_at,
            peers[0].via.as_str()
        ),
        ("matrix", Some(5.0), "pin")
    );
    assert_eq!(peers[0].name, "Bob");
    assert!(store.revoke_peer("@bob", "matrix").unwrap());
    assert!(!store.revoke_peer("@bob", "matrix").unwrap());
    assert!(!store.is_peer_authorized("@bob", "matrix").unwrap());
    assert!(store.is_peer_authorized("@bob", "telegram").unwrap());
    assert_eq!(store.peers_of("telegram").unwrap().len(), 1);
}
