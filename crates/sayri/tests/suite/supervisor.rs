//! The supervisor with real processes: the test child program (`test_child`) under the real
//! keeper (`sayri-exec keep`), crashing, ignoring `SIGTERM`, leaving descendants and
//! reading secrets, exactly as a model server, a gateway or a plugin service might.

use super::support::{alive, exec_bin, processes_with};
use super::test_child::{fingerprint, spec};
use sayri_daemon::supervisor::{
    ChildState, ChildStatus, Launcher, RestartPolicy, Supervisor, SupervisorConfig, SupervisorError,
};
use sayri_sandbox::child_registry::ChildRegistry;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A supervisor writing into a fresh directory, recording every status change with its time.
struct Rig {
    dir: tempfile::TempDir,
    sup: Supervisor,
    seen: Arc<Mutex<Vec<(Instant, ChildStatus)>>>,
}

impl Rig {
    fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let seen: Arc<Mutex<Vec<(Instant, ChildStatus)>>> = Arc::default();
        let log = seen.clone();
        let config = SupervisorConfig {
            log_dir: dir.path().join("logs"),
            launcher: Launcher {
                program: exec_bin(),
                args: Vec::new(),
                registry: Some(ChildRegistry::new(dir.path().join("children"))),
            },
        };
        let sup = Supervisor::with_observer(
            config,
            Arc::new(move |s: &ChildStatus| log.lock().unwrap().push((Instant::now(), s.clone()))),
        );
        Rig { dir, sup, seen }
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("logs/{name}.log")))
            .unwrap_or_default()
    }

    fn records(&self) -> usize {
        ChildRegistry::new(self.dir.path().join("children"))
            .records()
            .len()
    }

    /// Waits until `name`'s log contains `text`.
    async fn log_has(&self, name: &str, text: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.log(name).contains(text) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    async fn wait_state(&self, name: &str, state: ChildState, limit: Duration) -> ChildStatus {
        let deadline = Instant::now() + limit;
        loop {
            let st = self.sup.status(name).unwrap();
            if st.state == state || Instant::now() > deadline {
                return st;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn keeper_pids(&self) -> Vec<u32> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, s)| s.keeper_pid)
            .collect()
    }
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_child_is_restarted_with_growing_delays_until_the_breaker_trips() {
    let rig = Rig::new();
    let mut s = spec("crasher", "crash:50:3");
    s.restart = RestartPolicy {
        initial_delay: Duration::from_millis(150),
        max_delay: Duration::from_secs(5),
        max_crashes: 4,
        window: Duration::from_secs(60),
        stable_after: Duration::from_secs(60),
    };
    rig.sup.start(s).unwrap();
    let st = rig
        .wait_state("crasher", ChildState::Failed, Duration::from_secs(30))
        .await;
    assert_eq!(st.state, ChildState::Failed, "{st:?}");
    assert_eq!(st.restarts, 3, "{st:?}");
    let err = st.last_error.clone().unwrap();
    assert!(
        err.contains("exited with code 3") && err.contains("crashed 4 times"),
        "{err}"
    );
    assert!(
        err.contains("crasher.log"),
        "the error names the log: {err}"
    );

    // Each backoff (from the crash to the next start) doubles: 150, 300, 600 ms. A restart never
    // comes early; the upper bound only catches a backoff that did not happen at all (it leaves
    // room for a machine busy with other tests).
    let seen = rig.seen.lock().unwrap().clone();
    let mut delays = Vec::new();
    let mut backoff_since = None;
    for (t, st) in &seen {
        match st.state {
            ChildState::Backoff if backoff_since.is_none() => backoff_since = Some(*t),
            ChildState::Starting => {
                if let Some(b) = backoff_since.take() {
                    delays.push(*t - b);
                }
            }
            _ => {}
        }
    }
    assert_eq!(delays.len(), 3, "{seen:?}");
    for (d, expected) in delays.iter().zip([150u64, 300, 600]) {
        let expected = Duration::from_millis(expected);
        assert!(
            *d >= expected && *d < expected + Duration::from_millis(2_000),
            "backoff delays {delays:?}, expected 150, 300, 600 ms"
        );
    }
    let starts = seen
        .iter()
        .filter(|(_, s)| s.state == ChildState::Running)
        .count();
    assert_eq!(starts, 4);

    // The breaker holds: no fifth start.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rig.sup.status("crasher").unwrap().state, ChildState::Failed);
    let log = rig.log("crasher");
    assert_eq!(count(&log, "child up"), 4, "{log}");
    assert_eq!(count(&log, "] started "), 4, "{log}");
    assert!(log.contains("giving up"), "{log}");
    for pid in rig.keeper_pids() {
        assert!(!alive(pid as i32), "keeper {pid} still runs");
    }
    assert_eq!(rig.records(), 0, "records of ended runs are removed");

    // A new start revives it with fresh counters.
    let again = rig.sup.start(spec("crasher", "polite")).unwrap();
    assert_eq!(again.restarts, 0);
    assert!(
        rig.log_has("crasher", "child up\n", Duration::from_secs(10))
            .await
    );
    rig.sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_child_that_ignores_sigterm_and_everything_it_started() {
    let rig = Rig::new();
    let token = format!("{}7", std::process::id());
    let mut s = spec("stubborn", &format!("stubborn:{token}"));
    s.stop_grace = Duration::from_millis(300);
    rig.sup.start(s).unwrap();
    assert!(
        rig.log_has("stubborn", "child ready", Duration::from_secs(10))
            .await
    );
    let sleeps = processes_with(&format!("1000.{token}"));
    assert_eq!(sleeps.len(), 3, "{sleeps:?}");
    let running = rig.sup.status("stubborn").unwrap();
    assert_eq!(running.state, ChildState::Running);
    let program = running.pid.unwrap();
    assert!(alive(program as i32));
    assert_eq!(rig.records(), 1, "a running child is recorded");

    let t = Instant::now();
    let st = rig.sup.stop("stubborn").await.unwrap();
    let took = t.elapsed();
    assert_eq!(st.state, ChildState::Stopped);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "stop took {took:?}"
    );
    assert_eq!(
        processes_with(&format!("1000.{token}")),
        vec![],
        "descendants survived the stop"
    );
    assert!(!alive(program as i32));
    assert_eq!(rig.records(), 0);
    assert!(rig.log("stubborn").contains("stopped on request"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_honours_sigterm_stops_without_waiting_for_the_grace_period() {
    let rig = Rig::new();
    let mut s = spec("polite", "polite");
    s.stop_grace = Duration::from_secs(20);
    rig.sup.start(s).unwrap();
    assert!(
        rig.log_has("polite", "child up", Duration::from_secs(10))
            .await
    );
    let t = Instant::now();
    let st = rig.sup.stop("polite").await.unwrap();
    assert_eq!(st.state, ChildState::Stopped);
    // Far below the 20 s grace: it did not wait for it.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // Stopping again, or a name never started, is harmless / a clear error.
    assert_eq!(
        rig.sup.stop("polite").await.unwrap().state,
        ChildState::Stopped
    );
    assert_eq!(
        rig.sup.stop("nobody").await.unwrap_err(),
        SupervisorError::Unknown("nobody".into())
    );
}

fn proc_file(pid: u32, file: &str) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default())
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_reach_the_child_on_a_descriptor_never_in_argv_or_environment() {
    let rig = Rig::new();
    let secret = "tg-bot-token-31415926";
    let stdin_secret = "stdin-secret-27182818";
    let passed = sayri_daemon::owned_port::bind_loopback().unwrap();
    let s = spec("secrets", "secrets")
        .secret("SAYRI_TEST_SECRET", secret)
        .pass_fd("SAYRI_TEST_LISTEN_FD", passed.fd.clone())
        .stdin(stdin_secret.as_bytes().to_vec());
    rig.sup.start(s).unwrap();
    assert!(
        rig.log_has("secrets", "stdin (", Duration::from_secs(10))
            .await
    );
    let log = rig.log("secrets");
    assert!(
        log.contains(&format!("passed {:?}", fingerprint(secret.as_bytes()))),
        "{log}"
    );
    assert!(log.contains("in environment: false"), "{log}");
    assert!(
        log.contains("fds [3, 4]"),
        "the secrets socket and the passed one only: {log}"
    );
    assert!(
        log.contains(&format!("stdin {:?}", fingerprint(stdin_secret.as_bytes()))),
        "{log}"
    );
    let st = rig.sup.status("secrets").unwrap();
    for pid in [st.pid.unwrap(), st.keeper_pid.unwrap()] {
        let c = proc_file(pid, "cmdline");
        assert!(!c.is_empty(), "no command line for {pid}");
        let e = proc_file(pid, "environ");
        assert!(e.contains("SAYRI_SECRETS_FD=3"), "{pid}: {e}");
        for text in [&c, &e] {
            assert!(
                !text.contains(secret) && !text.contains(stdin_secret),
                "{pid}: {text}"
            );
        }
    }
    let keeper = proc_file(st.keeper_pid.unwrap(), "status");
    assert!(
        !keeper.is_empty() && proc_file(st.keeper_pid.unwrap(), "cmdline").ends_with("keep\0"),
        "the keeper's command line ends with its mode word"
    );
    assert!(!log.contains(secret) && !log.contains(stdin_secret));
    rig.sup.stop("secrets").await.unwrap();

    // A secret in the arguments or the plain environment is refused before anything starts.
    for leaky in [
        spec("leaky", "polite")
            .arg(format!("--token={secret}"))
            .secret("SAYRI_TEST_SECRET", secret),
        spec("leaky", "polite")
            .env("TOKEN", secret)
            .secret("SAYRI_TEST_SECRET", secret),
    ] {
        assert_eq!(
            rig.sup.start(leaky).unwrap_err(),
            SupervisorError::SecretInArguments("SAYRI_TEST_SECRET".into())
        );
    }
    assert!(rig.sup.status("leaky").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_secrets_are_made_again_for_every_start_of_a_child() {
    let rig = Rig::new();
    let made = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = made.clone();
    let mut s = spec("fresh", "secrets").fresh_secrets(Arc::new(move || {
        let mut all = record.lock().unwrap();
        let value = format!("fresh-secret-{:04}-{}", all.len(), std::process::id());
        all.push(value.clone());
        Ok(vec![(
            "SAYRI_TEST_SECRET".to_string(),
            zeroize::Zeroizing::new(value),
        )])
    }));
    s.restart.initial_delay = Duration::from_millis(100);
    rig.sup.start(s).unwrap();
    assert!(
        rig.log_has("fresh", "stdin (", Duration::from_secs(10))
            .await
    );
    let first = rig.sup.status("fresh").unwrap().pid.unwrap();
    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while count(&rig.log("fresh"), "stdin (") < 2 {
        assert!(
            Instant::now() < deadline,
            "not restarted: {}",
            rig.log("fresh")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let values = made.lock().unwrap().clone();
    assert_eq!(values.len(), 2, "one set of secrets per start: {values:?}");
    assert_ne!(values[0], values[1]);
    let log = rig.log("fresh");
    for v in &values {
        assert!(
            log.contains(&format!("passed {:?}", fingerprint(v.as_bytes()))),
            "each start got its own: {log}"
        );
    }
    rig.sup.stop("fresh").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_child_and_starts_nothing_new() {
    let rig = Rig::new();
    let token = format!("{}8", std::process::id());
    let mut stubborn = spec("b", &format!("stubborn:{token}"));
    stubborn.stop_grace = Duration::from_millis(200);
    rig.sup.start(spec("a", "polite")).unwrap();
    rig.sup.start(stubborn).unwrap();
    assert!(rig.log_has("a", "child up", Duration::from_secs(10)).await);
    assert!(
        rig.log_has("b", "child ready", Duration::from_secs(10))
            .await
    );
    assert_eq!(
        rig.sup.start(spec("a", "polite")).unwrap_err(),
        SupervisorError::AlreadyRunning("a".into())
    );
    rig.sup.shutdown().await;
    let states: Vec<ChildState> = rig.sup.list().iter().map(|s| s.state).collect();
    assert_eq!(states, [ChildState::Stopped, ChildState::Stopped]);
    assert_eq!(processes_with(&format!("1000.{token}")), vec![]);
    for pid in rig.keeper_pids() {
        assert!(!alive(pid as i32), "keeper {pid} survived the shutdown");
    }
    assert_eq!(
        rig.sup.start(spec("c", "polite")).unwrap_err(),
        SupervisorError::ShuttingDown
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_cannot_be_executed_fails_with_a_clear_error() {
    let rig = Rig::new();
    let mut s =
        sayri_daemon::supervisor::ChildSpec::new("missing", "/nonexistent/sayri-model-server");
    s.restart = RestartPolicy {
        initial_delay: Duration::from_millis(20),
        max_crashes: 2,
        ..RestartPolicy::default()
    };
    rig.sup.start(s).unwrap();
    let st = rig
        .wait_state("missing", ChildState::Failed, Duration::from_secs(10))
        .await;
    let err = st.last_error.unwrap_or_default();
    assert!(
        err.contains("cannot execute /nonexistent/sayri-model-server"),
        "{err}"
    );
    let log = rig.log("missing");
    assert!(log.contains("No such file or directory"), "{log}");
    assert!(
        Path::new(&st.log_file).ends_with("logs/missing.log"),
        "{:?}",
        st.log_file
    );
}

#[test]
fn invalid_names_are_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _g = rt.enter();
    let rig = Rig::new();
    for bad in ["", "../x", ".hidden", "a b", &"x".repeat(65)] {
        assert!(
            matches!(
                rig.sup.start(spec(bad, "polite")),
                Err(SupervisorError::BadName(_))
            ),
            "{bad:?}"
        );
    }
}
