//! The test child program for the supervisor tests: this test binary run again as
//! `suite::test_child::test_child_program` with [`MODE_ENV`] set, so the supervised program is a
//! real process that crashes, ignores `SIGTERM` or leaves descendants exactly when told to.
//!
//! Modes (`SAYRI_TEST_CHILD=<mode>`):
//! * `crash:<ms>:<code>` — prints `child up`, sleeps `ms`, exits with `code`.
//! * `polite` — prints `child up` and sleeps until signalled (default `SIGTERM` handling).
//! * `stubborn:<token>` — ignores `SIGTERM`; starts `sleep 1000.<token>1` in a new session
//!   (`setsid`), `sleep 1000.<token>2` double-forked (re-parented away from it) and
//!   `sleep 1000.<token>3` as a plain child; prints `child ready` and sleeps forever.
//! * `secrets` — prints the length and byte sum of the secret `SAYRI_TEST_SECRET` read from the
//!   descriptor named by `SAYRI_SECRETS_FD` and of its stdin (never the values), whether the
//!   secret is also an environment variable, and its descriptors above 2, then sleeps until
//!   signalled.

use sayri_daemon::supervisor::ChildSpec;
use std::io::Read;
use std::process::Command;
use std::time::Duration;

/// Environment variable that selects the mode.
pub const MODE_ENV: &str = "SAYRI_TEST_CHILD";

/// A spec running the test child in `mode`, named `name`.
pub fn spec(name: &str, mode: &str) -> ChildSpec {
    let mut s = ChildSpec::new(name, std::env::current_exe().unwrap());
    for a in [
        "suite::test_child::test_child_program",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ] {
        s = s.arg(a);
    }
    s.env(MODE_ENV, mode)
}

/// `(length, byte sum)` of `s`: what the `secrets` mode prints instead of the value.
pub fn fingerprint(s: &[u8]) -> (usize, u64) {
    (s.len(), s.iter().map(|b| u64::from(*b)).sum())
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[test]
#[ignore = "the supervised test child program, started by the supervisor tests"]
fn test_child_program() {
    let Ok(mode) = std::env::var(MODE_ENV) else {
        return;
    };
    let parts: Vec<&str> = mode.split(':').collect();
    match parts.as_slice() {
        ["crash", ms, code] => {
            println!("child up");
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
            std::process::exit(code.parse().unwrap());
        }
        ["polite"] => {
            println!("child up");
            sleep_forever();
        }
        ["stubborn", token] => {
            // SAFETY: ignoring a signal.
            unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            // Kept, never waited for: they must outlive this process's good manners.
            let _descendants = [
                Command::new("setsid")
                    .args(["sleep", &format!("1000.{token}1")])
                    .spawn()
                    .unwrap(),
                Command::new("sleep")
                    .arg(format!("1000.{token}3"))
                    .spawn()
                    .unwrap(),
            ];
            Command::new("sh")
                .args(["-c", &format!("sleep 1000.{token}2 &")])
                .status()
                .unwrap();
            println!("child ready");
            sleep_forever();
        }
        ["secrets"] => {
            let fds = open_fds();
            let passed = read_passed_secrets();
            let secret = passed.get("SAYRI_TEST_SECRET").cloned().unwrap_or_default();
            let mut stdin = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut stdin);
            println!("passed {:?}", fingerprint(secret.as_bytes()));
            println!(
                "in environment: {}",
                std::env::var_os("SAYRI_TEST_SECRET").is_some()
            );
            println!("fds {fds:?}");
            println!("stdin {:?}", fingerprint(&stdin));
            sleep_forever();
        }
        _ => panic!("unknown test child mode {mode:?}"),
    }
}

/// The descriptors above 2 this process has (read before anything else opens one).
fn open_fds() -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    v.sort();
    // The listing's own directory descriptor is gone again.
    v.retain(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok());
    v
}

/// The secrets on the descriptor named by `SAYRI_SECRETS_FD`, read to its end.
fn read_passed_secrets() -> std::collections::BTreeMap<String, String> {
    use std::os::fd::FromRawFd;
    let Some(fd) = std::env::var("SAYRI_SECRETS_FD")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return Default::default();
    };
    let mut bytes = Vec::new();
    // SAFETY: the supervisor passed this descriptor to this process, and nothing else owns it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    f.read_to_end(&mut bytes).unwrap();
    sayri_protocol::child_secrets::decode(&bytes).unwrap()
}
