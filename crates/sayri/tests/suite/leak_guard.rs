//! Nothing a test starts is left behind: the suite's `Env` fails a test that leaves a process
//! running, such as a daemon the CLI started in the background and nobody stopped.

use super::support::*;
use std::time::Duration;

#[test]
#[should_panic(expected = "the test left 1 process(es) running")]
fn a_test_that_leaves_a_background_daemon_running_fails() {
    let env = Env::new();
    // A client command starts the daemon in the background (its own session, no handle).
    let o = env.run(&["ping"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Ending here, without `sayri quit`, leaks it: dropping `env` fails the test.
}

#[test]
fn a_background_daemon_is_found_until_it_is_stopped() {
    let env = Env::new();
    let o = env.run(&["ping"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let found = sayri_testkit::procs::leftovers(env.dir.path());
    assert!(
        found.iter().any(|p| p.cmdline.ends_with("sayri daemon")),
        "{found:?}"
    );
    let o = env.run(&["quit"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let left = sayri_testkit::procs::stop_leftovers(env.dir.path(), Duration::from_secs(5));
    assert!(left.is_empty(), "{left:?}");
}
