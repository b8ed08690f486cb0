use super::fresh;
use sayri_core::ports::{Approval, ApprovalStore};

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
fn gateway_peers_fail_closed() {
    let (_d, store) = fresh();
    assert!(!store.is_peer_authorized("@bob", "matrix").unwrap());
    store
        .authorize_peer("@bob", "matrix", "default", 5.0)
        .unwrap();
    assert!(store.is_peer_authorized("@bob", "matrix").unwrap());
    assert!(!store.is_peer_authorized("@bob", "telegram").unwrap());
    assert_eq!(store.peers().unwrap()[0].authorized_at, Some(5.0));
    assert!(store.revoke_peer("@bob").unwrap());
    assert!(!store.is_peer_authorized("@bob", "matrix").unwrap());
}
