//! `status` shows what each sandbox level can guarantee on this machine: a level that cannot be
//! enforced is visible up front, not only when a command is refused.

use super::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[test]
fn status_reports_each_sandbox_level_once_the_probe_has_run() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let deadline = Instant::now() + Duration::from_secs(20);
    let sandbox = loop {
        let st = c.call("status", json!({}), 1);
        let sb = st["result"]["sandbox"].clone();
        if sb.get("levels").is_some() || sb.get("error").is_some() {
            break sb;
        }
        assert_eq!(sb["probing"], true, "{st}");
        assert!(
            Instant::now() < deadline,
            "the sandbox probe never finished: {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let levels = sandbox["levels"]
        .as_array()
        .unwrap_or_else(|| panic!("{sandbox}"));
    let names: Vec<&str> = levels.iter().filter_map(|l| l["level"].as_str()).collect();
    assert_eq!(
        names,
        [
            "LEVEL_0_NO_EXEC",
            "LEVEL_1_READONLY",
            "LEVEL_2_ISOLATED_DEV",
            "LEVEL_3_HOST_USER",
            "LEVEL_4_HOST_ROOT"
        ]
    );
    // This machine offers Landlock, seccomp and user namespaces: levels 1–3 are available, and
    // an unavailable level always says what is missing.
    for l in levels {
        let available = l["available"].as_bool().unwrap();
        let missing = l["missing"].as_array().unwrap();
        assert_eq!(available, missing.is_empty(), "{l}");
        if [
            "LEVEL_1_READONLY",
            "LEVEL_2_ISOLATED_DEV",
            "LEVEL_3_HOST_USER",
        ]
        .contains(&l["level"].as_str().unwrap())
        {
            assert!(available, "{l}");
        }
    }
    let unavailable: Vec<Value> = levels
        .iter()
        .filter(|l| l["available"] == false)
        .map(|l| l["level"].clone())
        .collect();
    assert_eq!(sandbox["unavailable"], Value::Array(unavailable));
    // Whether this kernel still allows typing into a terminal with TIOCSTI, from its setting.
    let expected = match std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti") {
        Ok(v) if v.trim() == "1" => "allowed",
        Ok(v) if v.trim() == "0" => "refused",
        _ => "allowed_without_setting",
    };
    assert_eq!(sandbox["legacy_tiocsti"], expected, "{sandbox}");
    let says = sandbox["terminal_injection"].as_str().unwrap();
    assert!(says.contains("Sayri blocks it anyway"), "{says}");
}
