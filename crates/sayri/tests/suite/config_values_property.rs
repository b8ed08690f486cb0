//! Property (the daemon half): for random settings and random JSON values (every type, empty
//! and huge strings, control characters, near-miss URLs, paths and patterns), `config_set`
//! either refuses with a message naming the key and what it expects — and the file keeps every
//! byte — or stores the value, and then a daemon restarted on the resulting file starts,
//! answers `status` and reports the stored values.
//!
//! How the work is split so it runs in CI in seconds: the pure check and the TOML round trip
//! are covered by thousands of cases in `sayri-core`'s `config_values_property`. Here every
//! value goes through the real daemon over its socket (the checks that need this machine —
//! policy files, agents, the provider client — included), and after every accepted value the
//! file is read back with the daemon's own loader (`config_file::load`, the start path's
//! parser and checks). The real restart, the slow part, happens once per case, after a
//! sequence of up to nine changes, so it covers every value that sequence left in the file.

use super::support::*;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use sayri_core::domain::config::KEYS;
use sayri_testkit::setting_values::key_and_value;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::BTreeMap;

const CASES: u32 = 64;

#[test]
fn config_set_refuses_naming_the_key_or_writes_a_file_a_restarted_daemon_answers_on() {
    let env = Env::new();
    std::fs::create_dir_all(env.config_dir()).unwrap();
    let path = env.config_dir().join("sayri.toml");
    std::fs::write(
        &path,
        include_bytes!("../fixtures/config-save-integrity.toml"),
    )
    .unwrap();
    let daemon = RefCell::new(Some(env.start_daemon()));
    let mut runner = TestRunner::new(RunnerConfig {
        cases: CASES,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let changes = proptest::collection::vec(key_and_value(), 1..10);
    let result = runner.run(&changes, |changes| {
        let mut c = RawClient::connect(&env.socket());
        let mut stored: BTreeMap<String, Value> = BTreeMap::new();
        for (n, (i, value)) in changes.into_iter().enumerate() {
            let spec = &KEYS[i];
            let name = spec.full_name();
            let before = std::fs::read(&path).unwrap();
            let r = c.call("config_set", json!({"key": name, "value": value}), n as u64);
            if r["ok"] == true {
                let loaded = sayri_daemon::config_file::load(&path);
                prop_assert!(loaded.is_ok(), "{name} = {value}: {:?}", loaded.err());
                // The provider key goes to the vault; secrets are masked when read back.
                if name != "provider.api_key" {
                    let (cfg, _) = loaded.unwrap();
                    prop_assert_eq!(&cfg.get(&name).unwrap().to_json(), &r["result"]["value"]);
                    if !spec.is_secret() {
                        stored.insert(name, r["result"]["value"].clone());
                    }
                }
            } else {
                let msg = r["error"].as_str().unwrap_or_default();
                prop_assert_eq!(&r["code"], "invalid_params", "{}", r);
                prop_assert!(
                    msg.starts_with(&format!("invalid value for {name}: expected ")),
                    "{name} = {value}: {msg}"
                );
                prop_assert_eq!(
                    std::fs::read(&path).unwrap(),
                    before,
                    "{} changed the file",
                    name
                );
            }
        }
        drop(c);
        let mut slot = daemon.borrow_mut();
        drop(slot.take());
        let d = env.start_daemon();
        let mut c = RawClient::connect(&env.socket());
        let st = c.call("status", json!({}), 1);
        prop_assert_eq!(&st["ok"], true, "{}", st);
        for (n, (name, value)) in stored.iter().enumerate() {
            let r = c.call("config_get", json!({ "key": name }), 10 + n as u64);
            prop_assert_eq!(&r["result"]["value"], value, "{} after the restart", name);
        }
        *slot = Some(d);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
