//! Params over the real socket: a wrong type, a missing parameter or an unknown name answers
//! `invalid_params` naming it, before the handler runs; commands without params ignore extras.

use super::support::*;
use serde_json::json;

#[test]
fn bad_params_answer_invalid_params_naming_the_parameter() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let cases = [
        ("ask", json!({"text": "hi", "timeout": "soon"}), "`timeout`"),
        ("ask", json!({"timeout": 5}), "`text`"),
        ("talk", json!({"text": "   "}), "`text`"),
        ("session_get", json!({}), "`session_id`"),
        (
            "session_rename",
            json!({"session_id": "s", "title": 7}),
            "`title`",
        ),
        ("sessions_list", json!({"limit": -1}), "`limit`"),
        (
            "permission_answer",
            json!({"request_id": "0123456789ab", "allow": "yes"}),
            "`allow`",
        ),
        ("permission_forget", json!({"acton": "shell"}), "acton"),
        ("config_set", json!({"key": "ui.autostart"}), "`value`"),
        (
            "vault_set",
            json!({"key": "K", "value": "v", "descripton": "typo"}),
            "descripton",
        ),
    ];
    for (i, (cmd, params, names)) in cases.iter().enumerate() {
        let r = c.call(cmd, params.clone(), i as u64);
        assert_eq!(r["code"], "invalid_params", "{cmd} {params}: {r}");
        let msg = r["error"].as_str().unwrap();
        assert!(
            msg.contains(cmd) && msg.contains(names),
            "{cmd} {params}: the message names {names}: {msg}"
        );
    }
    // Nothing acted: the typo'd `vault_set` stored nothing.
    let r = c.call("vault_list", json!({}), 100);
    assert_eq!(r["result"], json!([]), "{r}");
    // Commands without params ignore what they are sent.
    let r = c.call("ping", json!({"note": "café ☕"}), 101);
    assert_eq!(r["result"], "pong", "{r}");
    let r = c.call("status", json!({"verbose": true}), 102);
    assert_eq!(r["ok"], true, "{r}");
    // A non-object `params` value is `{"value": v}`: ignored by `ping`, unknown to `session_get`.
    c.write(b"{\"cmd\":\"ping\",\"params\":5,\"id\":103}\n");
    assert_eq!(c.read_response()["result"], "pong");
    c.write(b"{\"cmd\":\"session_get\",\"params\":\"abc\",\"id\":104}\n");
    let r = c.read_response();
    assert_eq!(r["code"], "invalid_params", "{r}");
}
