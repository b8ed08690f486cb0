//! The sealed file: no plaintext on disk, any changed byte refused (file kept), round trips,
//! key normalisation, short values refused, masking, scoping, passphrase vaults, two processes.

use sayri_vault::{KdfParams, KeySource, KeySourceKind, Passphrase, Vault, VaultError, VaultPaths};
use zeroize::Zeroizing;

pub fn paths(dir: &tempfile::TempDir) -> VaultPaths {
    VaultPaths::new(dir.path().join("config"), dir.path().join("state"))
}

const VALUES: [(&str, &str, &str); 3] = [
    ("deploy token", "sy-cS~ke4R1J+dBi2ewQr8t4/lC4", "CI deploys"),
    ("GITHUB_TOKEN", "ghp_0123456789abcdefXYZ", "read-only"),
    ("db_password", "pässwörd with spaces", ""),
];

fn filled(dir: &tempfile::TempDir) -> Vault {
    let mut v = Vault::open(paths(dir), KeySource::Auto).unwrap();
    for (k, val, d) in VALUES {
        v.set(k, val, d).unwrap();
    }
    v
}

#[test]
fn new_vault_uses_the_key_file_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    let st = v.status();
    assert!(st.created);
    assert_eq!(st.key_source, KeySourceKind::KeyFile);
    assert!(st.reason.contains("keyring"), "{}", st.reason);
    assert!(st.to_string().contains("key file"));
    let again = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    assert!(!again.status().created);
}

#[test]
fn the_file_holds_no_plaintext_of_any_value_or_description() {
    let dir = tempfile::tempdir().unwrap();
    let v = filled(&dir);
    let bytes = std::fs::read(&v.paths().vault_file).unwrap();
    for (_, val, desc) in VALUES {
        for needle in [val, &val[..8], desc] {
            if needle.len() >= 4 {
                assert!(
                    !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                    "{needle:?} is in the file"
                );
            }
        }
    }
    // Key names are metadata and are visible (documented in the README).
    assert!(String::from_utf8_lossy(&bytes).contains("GITHUB_TOKEN"));
}

#[test]
fn values_round_trip_and_keys_are_normalised() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(&dir));
    let v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    assert_eq!(v.get("Deploy Token").unwrap().as_str(), VALUES[0].1);
    assert_eq!(v.get(" db password ").unwrap().as_str(), VALUES[2].1);
    let list = v.list();
    let keys: Vec<_> = list.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["DB_PASSWORD", "DEPLOY_TOKEN", "GITHUB_TOKEN"]);
    assert_eq!(list[1].masked, "sy-...lC4");
    assert_eq!(list[1].description, "CI deploys");
    let json = serde_json::to_string(&list).unwrap();
    assert!(!json.contains(VALUES[0].1) && !json.contains(VALUES[1].1));
}

#[test]
fn invalid_names_and_short_values_are_refused_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    for bad in ["my-key", "1ST", "", "PATH", "LD_PRELOAD", "ÜBER"] {
        let e = v.set(bad, "long enough value", "").unwrap_err();
        assert!(matches!(e, VaultError::InvalidKey { .. }), "{bad}: {e}");
        assert!(e.to_string().contains("GITHUB_TOKEN"), "{e}");
    }
    let e = v.set("PIN", "  123 ", "").unwrap_err();
    assert!(
        matches!(e, VaultError::ValueTooShort { chars: 3, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("at least 4"), "{e}");
    assert!(v.list().is_empty());
}

#[test]
fn delete_and_env_scoping_give_only_allowed_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = filled(&dir);
    let env = v.env_for(&["github token".into(), "NOPE".into(), "GITHUB_TOKEN".into()]);
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].0, "GITHUB_TOKEN");
    assert_eq!(env[0].1.as_str(), VALUES[1].1);
    assert_eq!(v.missing(&["NOPE".into(), "github_token".into()]), ["NOPE"]);
    assert!(v.env_for(&[]).is_empty());
    assert!(v.delete("github_token").unwrap());
    assert!(!v.delete("github_token").unwrap());
    let v2 = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    assert!(v2.get("GITHUB_TOKEN").is_none());
    let red = v2.redactor();
    assert_eq!(
        red.redact("x sy-cS~ke4R1J+dBi2ewQr8t4/lC4"),
        "x $SECRET:DEPLOY_TOKEN"
    );
}

#[test]
fn two_handles_do_not_lose_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    let mut cli = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    cli.set("FROM_CLI", "cli-value-1", "").unwrap();
    daemon.set("FROM_DAEMON", "daemon-value-1", "").unwrap();
    assert!(daemon.get("FROM_CLI").is_some());
    assert!(cli.refresh().unwrap());
    assert!(cli.get("FROM_DAEMON").is_some());
    assert!(!cli.refresh().unwrap());
}

/// Flips, replaces, drops and adds single bytes at every position: every variant is refused with
/// `Corrupt` or `Tampered`, and the tampered file is left exactly as it was.
#[test]
fn tampering_any_single_byte_is_detected_and_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    v.set("A_KEY", "value-one", "d").unwrap();
    let file = v.paths().vault_file.clone();
    drop(v);
    let good = std::fs::read(&file).unwrap();
    let mut variants: Vec<Vec<u8>> = Vec::new();
    for i in 0..good.len() {
        for f in [|b: u8| b ^ 0x01, |b: u8| b ^ 0x20, |b: u8| b ^ 0x80] {
            let mut t = good.clone();
            t[i] = f(t[i]);
            variants.push(t);
        }
        let mut t = good.clone();
        t.remove(i);
        variants.push(t);
        let mut t = good.clone();
        t.insert(i, b' ');
        variants.push(t);
    }
    let mut t = good.clone();
    t.push(b'\n');
    variants.push(t);
    for t in variants {
        std::fs::write(&file, &t).unwrap();
        match Vault::open(paths(&dir), KeySource::Auto) {
            Err(VaultError::Corrupt { .. } | VaultError::Tampered { .. }) => {}
            Err(e) => panic!("unexpected error kind {e}"),
            Ok(_) => panic!(
                "accepted a tampered file: {:?}",
                String::from_utf8_lossy(&t)
            ),
        }
        assert_eq!(
            std::fs::read(&file).unwrap(),
            t,
            "a failed load changed the file"
        );
    }
    std::fs::write(&file, &good).unwrap();
    let v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    assert_eq!(v.get("A_KEY").unwrap().as_str(), "value-one");
}

#[test]
fn a_write_through_a_handle_refuses_a_file_tampered_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = filled(&dir);
    let file = v.paths().vault_file.clone();
    let mut bytes = std::fs::read(&file).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    assert!(v.set("NEW_ONE", "new-value-1", "").is_err());
    assert_eq!(
        std::fs::read(&file).unwrap(),
        bytes,
        "the tampered file was overwritten"
    );
    assert!(v.refresh().is_err());
}

#[test]
fn wrong_key_file_is_reported_as_failed_integrity() {
    let dir = tempfile::tempdir().unwrap();
    let v = filled(&dir);
    let key = v.paths().key_file.clone();
    drop(v);
    std::fs::write(&key, [7u8; 32]).unwrap();
    let e = Vault::open(paths(&dir), KeySource::Auto).unwrap_err();
    assert!(matches!(e, VaultError::Tampered { .. }), "{e}");
    assert!(e.to_string().contains("key file"), "{e}");
}

fn fast() -> KdfParams {
    KdfParams {
        m_kib: 64,
        t: 1,
        p: 1,
    }
}

#[test]
fn passphrase_vault_needs_the_right_passphrase() {
    let dir = tempfile::tempdir().unwrap();
    let pass = |s: &str| {
        KeySource::Passphrase(Passphrase::new(Zeroizing::new(s.into())).with_params(fast()))
    };
    let mut v = Vault::open(paths(&dir), pass("correct horse")).unwrap();
    assert_eq!(v.status().key_source, KeySourceKind::Passphrase);
    v.set("K1", "passphrase-protected", "").unwrap();
    assert!(
        !paths(&dir).key_file.exists(),
        "no key file for a passphrase vault"
    );
    drop(v);
    assert!(matches!(
        Vault::open(paths(&dir), KeySource::Auto).unwrap_err(),
        VaultError::PassphraseRequired { .. }
    ));
    assert!(matches!(
        Vault::open(paths(&dir), KeySource::KeyFile).unwrap_err(),
        VaultError::KeySourceMismatch { .. }
    ));
    assert!(matches!(
        Vault::open(paths(&dir), pass("wrong horse")).unwrap_err(),
        VaultError::Tampered { .. }
    ));
    let v = Vault::open(paths(&dir), pass("correct horse")).unwrap();
    assert_eq!(v.get("K1").unwrap().as_str(), "passphrase-protected");
}

#[cfg(not(feature = "keyring"))]
#[test]
fn keyring_request_without_the_feature_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let e = Vault::open(paths(&dir), KeySource::Keyring).unwrap_err();
    assert!(matches!(e, VaultError::Keyring { .. }), "{e}");
    assert!(!paths(&dir).vault_file.exists());
}

// ---------------------------------------------------------------------------------------------
// Starting over and moving the key

#[test]
fn reset_moves_the_vault_and_its_key_aside_never_deleting_them_and_the_old_one_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let old = filled(&dir);
    let p = old.paths().clone();
    drop(old);
    let (fresh, moved) = Vault::reset(p.clone(), KeySource::Auto).unwrap();
    assert_eq!(moved.len(), 2, "the vault file and its key file: {moved:?}");
    assert!(fresh.status().created);
    assert!(fresh.list().is_empty());
    assert_eq!(fresh.status().key_source, KeySourceKind::KeyFile);
    assert!(
        fresh.status().reason.contains("keyring"),
        "{}",
        fresh.status()
    );
    for (from, to) in &moved {
        assert!(from.exists(), "a new {} was created", from.display());
        assert!(to.exists(), "{} is kept", to.display());
        assert!(
            to.file_name()
                .unwrap()
                .to_string_lossy()
                .contains(".reset-20"),
            "{}",
            to.display()
        );
    }
    drop(fresh);
    // Putting the moved files back restores every secret.
    for (from, to) in &moved {
        std::fs::rename(to, from).unwrap();
    }
    let back = Vault::open(p, KeySource::Auto).unwrap();
    assert_eq!(back.list().len(), VALUES.len());
    assert_eq!(
        back.get("GITHUB_TOKEN").unwrap().as_str(),
        "ghp_0123456789abcdefXYZ"
    );
}

#[test]
fn reset_without_a_vault_says_so_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = Vault::reset(paths(&dir), KeySource::Auto).unwrap_err();
    assert!(e.to_string().contains("no vault"), "{e}");
    assert!(!paths(&dir).vault_file.exists());
}

#[test]
fn moving_the_key_where_it_is_or_from_a_passphrase_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = filled(&dir);
    let before = std::fs::read(&v.paths().vault_file).unwrap();
    let e = v.move_key(KeySourceKind::KeyFile).unwrap_err();
    assert!(e.to_string().contains("already"), "{e}");
    assert_eq!(std::fs::read(&v.paths().vault_file).unwrap(), before);

    let pdir = tempfile::tempdir().unwrap();
    let pass =
        Passphrase::new(Zeroizing::new("correct horse battery".into())).with_params(KdfParams {
            m_kib: 64,
            t: 1,
            p: 1,
        });
    let mut pv = Vault::open(paths(&pdir), KeySource::Passphrase(pass)).unwrap();
    let e = pv.move_key(KeySourceKind::Keyring).unwrap_err();
    assert!(e.to_string().contains("passphrase"), "{e}");
}

#[test]
fn moving_the_key_into_an_unreachable_keyring_fails_loudly_and_keeps_the_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = filled(&dir);
    let p = v.paths().clone();
    let before = std::fs::read(&p.vault_file).unwrap();
    let key = std::fs::read(&p.key_file).unwrap();
    // No Secret Service here (this binary refuses to run where a session bus is reachable):
    // the keyring cannot take the key.
    let e = v.move_key(KeySourceKind::Keyring).unwrap_err();
    assert!(matches!(e, VaultError::Keyring { .. }), "{e}");
    assert!(e.to_string().contains("keyring"), "{e}");
    assert_eq!(std::fs::read(&p.vault_file).unwrap(), before);
    assert_eq!(std::fs::read(&p.key_file).unwrap(), key);
    drop(v);
    let again = Vault::open(p, KeySource::Auto).unwrap();
    assert_eq!(again.list().len(), VALUES.len());
}
