//! Property: for every key of the settings table and any JSON value (or command-line text),
//! setting it either is refused with a message naming the key and what it expects — leaving
//! the config as it was — or stores a value that passes every check and reads back unchanged
//! from the TOML text it is saved as.
//!
//! This is the pure half of the settings property (thousands of cases, milliseconds each); the
//! `sayri` suite's `config_values_property` sends the same kind of values to a real daemon and
//! restarts it on the file it wrote.

use proptest::prelude::*;
use sayri_core::domain::config::{Config, ConfigError, KEYS};
use sayri_testkit::setting_values::{key_and_value, text};

/// A refusal of `name`: the right variant, naming the key, saying what the key expects.
fn assert_refusal(e: &ConfigError, name: &str) -> Result<(), TestCaseError> {
    let spec = Config::spec(name).unwrap();
    let msg = e.to_string();
    match e {
        ConfigError::BadValue { key, expected, .. } => {
            prop_assert_eq!(key, name);
            prop_assert_eq!(expected, &spec.expected());
            prop_assert!(
                msg.starts_with(&format!("invalid value for {name}: expected ")),
                "{}",
                msg
            );
            prop_assert!(msg.len() < 2_000, "a short message: {} bytes", msg.len());
        }
        other => prop_assert!(false, "{name}: unexpected error {other}"),
    }
    Ok(())
}

/// A stored value: passes every check and survives the TOML round trip.
fn assert_stored(cfg: &Config) -> Result<(), TestCaseError> {
    prop_assert!(cfg.problems().is_empty(), "{:?}", cfg.problems());
    let text = cfg.to_toml_string();
    let back = Config::from_toml_str(&text, "sayri.toml");
    prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), text);
    prop_assert_eq!(&back.unwrap(), cfg);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn any_json_value_is_refused_naming_the_key_or_stored_so_it_reads_back(
        (i, value) in key_and_value()
    ) {
        let name = KEYS[i].full_name();
        let mut cfg = Config::default();
        match cfg.set_json(&name, &value) {
            Err(e) => {
                assert_refusal(&e, &name)?;
                prop_assert_eq!(&cfg, &Config::default(), "unchanged after a refusal");
            }
            Ok(stored) => {
                prop_assert_eq!(cfg.get(&name).unwrap(), stored);
                assert_stored(&cfg)?;
            }
        }
    }

    #[test]
    fn any_command_line_text_is_refused_naming_the_key_or_stored_so_it_reads_back(
        i in 0..KEYS.len(),
        typed in text(),
    ) {
        let name = KEYS[i].full_name();
        let mut cfg = Config::default();
        match cfg.set_text(&name, &typed) {
            Err(e) => {
                assert_refusal(&e, &name)?;
                prop_assert_eq!(&cfg, &Config::default());
            }
            Ok(_) => assert_stored(&cfg)?,
        }
    }
}
