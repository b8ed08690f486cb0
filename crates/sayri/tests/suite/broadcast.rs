//! Every event reaches every connected client.

use super::support::*;
use serde_json::json;

#[test]
fn two_clients_both_receive_a_broadcast_and_the_shutdown_event() {
    let env = Env::new();
    let mut d = env.start_daemon();
    let mut a = RawClient::connect(&env.socket());
    let mut b = RawClient::connect(&env.socket());
    a.write(b"{\"cmd\":\"config_set\",\"params\":{\"key\":\"provider.api_key\",\"value\":\"sk-abcdef123456\"},\"id\":1}\n");
    // The requester gets the event (emitted by the handler) and its response, in that order.
    let ev_a = a.read_value();
    let r = a.read_value();
    // The provider key goes to the vault, never to sayri.toml; nobody gets it back.
    assert_eq!(r["result"]["value"], "***", "{r}");
    assert_eq!(r["result"]["stored_in"], "vault", "{r}");
    let ev_b = b.read_value();
    for ev in [ev_a, ev_b] {
        assert_eq!(ev["event"], "settings_changed", "{ev}");
        assert_eq!(ev["keys"], json!(["provider.api_key"]));
        assert_eq!(
            ev["values"]["provider.api_key"], "***",
            "masked in broadcasts"
        );
    }
    // `quit` from a: both get `shutdown`, then the connection closes.
    let r = a.call("quit", json!({}), 2);
    assert_eq!(r["result"], json!({"ok": true}));
    for c in [&mut a, &mut b] {
        let ev = c.read_value();
        assert_eq!(ev["event"], "shutdown");
        assert!(c.read_to_end().is_empty());
    }
    let status = d.child.as_mut().unwrap().wait().unwrap();
    assert!(status.success());
    assert!(!env.socket().exists(), "socket removed on exit");
}
