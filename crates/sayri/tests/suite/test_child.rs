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
//! * `secrets` — prints the length and byte sum of `$SAYRI_TEST_SECRET` and of its stdin (never
//!   the values), then sleeps until signalled.

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
            let env = std::env::var("SAYRI_TEST_SECRET").unwrap_or_default();
            let mut stdin = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut stdin);
            println!("env {:?}", fingerprint(env.as_bytes()));
            println!("stdin {:?}", fingerprint(&stdin));
            sleep_forever();
        }
        _ => panic!("unknown test child mode {mode:?}"),
    }
}
