//! Permissions: vault and key file 0600, their new directories 0700; an exposed key is refused.

use std::os::unix::fs::PermissionsExt;

use sayri_vault::{KeySource, Vault, VaultError};

use super::vault_file::paths;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn files_are_0600_and_new_directories_0700() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    v.set("SOME_KEY", "some-value", "").unwrap();
    let p = v.paths().clone();
    assert_eq!(mode(&p.vault_file), 0o600);
    assert_eq!(mode(&p.key_file), 0o600);
    assert_eq!(mode(p.key_file.parent().unwrap()), 0o700);
    assert_eq!(mode(p.vault_file.parent().unwrap()), 0o700);
    assert_eq!(std::fs::metadata(&p.key_file).unwrap().len(), 32);
    assert_ne!(p.key_file.parent(), p.vault_file.parent());
}

#[test]
fn a_group_readable_key_file_is_refused_and_a_widened_vault_tightened() {
    let dir = tempfile::tempdir().unwrap();
    let p = Vault::open(paths(&dir), KeySource::Auto)
        .unwrap()
        .paths()
        .clone();
    std::fs::set_permissions(&p.vault_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    assert_eq!(mode(&p.vault_file), 0o600);
    assert!(v.status().notes.iter().any(|n| n.contains("0600")));
    std::fs::set_permissions(&p.key_file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let e = Vault::open(paths(&dir), KeySource::Auto).unwrap_err();
    assert!(matches!(e, VaultError::KeyFile { .. }), "{e}");
    assert!(e.to_string().contains("chmod 600"), "{e}");
}

#[test]
fn a_missing_key_file_is_explained_and_nothing_is_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = Vault::open(paths(&dir), KeySource::Auto).unwrap();
    v.set("SOME_KEY", "some-value", "").unwrap();
    let p = v.paths().clone();
    drop(v);
    let before = std::fs::read(&p.vault_file).unwrap();
    std::fs::remove_file(&p.key_file).unwrap();
    let e = Vault::open(paths(&dir), KeySource::Auto).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    assert_eq!(std::fs::read(&p.vault_file).unwrap(), before);
    assert!(
        !p.key_file.exists(),
        "a new key must not be made for an existing vault"
    );
}

#[test]
fn an_unprivileged_user_cannot_read_the_vault_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = Vault::open(paths(&dir), KeySource::Auto)
        .unwrap()
        .paths()
        .clone();
    // Open every directory on the way, so only the files' own 0600 mode stands in the way.
    for d in [
        dir.path(),
        p.vault_file.parent().unwrap(),
        p.key_file.parent().unwrap(),
    ] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for f in [&p.vault_file, &p.key_file] {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
            .arg(f)
            .output()
            .unwrap();
        assert!(!out.status.success(), "nobody could read {}", f.display());
        assert!(out.stdout.is_empty());
    }
}
