//! The OS keyring as the data-key source (feature `keyring`), against a real Secret Service.
//!
//! Each `parent_*` test starts a private session bus (`dbus-run-session`) with its own
//! `gnome-keyring-daemon` whose `HOME` is a temporary directory, and runs one `child_*` test of this
//! same binary inside it. So the user's own keyring is never read or written, and every case gets a
//! fresh keyring. The children are `#[ignore]`d: they only make sense inside that session and fail
//! with a clear message when run any other way. `secret-tool` (libsecret) and `dbus-send` inspect
//! and change the keyring from outside the vault code.
//!
//! Needs `dbus-run-session`, `gnome-keyring-daemon`, `secret-tool` and `dbus-send` (Debian:
//! `dbus-daemon dbus-bin gnome-keyring libsecret-tools`); a missing tool fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sayri_vault::{KeySource, KeySourceKind, Vault, VaultError, VaultPaths};

const WORK_DIR_VAR: &str = "SAYRI_KEYRING_TEST_DIR";
const SECRET: &str = "kr-Vq8#tLw2@Zs9!pXe4";

/// Starts gnome-keyring with an unlocked login collection, waits until it owns
/// `org.freedesktop.secrets` (otherwise the first client makes the bus activate a second daemon,
/// and the two corrupt each other's `login.keyring`), then runs the child (`$0 "$@"`).
const START_UNLOCKED_KEYRING: &str = r#"
printf %s sayri-test-login | gnome-keyring-daemon --unlock --components=secrets >/dev/null \
  || { echo 'gnome-keyring-daemon failed to start' >&2; exit 97; }
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q 'boolean true'; do
  i=$((i + 1))
  [ "$i" -le 200 ] || { echo 'gnome-keyring-daemon never took org.freedesktop.secrets' >&2; exit 98; }
  sleep 0.05
done
exec "$0" "$@"
"#;

/// The Secret Service the child sees.
#[derive(Clone, Copy)]
enum Session {
    /// A private bus with gnome-keyring's login collection created and unlocked.
    Unlocked,
    /// No session bus at all: the address points to a socket that does not exist.
    NoBus,
}

/// Runs `child` of this test binary in the given session, `work` shared with the caller.
fn run_child(child: &str, session: Session, work: &Path) -> Output {
    let exe = std::env::current_exe().unwrap();
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let test_args = [
        "--ignored",
        "--exact",
        &format!("suite::keyring::{child}"),
        "--nocapture",
        "--test-threads=1",
    ];
    let mut cmd = match session {
        Session::Unlocked => {
            let mut c = Command::new("timeout");
            c.args(["120", "dbus-run-session", "--", "sh", "-c"]);
            c.arg(START_UNLOCKED_KEYRING);
            c.arg(&exe);
            c
        }
        Session::NoBus => {
            let mut c = Command::new("timeout");
            c.arg("120").arg(&exe);
            c
        }
    };
    cmd.args(test_args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env(WORK_DIR_VAR, work)
        .stdin(Stdio::null());
    if let Session::NoBus = session {
        cmd.env(
            "DBUS_SESSION_BUS_ADDRESS",
            format!("unix:path={}", work.join("no-bus-here").display()),
        );
    }
    let out = cmd.output().expect("cannot run `timeout` (coreutils)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child {child} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("1 passed"),
        "child {child} did not run exactly one test:\n{stdout}"
    );
    out
}

/// The shared directory given by the parent; a child run any other way fails here.
fn work_dir() -> PathBuf {
    match std::env::var_os(WORK_DIR_VAR) {
        Some(d) => PathBuf::from(d),
        None => panic!(
            "this test runs only inside the private keyring session its parent_* test starts; run `cargo test -p sayri-vault --features keyring keyring`"
        ),
    }
}

fn paths_in(dir: &Path) -> VaultPaths {
    VaultPaths::new(dir.join("config"), dir.join("state"))
}

fn secret_tool(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write as _;
    let mut child = Command::new("secret-tool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("secret-tool (libsecret-tools) is needed");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

const ENTRY: [&str; 4] = ["service", "sayri", "username", "vault-data-key"];

/// The vault key entry as `secret-tool` sees it, if any.
fn lookup_entry() -> Option<String> {
    let out = secret_tool(&[&["lookup"][..], &ENTRY[..]].concat(), None);
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap())
}

fn store_entry(text: &str) {
    let out = secret_tool(
        &[&["store", "--label=sayri test"][..], &ENTRY[..]].concat(),
        Some(text),
    );
    assert!(out.status.success(), "secret-tool store: {out:?}");
}

fn clear_entry() {
    let out = secret_tool(&[&["clear"][..], &ENTRY[..]].concat(), None);
    assert!(out.status.success(), "secret-tool clear: {out:?}");
}

fn lock_login_collection() {
    let out = Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.secrets",
            "/org/freedesktop/secrets",
            "org.freedesktop.Secret.Service.Lock",
            "array:objpath:/org/freedesktop/secrets/collection/login",
        ])
        .output()
        .expect("dbus-send (dbus-bin) is needed");
    assert!(out.status.success(), "dbus-send Lock: {out:?}");
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn keyring_error(r: Result<Vault, VaultError>) -> String {
    match r {
        Err(e @ VaultError::Keyring { .. }) => e.to_string(),
        Err(e) => panic!("expected an OS keyring error, got: {e}"),
        Ok(v) => panic!("expected an OS keyring error, the vault opened: {v:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The rest of this test binary opens vaults with `Auto`; with this feature on, `Auto` would use
// whatever Secret Service the binary reaches, i.e. the developer's own login keyring. Refuse that.

/// The session bus socket this process would reach, if one exists (zbus's lookup order:
/// `DBUS_SESSION_BUS_ADDRESS`, then `$XDG_RUNTIME_DIR/bus`, then `/run/user/<uid>/bus`).
fn reachable_session_bus() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var("DBUS_SESSION_BUS_ADDRESS") {
        Ok(addr) => {
            let Some(path) = addr
                .split(';')
                .find_map(|a| a.strip_prefix("unix:path="))
                .map(|p| p.split(',').next().unwrap_or(p))
            else {
                // abstract sockets, tcp, …: assume reachable.
                return Some(PathBuf::from(addr));
            };
            vec![PathBuf::from(path)]
        }
        Err(_) => {
            // SAFETY: getuid/geteuid take no arguments, touch no memory and cannot fail.
            let uid = unsafe { libc::getuid() };
            let mut v = vec![PathBuf::from(format!("/run/user/{uid}/bus"))];
            if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
                v.insert(0, PathBuf::from(d).join("bus"));
            }
            v
        }
    };
    candidates.into_iter().find(|p| p.exists())
}

#[test]
fn this_test_binary_reaches_no_real_session_bus() {
    if let Some(bus) = reachable_session_bus() {
        panic!(
            "this test binary reaches the session bus {}: with feature `keyring` the `Auto` tests of this suite \
             would keep keys in your own keyring (and fail). Run it with \
             `DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent cargo test -p sayri-vault --features keyring`",
            bus.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A new vault with `Auto` keeps its key in the keyring, never in a file, and reopens from it.

#[test]
fn parent_auto_keeps_the_key_in_an_unlocked_keyring() {
    let work = tempfile::tempdir().unwrap();
    run_child(
        "child_auto_keeps_the_key_in_an_unlocked_keyring",
        Session::Unlocked,
        work.path(),
    );
}

#[test]
#[ignore = "runs inside the private keyring session started by parent_auto_keeps_the_key_in_an_unlocked_keyring"]
fn child_auto_keeps_the_key_in_an_unlocked_keyring() {
    let dir = work_dir();
    assert_eq!(lookup_entry(), None, "the private keyring starts empty");

    let mut v = Vault::open(paths_in(&dir), KeySource::Auto).unwrap();
    let st = v.status().clone();
    assert!(st.created);
    assert_eq!(st.key_source, KeySourceKind::Keyring, "{st}");
    assert!(st.key_location.contains("vault-data-key"), "{st}");
    assert!(st.reason.contains("keyring"), "{st}");
    v.set("DEPLOY_TOKEN", SECRET, "test").unwrap();
    let p = v.paths().clone();
    drop(v);
    assert!(
        !p.key_file.exists(),
        "no key file when the keyring holds the key"
    );
    assert!(
        !p.key_file.parent().unwrap().exists(),
        "the key directory is not even created"
    );

    // The keyring holds 32 random bytes in base64, and the vault file holds neither them nor the value.
    let text = lookup_entry().expect("the data key is in the keyring");
    let key = STANDARD.decode(text.trim()).unwrap();
    assert_eq!(key.len(), 32);
    let file = std::fs::read(&p.vault_file).unwrap();
    assert!(!contains(&file, &key));
    assert!(!contains(&file, text.trim().as_bytes()));
    assert!(!contains(&file, SECRET.as_bytes()));

    // Reopened with Auto (as the daemon does) and with an explicit Keyring source.
    let v = Vault::open(paths_in(&dir), KeySource::Auto).unwrap();
    assert!(!v.status().created);
    assert_eq!(v.status().key_source, KeySourceKind::Keyring);
    assert_eq!(v.get("DEPLOY_TOKEN").unwrap().as_str(), SECRET);
    drop(v);
    let v = Vault::open(paths_in(&dir), KeySource::Keyring).unwrap();
    assert_eq!(v.get("DEPLOY_TOKEN").unwrap().as_str(), SECRET);
    drop(v);
    let e = Vault::open(paths_in(&dir), KeySource::KeyFile).unwrap_err();
    assert!(matches!(e, VaultError::KeySourceMismatch { .. }), "{e}");

    // A second vault of the same user shares the one entry, and says so.
    let v = Vault::open(paths_in(&dir.join("second")), KeySource::Auto).unwrap();
    assert_eq!(v.status().key_source, KeySourceKind::Keyring);
    assert!(v.status().reason.contains("reusing"), "{}", v.status());
    assert_eq!(lookup_entry().unwrap(), text, "the entry is not replaced");
}

// ---------------------------------------------------------------------------------------------
// A keyring vault whose entry is gone, malformed, foreign or locked is refused and left as it is:
// no fallback to a new key, no key file, the file's bytes unchanged.

#[test]
fn parent_a_keyring_vault_without_its_key_is_refused_and_kept() {
    let work = tempfile::tempdir().unwrap();
    run_child(
        "child_a_keyring_vault_without_its_key_is_refused_and_kept",
        Session::Unlocked,
        work.path(),
    );
}

#[test]
#[ignore = "runs inside the private keyring session started by parent_a_keyring_vault_without_its_key_is_refused_and_kept"]
fn child_a_keyring_vault_without_its_key_is_refused_and_kept() {
    let dir = work_dir();
    let mut v = Vault::open(paths_in(&dir), KeySource::Auto).unwrap();
    assert_eq!(v.status().key_source, KeySourceKind::Keyring);
    v.set("DEPLOY_TOKEN", SECRET, "").unwrap();
    let p = v.paths().clone();
    drop(v);
    let before = std::fs::read(&p.vault_file).unwrap();
    let good = lookup_entry().unwrap();
    let unchanged = || {
        assert_eq!(std::fs::read(&p.vault_file).unwrap(), before);
        assert!(!p.key_file.exists(), "no key file was made as a fallback");
    };

    // Entry deleted: refused with what to do; Auto does not mint a new key.
    clear_entry();
    let e = keyring_error(Vault::open(paths_in(&dir), KeySource::Auto));
    assert!(e.contains("restore the key"), "{e}");
    assert_eq!(
        lookup_entry(),
        None,
        "opening an existing vault never creates a key"
    );
    unchanged();

    // Not base64 / wrong length.
    store_entry("not a key at all");
    let e = keyring_error(Vault::open(paths_in(&dir), KeySource::Auto));
    assert!(e.contains("not a Sayri vault key"), "{e}");
    store_entry(&STANDARD.encode([7u8; 16]));
    let e = keyring_error(Vault::open(paths_in(&dir), KeySource::Auto));
    assert!(e.contains("wrong length"), "{e}");
    unchanged();

    // A well-formed but different key: the seal does not verify.
    store_entry(&STANDARD.encode([7u8; 32]));
    let e = Vault::open(paths_in(&dir), KeySource::Auto).unwrap_err();
    assert!(matches!(e, VaultError::Tampered { .. }), "{e}");
    unchanged();

    // The right key back: everything is there.
    store_entry(good.trim());
    let v = Vault::open(paths_in(&dir), KeySource::Auto).unwrap();
    assert_eq!(v.get("DEPLOY_TOKEN").unwrap().as_str(), SECRET);
    drop(v);

    // Locked collection, and no prompter to unlock it (no display): refused, file kept.
    lock_login_collection();
    let e = keyring_error(Vault::open(paths_in(&dir), KeySource::Auto));
    assert!(e.contains("Unlock the keyring"), "{e}");
    unchanged();

    // A *new* vault meanwhile falls back to the key file and says why.
    let other = dir.join("other");
    let v = Vault::open(paths_in(&other), KeySource::Auto).unwrap();
    let st = v.status();
    assert_eq!(st.key_source, KeySourceKind::KeyFile, "{st}");
    assert!(st.reason.contains("OS keyring was not used"), "{st}");
    assert!(v.paths().key_file.exists());
    // An explicit keyring request fails instead.
    keyring_error(Vault::open(
        paths_in(&dir.join("third")),
        KeySource::Keyring,
    ));
}

// ---------------------------------------------------------------------------------------------
// Without a session bus (the normal state for a daemon started outside a desktop session).

#[test]
fn parent_without_a_session_bus() {
    let work = tempfile::tempdir().unwrap();
    // A keyring vault made in a desktop session…
    run_child(
        "child_auto_keeps_the_key_in_an_unlocked_keyring",
        Session::Unlocked,
        work.path(),
    );
    let vault_file = paths_in(work.path()).vault_file;
    let before = std::fs::read(&vault_file).unwrap();
    // …then opened where no bus is reachable.
    run_child("child_without_a_session_bus", Session::NoBus, work.path());
    assert_eq!(std::fs::read(&vault_file).unwrap(), before);
}

#[test]
#[ignore = "runs without a session bus, started by parent_without_a_session_bus"]
fn child_without_a_session_bus() {
    let dir = work_dir();
    let p = paths_in(&dir);
    assert!(
        p.vault_file.exists(),
        "the parent made a keyring vault here"
    );

    let e = keyring_error(Vault::open(p.clone(), KeySource::Auto));
    assert!(e.contains("session bus"), "{e}");
    assert!(
        !p.key_file.exists(),
        "no fallback key for an existing vault"
    );

    let e = keyring_error(Vault::open(
        paths_in(&dir.join("explicit")),
        KeySource::Keyring,
    ));
    assert!(e.contains("session bus"), "{e}");
    assert!(!paths_in(&dir.join("explicit")).vault_file.exists());

    let v = Vault::open(paths_in(&dir.join("auto")), KeySource::Auto).unwrap();
    let st = v.status();
    assert_eq!(st.key_source, KeySourceKind::KeyFile, "{st}");
    assert!(st.reason.contains("OS keyring was not used"), "{st}");
}

// ---------------------------------------------------------------------------------------------
// `sayri vault key`: the key moves from its file into the keyring and back.

#[test]
fn parent_the_key_moves_from_its_file_into_the_keyring_and_back() {
    let work = tempfile::tempdir().unwrap();
    run_child(
        "child_the_key_moves_from_its_file_into_the_keyring_and_back",
        Session::Unlocked,
        work.path(),
    );
}

#[test]
#[ignore = "runs inside the private keyring session started by parent_the_key_moves_from_its_file_into_the_keyring_and_back"]
fn child_the_key_moves_from_its_file_into_the_keyring_and_back() {
    let dir = work_dir();
    let mut v = Vault::open(paths_in(&dir), KeySource::KeyFile).unwrap();
    v.set("DEPLOY_TOKEN", SECRET, "").unwrap();
    let p = v.paths().clone();
    assert!(p.key_file.exists());

    let said = v.move_key(KeySourceKind::Keyring).unwrap();
    assert!(said.contains("removed the old key file"), "{said}");
    assert!(!p.key_file.exists(), "the key left the disk");
    assert!(lookup_entry().is_some(), "the keyring holds it");
    assert_eq!(v.status().key_source, KeySourceKind::Keyring);
    drop(v);
    let v = Vault::open(paths_in(&dir), KeySource::Auto).unwrap();
    assert_eq!(v.status().key_source, KeySourceKind::Keyring);
    assert_eq!(v.get("DEPLOY_TOKEN").unwrap().as_str(), SECRET);
    drop(v);

    let mut v = Vault::open(paths_in(&dir), KeySource::Auto).unwrap();
    let said = v.move_key(KeySourceKind::KeyFile).unwrap();
    assert!(said.contains("left in place"), "{said}");
    assert!(p.key_file.exists());
    drop(v);
    let v = Vault::open(paths_in(&dir), KeySource::KeyFile).unwrap();
    assert_eq!(v.get("DEPLOY_TOKEN").unwrap().as_str(), SECRET);

    // A key file already there is never overwritten.
    let mut other = Vault::open(paths_in(&dir.join("other")), KeySource::Keyring).unwrap();
    std::fs::create_dir_all(other.paths().key_file.parent().unwrap()).unwrap();
    std::fs::write(&other.paths().key_file, b"someone else's key").unwrap();
    let e = other.move_key(KeySourceKind::KeyFile).unwrap_err();
    assert!(e.to_string().contains("already there"), "{e}");
    assert_eq!(
        std::fs::read(&other.paths().key_file).unwrap(),
        b"someone else's key"
    );
}
