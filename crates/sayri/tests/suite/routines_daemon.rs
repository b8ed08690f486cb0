//! Routines on the real daemon: a real SQLite file, the scripted model server on loopback, and
//! the scheduler's test clock (`SAYRI_TEST_CLOCK`), which a test steps through simulated days;
//! each step is answered once the scheduler has handled it, so "nothing started" is a fact and
//! not a timing guess.

use super::scripted_turns::*;
use super::support::*;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// The text every routine prompt of these tests carries; the model answers it with
/// [`ROUTINE_ANSWER`].
const ROUTINE_MARK: &str = "ROUTINE-PROMPT";
const ROUTINE_ANSWER: &str = "Routine answer: all quiet.";
/// A word said only in the main conversation: a routine's request must never contain it.
const MAIN_MARK: &str = "MAIN-CONVERSATION-SECRET-WORD";

/// A daemon on a test clock with a scripted model.
struct Rig {
    // Dropped first: the daemon stops before the directories go.
    daemon: Option<Daemon>,
    env: Env,
    model: Model,
    clock: PathBuf,
    zone: String,
}

/// Whether `req` is a routine run's chat request (not a title request).
fn is_routine_request(req: &Value) -> bool {
    req.get("max_tokens") != Some(&json!(15)) && req.to_string().contains(ROUTINE_MARK)
}

/// A routine prompt whose run proposes a command its agent's rules make `ask`.
const TOUCH_MARK: &str = "TOUCH-MARK";

impl Rig {
    /// A rig whose model answers routine prompts after `delay`, other requests at once; a
    /// prompt with [`TOUCH_MARK`] first gets a command that touches `$HOME/touched`.
    fn new(zone: &str, delay: Duration) -> Rig {
        let script = Script::from_fn(move |req: &RecordedRequest| {
            let body = req.json().unwrap_or_default();
            if body.get("max_tokens") == Some(&json!(15)) {
                return Reply::sse(sse::content_stream(&["Title"]));
            }
            let first_call = body["messages"].as_array().is_some_and(|m| m.len() <= 2);
            if body.to_string().contains(TOUCH_MARK) && first_call {
                return Reply::sse(sse::content_stream(&[
                    "```bash\ntouch \"$HOME/touched\"\n```\n",
                ]));
            }
            if body.to_string().contains(ROUTINE_MARK) {
                return Reply::sse(sse::content_stream(&[ROUTINE_ANSWER])).with_head_delay(delay);
            }
            Reply::sse(sse::content_stream(&["Main answer."]))
        });
        Rig::scripted(Env::new(), zone, script)
    }

    /// A rig in `env` whose model answers by `script`.
    fn scripted(env: Env, zone: &str, script: Script) -> Rig {
        let model = Model::scripted(script);
        write_config(&env, &model, 30, "default");
        let clock = env.dir.path().join("clock.sock");
        Rig {
            env,
            model,
            clock,
            zone: zone.to_string(),
            daemon: None,
        }
    }

    /// Starts the daemon with its clock at `start` (RFC 3339).
    fn start(&mut self, start: &str) {
        let clock = self.clock.to_string_lossy().into_owned();
        self.daemon = Some(self.env.start_daemon_with(
            "info",
            &[
                ("SAYRI_TEST_CLOCK", &clock),
                ("SAYRI_TEST_CLOCK_START", start),
                ("SAYRI_TEST_ZONE", &self.zone),
            ],
        ));
    }

    /// Stops the daemon (`quit`) and waits for it.
    fn stop(&mut self) {
        let mut c = self.client();
        c.call("quit", json!({}), 1);
        if let Some(mut d) = self.daemon.take() {
            assert!(
                d.terminate(Duration::from_secs(10)).is_some(),
                "the daemon did not stop"
            );
        }
    }

    /// Sends one line to the test clock and returns its answer (after the scheduler handled it).
    fn clock(&self, line: &str) -> String {
        let s = UnixStream::connect(&self.clock).expect("the test clock listens");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut w = s.try_clone().unwrap();
        writeln!(w, "{line}").unwrap();
        let mut answer = String::new();
        BufReader::new(s).read_line(&mut answer).unwrap();
        assert!(answer.starts_with("ok"), "{line}: {answer}");
        answer.trim().to_string()
    }

    fn set_time(&self, at: &str) {
        self.clock(&format!("set {at}"));
    }

    fn client(&self) -> RawClient {
        let c = RawClient::connect(&self.env.socket());
        c.writer
            .set_read_timeout(Some(Duration::from_secs(30)))
            .ok();
        c
    }

    /// A successful call's result.
    fn call(&self, cmd: &str, params: Value) -> Value {
        let r = self.client().call(cmd, params, 7);
        assert_eq!(r["ok"], true, "{cmd}: {r}");
        r["result"].clone()
    }

    /// `sayri ARGS` (stdout; fails the test on a non-zero exit).
    fn cli(&self, args: &[&str]) -> String {
        let o = self.env.run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
    }

    /// The routine chat requests the model has received.
    fn routine_requests(&self) -> Vec<Value> {
        self.model
            .llm
            .chat_bodies()
            .into_iter()
            .filter(is_routine_request)
            .collect()
    }

    /// Every chat request the model received (title requests included).
    fn all_requests(&self) -> usize {
        self.model.llm.chat_bodies().len()
    }

    fn routine(&self, id: &str) -> Value {
        let list = self.call("routines_list", json!({}));
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("routine {id} is not listed: {list}"))
    }

    /// Waits until routine `id` has no run in progress.
    fn wait_idle(&self, id: &str) {
        assert!(
            eventually(Duration::from_secs(30), || self.routine(id)["running"]
                == false),
            "routine {id} still running: {}",
            self.log()
        );
    }

    /// `sayri routines next ID --count N [--now T] --json`.
    fn next(&self, id: &str, count: u32, now: Option<&str>) -> Vec<String> {
        let count = count.to_string();
        let mut args = vec!["routines", "next", id, "--count", &count, "--json"];
        if let Some(n) = now {
            args.extend(["--now", n]);
        }
        serde_json::from_str(&self.cli(&args)).unwrap()
    }

    fn log(&self) -> String {
        self.daemon
            .as_ref()
            .map(Daemon::log_text)
            .unwrap_or_default()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if self.daemon.is_some() && !std::thread::panicking() {
            self.stop();
        }
    }
}

/// Epoch seconds of an RFC 3339 instant.
fn epoch(t: &str) -> f64 {
    chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp() as f64
}

/// A `daily_at` routine fires once at its slot, in the zone `sayri routines next` named; its
/// prompt reaches the model in a fresh context (nothing of the main conversation), its answer
/// is stored in its own session; the minutes after the slot and a daemon restart right after
/// the run fire nothing; the next day's slot fires again exactly where `next` said.
#[test]
fn a_routine_fires_once_at_its_slot_in_a_fresh_context_and_keeps_its_result() {
    let mut rig = Rig::new("Asia/Kolkata", Duration::ZERO);
    rig.start("2026-03-28T00:00:00Z");
    let r = rig.call(
        "ask",
        json!({"text": format!("Remember {MAIN_MARK}"), "timeout": 20}),
    );
    assert!(r.to_string().contains("Main answer"), "{r}");
    let id = rig
        .cli(&[
            "routines",
            "add",
            "--name",
            "Morning",
            "--prompt",
            &format!("{ROUTINE_MARK}: summarise the night"),
            "--daily-at",
            "09:00",
        ])
        .trim()
        .to_string();
    let next = rig.next(&id, 3, None);
    // 09:00 in the system zone (India, +05:30) on the creation day.
    assert_eq!(
        next,
        [
            "2026-03-28T09:00:00+05:30",
            "2026-03-29T09:00:00+05:30",
            "2026-03-30T09:00:00+05:30"
        ]
    );
    rig.set_time("2026-03-28T03:29:00Z");
    assert_eq!(
        rig.routine_requests().len(),
        0,
        "nothing is due before the slot"
    );

    let mut events = rig.client();
    rig.set_time(&next[0]);
    let started = wait_event(&mut events, "routine_started", Duration::from_secs(20))
        .unwrap_or_else(|| panic!("no routine_started: {}", rig.log()));
    assert_eq!(started["reason"], "schedule", "{started}");
    let finished = wait_event(&mut events, "routine_finished", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("no routine_finished: {}", rig.log()));
    assert_eq!(finished["status"], "ok", "{finished}");
    let reqs = rig.routine_requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert!(
        !reqs[0].to_string().contains(MAIN_MARK),
        "the routine saw the main conversation: {}",
        reqs[0]
    );
    let routine = rig.routine(&id);
    assert_eq!(routine["last_run"], json!(epoch(&next[0])), "{routine}");
    assert_eq!(routine["last_outcome"]["status"], "ok", "{routine}");
    let session = rig.call(
        "session_get",
        json!({"session_id": format!("routine-{id}")}),
    );
    assert!(
        session.to_string().contains(ROUTINE_ANSWER) && session.to_string().contains(ROUTINE_MARK),
        "{session}"
    );
    assert!(!session.to_string().contains(MAIN_MARK), "{session}");

    // Later that morning, and after a restart right after the run: nothing more.
    rig.set_time("2026-03-28T03:45:00Z");
    rig.stop();
    rig.start("2026-03-28T03:46:00Z");
    rig.set_time("2026-03-28T20:00:00Z");
    assert_eq!(rig.routine_requests().len(), 1, "{}", rig.log());
    assert_eq!(rig.next(&id, 1, None), [next[1].clone()]);

    rig.set_time(&next[1]);
    rig.wait_idle(&id);
    let reqs = rig.routine_requests();
    assert_eq!(reqs.len(), 2, "{}", rig.log());
    // Fresh each time: not even the routine's own earlier run is in the context.
    assert!(!reqs[1].to_string().contains(ROUTINE_ANSWER), "{}", reqs[1]);
    assert_eq!(rig.routine(&id)["last_run"], json!(epoch(&next[1])));
}

/// A run longer than the interval: the slot that comes while it runs starts nothing, a manual
/// run meanwhile is refused `busy`, and the missed slot is caught up once when the run ends;
/// never two runs at once.
#[test]
fn a_slow_run_never_overlaps_the_next_slot() {
    let mut rig = Rig::new("UTC", Duration::from_secs(4));
    rig.start("2026-06-01T10:00:00Z");
    let saved = rig.call(
        "routine_save",
        json!({"name": "Slow", "prompt": format!("{ROUTINE_MARK} slow"), "trigger": "hourly",
               "time_spec": 1}),
    );
    let id = saved["id"].as_str().unwrap().to_string();
    // An hourly routine that never ran starts at once.
    assert!(
        eventually(Duration::from_secs(10), || rig.routine_requests().len()
            == 1),
        "{}",
        rig.log()
    );
    assert_eq!(rig.routine(&id)["running"], true);
    rig.set_time("2026-06-01T11:00:30Z");
    let r = rig
        .client()
        .call("routines_run", json!({"routine_id": id}), 3);
    assert_eq!(r["code"], "busy", "{r}");
    assert_eq!(
        rig.routine_requests().len(),
        1,
        "a second run started while one ran"
    );
    rig.wait_idle(&id);
    // The overlapped 11:00 slot runs once after the slow run, and only once.
    assert!(
        eventually(Duration::from_secs(10), || rig.routine_requests().len()
            == 2),
        "{}",
        rig.log()
    );
    rig.wait_idle(&id);
    rig.set_time("2026-06-01T11:10:00Z");
    assert_eq!(rig.routine_requests().len(), 2, "{}", rig.log());
    assert!(
        rig.log().contains("does not start a second run"),
        "{}",
        rig.log()
    );
}

/// After downtime: a slot missed while the daemon was stopped runs once at the next start when
/// it is within the grace period (reason `catch_up`), and a `skip` routine's missed slot does
/// not run; a routine enabled after its slot passed does not catch it up.
#[test]
fn missed_slots_follow_the_catch_up_policy_after_downtime() {
    let mut rig = Rig::new("Europe/Berlin", Duration::ZERO);
    rig.start("2026-10-24T12:00:00Z");
    let once = rig.call(
        "routine_save",
        json!({"name": "Once", "prompt": format!("{ROUTINE_MARK} once"), "trigger": "daily_at",
               "time_spec": "18:00", "grace_minutes": 120}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let skip = rig.call(
        "routine_save",
        json!({"name": "Skip", "prompt": format!("{ROUTINE_MARK} skip"), "trigger": "daily_at",
               "time_spec": "18:00", "catch_up": "skip"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let off = rig.call(
        "routine_save",
        json!({"name": "Off", "prompt": format!("{ROUTINE_MARK} off"), "trigger": "daily_at",
               "time_spec": "18:00", "enabled": false}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    rig.stop();
    // 18:00 Berlin (16:00Z) passes while the daemon is down; it comes back at 17:30Z.
    rig.start("2026-10-24T17:30:00Z");
    rig.wait_idle(&once);
    assert!(
        eventually(Duration::from_secs(15), || rig.routine_requests().len()
            == 1),
        "{:?} {}",
        rig.call("routines_list", json!({})),
        rig.log()
    );
    let reqs = rig.routine_requests();
    assert!(reqs[0].to_string().contains("once"), "{reqs:?}");
    assert_eq!(rig.routine(&skip)["last_outcome"], Value::Null);
    rig.call(
        "routine_set_enabled",
        json!({"routine_id": off, "enabled": true}),
    );
    rig.set_time("2026-10-24T18:00:00Z");
    assert_eq!(rig.routine_requests().len(), 1, "{}", rig.log());
    assert!(
        rig.log().contains("not run (catch-up policy"),
        "{}",
        rig.log()
    );
    // The next evening all three run once each (Berlin is on winter time by then: 17:00Z).
    assert_eq!(rig.next(&off, 1, None), ["2026-10-25T18:00:00+01:00"]);
    rig.set_time("2026-10-25T17:00:00Z");
    assert!(
        eventually(Duration::from_secs(20), || rig.routine_requests().len()
            == 4),
        "{}",
        rig.log()
    );
    for id in [&once, &skip, &off] {
        rig.wait_idle(id);
        assert_eq!(
            rig.routine(id)["last_run"],
            json!(epoch("2026-10-25T18:00:00+01:00"))
        );
    }
}

/// A routine without a zone follows the system zone as it is when the next fire is computed:
/// after the zone changes (and after a restart right after the change) its next run is 09:00 in
/// the new zone, where it fires, while a routine with its own zone keeps it.
#[test]
fn a_system_zone_change_moves_the_next_fire_to_the_new_local_time() {
    let mut rig = Rig::new("Europe/Berlin", Duration::ZERO);
    rig.start("2026-09-01T10:00:00Z");
    let add = |zone: &[&str]| {
        let mut args = vec![
            "routines",
            "add",
            "--name",
            "Nine",
            "--prompt",
            ROUTINE_MARK,
            "--daily-at",
            "09:00",
        ];
        args.extend(zone);
        rig.cli(&args).trim().to_string()
    };
    let follows = add(&[]);
    let own = add(&["--zone", "Europe/Berlin"]);
    // Both ran at 09:00 Berlin on the 9th.
    rig.set_time("2026-09-09T07:00:00Z");
    rig.wait_idle(&follows);
    rig.wait_idle(&own);
    assert_eq!(rig.routine_requests().len(), 2, "{}", rig.log());

    rig.set_time("2026-09-10T05:00:00Z");
    rig.clock("zone America/New_York");
    // A restart right after the change fires nothing at start.
    rig.stop();
    rig.zone = "America/New_York".into();
    rig.start("2026-09-10T05:01:00Z");
    rig.set_time("2026-09-10T05:02:00Z");
    assert_eq!(rig.routine_requests().len(), 2, "{}", rig.log());
    let next = rig.next(&follows, 3, None);
    assert_eq!(
        next,
        [
            "2026-09-10T09:00:00-04:00",
            "2026-09-11T09:00:00-04:00",
            "2026-09-12T09:00:00-04:00"
        ]
    );
    assert_eq!(rig.next(&own, 1, None), ["2026-09-10T09:00:00+02:00"]);
    // 09:00 Berlin: only the routine with its own zone.
    rig.set_time("2026-09-10T07:00:00Z");
    rig.wait_idle(&own);
    assert_eq!(rig.routine_requests().len(), 3, "{}", rig.log());
    assert_eq!(
        rig.routine(&own)["last_run"],
        json!(epoch("2026-09-10T07:00:00Z"))
    );
    // 09:00 New York: the one following the system zone, once.
    rig.set_time(&next[0]);
    rig.wait_idle(&follows);
    rig.set_time("2026-09-10T23:00:00Z");
    assert_eq!(rig.routine_requests().len(), 4, "{}", rig.log());
    assert_eq!(rig.routine(&follows)["last_run"], json!(epoch(&next[0])));
}

/// Five routines with nothing due that day (a yearly cron, a disabled daily one, an `on_login`
/// one, a weekly cron on another weekday, a daily one at 23:59): stepping the clock through
/// the simulated day, 15 minutes at a time, makes no model request at all.
#[test]
fn an_idle_daemon_with_five_routines_not_due_makes_no_model_request_over_a_day() {
    let mut rig = Rig::new("UTC", Duration::ZERO);
    // Monday 2026-06-01 00:00Z.
    rig.start("2026-06-01T00:00:00Z");
    let add = |fields: Value| {
        let mut p = json!({"prompt": format!("{ROUTINE_MARK} idle")});
        p.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        rig.call("routine_save", p)["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let ids = [
        add(json!({"name": "Yearly", "trigger": "cron", "time_spec": "0 9 1 1 *"})),
        add(json!({"name": "Off", "trigger": "daily_at", "time_spec": "12:00", "enabled": false})),
        add(json!({"name": "Login", "trigger": "on_login"})),
        add(json!({"name": "Sunday", "trigger": "cron", "time_spec": "0 8 * * sun"})),
        add(json!({"name": "Late", "trigger": "daily_at", "time_spec": "23:59"})),
    ];
    assert_eq!(rig.next(&ids[4], 1, None), ["2026-06-01T23:59:00+00:00"]);
    let before = rig.all_requests();
    let day = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z").unwrap();
    for step in 1..=95 {
        rig.set_time(&(day + chrono::TimeDelta::minutes(15 * step)).to_rfc3339());
    }
    assert_eq!(rig.all_requests(), before, "{}", rig.log());
    for id in &ids {
        assert_eq!(rig.routine(id)["last_outcome"], Value::Null);
    }
    // The scheduler was not asleep: the 23:59 one fires at its minute.
    rig.set_time("2026-06-01T23:59:00Z");
    rig.wait_idle(&ids[4]);
    assert_eq!(rig.routine_requests().len(), 1, "{}", rig.log());
}

/// An `on_file_changed` trigger fires on a real file write under its path that matches its
/// glob, runs its prompt as a routine run in its own session, and a non-matching write fires
/// nothing; an invalid trigger file is listed with its error.
#[test]
fn a_file_change_trigger_fires_on_a_real_file_write() {
    let mut rig = Rig::new("UTC", Duration::ZERO);
    let watched = rig.env.dir.path().join("notes");
    std::fs::create_dir_all(&watched).unwrap();
    let triggers = rig.env.config_dir().join("triggers");
    std::fs::create_dir_all(&triggers).unwrap();
    std::fs::write(
        triggers.join("notes.json"),
        json!({"id": "notes", "event_type": "on_file_changed", "name": "Notes",
               "prompt": format!("{ROUTINE_MARK} notes changed"), "path": watched,
               "glob": "*.md", "debounce_ms": 200, "notify_desktop": false})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        triggers.join("broken.json"),
        json!({"id": "broken", "event_type": "on_file_changed", "prompt": "x",
               "cron_exp": "* * * * *"})
        .to_string(),
    )
    .unwrap();
    rig.start("2026-06-01T00:00:00Z");
    let listed = rig.cli(&["routines", "list"]);
    assert!(
        listed.contains("trigger broken  INVALID") && listed.contains("trigger notes"),
        "{listed}"
    );
    std::fs::write(watched.join("ignored.txt"), "not a note").unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(rig.routine_requests().len(), 0, "{}", rig.log());

    let mut events = rig.client();
    std::fs::write(watched.join("today.md"), "# a note").unwrap();
    let finished = wait_event(&mut events, "routine_finished", Duration::from_secs(20))
        .unwrap_or_else(|| panic!("the trigger did not fire: {}", rig.log()));
    assert_eq!(finished["kind"], "trigger", "{finished}");
    assert_eq!(finished["id"], "notes", "{finished}");
    assert_eq!(finished["status"], "ok", "{finished}");
    assert_eq!(rig.routine_requests().len(), 1);
    let session = rig.call("session_get", json!({"session_id": "trigger-notes"}));
    assert!(session.to_string().contains(ROUTINE_ANSWER), "{session}");
}

/// An `on_login` routine runs at the first daemon start of a login session, and not again when
/// the daemon restarts within the same session.
#[test]
fn an_on_login_routine_runs_once_per_login_session() {
    let mut rig = Rig::new("UTC", Duration::ZERO);
    rig.start("2026-06-01T08:00:00Z");
    let id = rig
        .cli(&[
            "routines",
            "add",
            "--name",
            "Hello",
            "--prompt",
            ROUTINE_MARK,
            "--on-login",
        ])
        .trim()
        .to_string();
    assert_eq!(rig.next(&id, 3, None), Vec::<String>::new());
    // This daemon already started in this session: the new routine waits for the next login.
    rig.stop();
    rig.start("2026-06-01T08:05:00Z");
    rig.set_time("2026-06-01T08:06:00Z");
    assert_eq!(rig.routine_requests().len(), 0, "{}", rig.log());
    rig.stop();
    // A new login session (another XDG_SESSION_ID): it runs once at start.
    let clock = rig.clock.to_string_lossy().into_owned();
    rig.daemon = Some(rig.env.start_daemon_with(
        "info",
        &[
            ("SAYRI_TEST_CLOCK", &clock),
            ("SAYRI_TEST_CLOCK_START", "2026-06-02T08:00:00Z"),
            ("SAYRI_TEST_ZONE", "UTC"),
            ("XDG_SESSION_ID", "test-login-2"),
        ],
    ));
    assert!(
        eventually(Duration::from_secs(15), || rig.routine_requests().len()
            == 1),
        "{}",
        rig.log()
    );
    rig.wait_idle(&id);
}

/// A notification service on a private session bus that records what it is asked to show.
struct FakeNotifications {
    shown: std::sync::Arc<std::sync::Mutex<Vec<(String, String, String)>>>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl FakeNotifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        app_name: &str,
        _replaces_id: u32,
        _app_icon: &str,
        summary: &str,
        body: &str,
        _actions: Vec<&str>,
        _hints: std::collections::HashMap<&str, zbus::zvariant::OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut shown = self.shown.lock().unwrap();
        shown.push((app_name.into(), summary.into(), body.into()));
        u32::try_from(shown.len()).unwrap()
    }
}

/// A private `dbus-daemon`, stopped when dropped.
struct SessionBus {
    child: std::process::Child,
    address: String,
}

impl SessionBus {
    fn start() -> SessionBus {
        let mut child = std::process::Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("dbus-daemon (Debian: dbus-daemon) is needed");
        let mut address = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        SessionBus {
            child,
            address: address.trim().to_string(),
        }
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A routine's result is shown through `org.freedesktop.Notifications` on the session bus: the
/// title names the routine, the body carries the answer; a routine with notifications off
/// shows nothing.
#[test]
fn a_finished_run_is_shown_as_a_desktop_notification() {
    let bus = SessionBus::start();
    let shown = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let _service = zbus::blocking::connection::Builder::address(bus.address.as_str())
        .unwrap()
        .name("org.freedesktop.Notifications")
        .unwrap()
        .serve_at(
            "/org/freedesktop/Notifications",
            FakeNotifications {
                shown: shown.clone(),
            },
        )
        .unwrap()
        .build()
        .unwrap();
    let mut rig = Rig::new("UTC", Duration::ZERO);
    let clock = rig.clock.to_string_lossy().into_owned();
    rig.daemon = Some(rig.env.start_daemon_with(
        "info",
        &[
            ("SAYRI_TEST_CLOCK", &clock),
            ("SAYRI_TEST_CLOCK_START", "2026-06-01T08:00:00Z"),
            ("DBUS_SESSION_BUS_ADDRESS", &bus.address),
        ],
    ));
    let loud = rig
        .cli(&[
            "routines",
            "add",
            "--name",
            "Loud",
            "--prompt",
            ROUTINE_MARK,
            "--cron",
            "0 9 1 1 *",
        ])
        .trim()
        .to_string();
    let quiet = rig
        .cli(&[
            "routines",
            "add",
            "--name",
            "Quiet",
            "--prompt",
            ROUTINE_MARK,
            "--cron",
            "0 9 1 1 *",
            "--notify",
            "no",
        ])
        .trim()
        .to_string();
    rig.cli(&["routines", "run", &quiet]);
    rig.wait_idle(&quiet);
    rig.cli(&["routines", "run", &loud]);
    rig.wait_idle(&loud);
    assert_eq!(rig.routine_requests().len(), 2, "{}", rig.log());
    let shown = shown.lock().unwrap().clone();
    assert_eq!(
        shown,
        [(
            "Sayri".to_string(),
            "✨ Loud".to_string(),
            ROUTINE_ANSWER.to_string()
        )],
        "{}",
        rig.log()
    );
}

/// A routine runs with no one to approve: a command its agent's rules would ask about is not
/// run, and the run is reported `refused`, naming the command.
#[test]
fn a_command_that_would_ask_is_refused_in_a_routine_and_reported() {
    let mut rig = Rig::new("UTC", Duration::ZERO);
    setup(&rig.env, &rig.model, true, 30);
    rig.start("2026-06-01T08:00:00Z");
    let id = rig.call(
        "routine_save",
        json!({"name": "Toucher", "prompt": format!("{ROUTINE_MARK} {TOUCH_MARK}"),
               "trigger": "cron", "time_spec": "0 9 1 1 *", "agent_id": "hostile"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut events = rig.client();
    rig.cli(&["routines", "run", &id]);
    let finished = wait_event(&mut events, "routine_finished", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("no routine_finished: {}", rig.log()));
    assert_eq!(finished["status"], "refused", "{finished}");
    assert!(
        finished["summary"].as_str().unwrap().contains("touch"),
        "{finished}"
    );
    assert!(
        !rig.env.dir.path().join("touched").exists(),
        "the command ran"
    );
    assert_eq!(rig.routine(&id)["last_outcome"]["status"], "refused");
}

/// A routine of a sub-agent runs as its creator is *now*: each tightening of the creator by the
/// person (`sayri agents edit`) — a lower level, a deny rule, its ask switch — reaches the
/// sub-agent's next scheduled run, whose own file asks for root, allows everything and never
/// asks. Real commands in the real sandbox: the probe's pid namespace, working directory and a
/// file written outside any workspace show the level each run got.
#[test]
fn a_sub_agents_routine_runs_under_its_creators_current_level_rules_and_ask_switch() {
    use super::permission_rig::{content, last_message, reply_for};
    use super::sub_agent_rig::*;
    let mut rig = Rig::scripted(Env::new_in("/var/tmp"), "UTC", Script::from_fn(reply_for));
    write_lead_and_scout(&rig.env);
    let scout_as_written = scout_file(&rig.env);
    let marker = rig.env.dir.path().join("written-on-the-host");
    rig.start("2026-06-01T08:00:00Z");
    let id = rig.call(
        "routine_save",
        json!({"name": "Scout probe", "prompt": format!("{ROUTINE_MARK} <cmd>{}</cmd>", probe(&marker)),
               "trigger": "cron", "time_spec": "0 9 * * *", "agent_id": "scout"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Fires the run of `day` (June) at 09:00; returns its `routine_finished` event, the system
    // prompt it ran with and the observation of its command.
    let run_day = |rig: &Rig, day: u32| -> (Value, String, String) {
        let before = rig.routine_requests().len();
        let mut events = rig.client();
        rig.set_time(&format!("2026-06-{day:02}T09:00:00Z"));
        let finished = wait_event(&mut events, "routine_finished", Duration::from_secs(30))
            .unwrap_or_else(|| panic!("no routine_finished on day {day}: {}", rig.log()));
        let reqs = rig.routine_requests().split_off(before);
        assert_eq!(reqs.len(), 2, "a command, then the answer: {reqs:?}");
        let system = content(&reqs[0]["messages"][0]);
        let observation = last_message(&reqs[1]);
        assert!(observation.starts_with("[Command"), "{observation}");
        (finished, system, observation)
    };

    // Day 1 — the creator at level 3: the run is on the host (not root's level 4), and the
    // creator's `touch` ask is settled without a card since its ask switch is off.
    assert_eq!(scout_level(&rig.env), "LEVEL_3_HOST_USER");
    let (finished, system, obs) = run_day(&rig, 1);
    assert_eq!(finished["status"], "ok", "{finished}");
    assert!(
        system.contains("Start GUI apps"),
        "a level-3 prompt: {system}"
    );
    assert!(!own_pid_namespace(&obs), "{obs}");
    assert!(
        marker.exists(),
        "the level-3 probe writes on the host: {obs}"
    );
    std::fs::remove_file(&marker).unwrap();

    // Day 2 — the creator lowered to level 2: the sub-agent's run is sandboxed in its workspace
    // and cannot write on the host.
    edit_lead(&rig.env, &["--level", "2"]);
    assert_eq!(scout_level(&rig.env), "LEVEL_2_ISOLATED_DEV");
    let (finished, system, obs) = run_day(&rig, 2);
    assert_eq!(finished["status"], "ok", "{finished}");
    assert!(system.contains("Commands run in a sandbox"), "{system}");
    assert!(own_pid_namespace(&obs), "{obs}");
    assert!(obs.contains(&scout_workspace(&rig.env)), "{obs}");
    assert!(obs.contains("touch:") && !marker.exists(), "{obs}");

    // Day 3 — the creator denies `touch`: the command is refused before it runs, naming the
    // creator's rule, although the sub-agent's own rules allow it.
    edit_lead(
        &rig.env,
        &["--rule", "shell:*:allow", "--rule", "shell:touch *:deny"],
    );
    let (finished, _, obs) = run_day(&rig, 3);
    assert_eq!(finished["status"], "refused", "{finished}");
    // The summary says why: the creator's deny, not a fix that cannot work.
    let summary = finished["summary"].as_str().unwrap();
    assert!(
        summary.contains("matches creator lead rule #1: touch * (deny)"),
        "{summary}"
    );
    assert!(obs.contains("creator lead rule #1"), "{obs}");
    assert!(!marker.exists());

    // Day 4 — back on the host with `touch` an ask, but the creator's ask switch on: a routine
    // has no one to approve, so the command is refused, though the sub-agent never asks.
    edit_lead(
        &rig.env,
        &[
            "--level",
            "3",
            "--rule",
            "shell:*:allow",
            "--rule",
            "shell:touch *:ask",
            "--ask-before-run",
            "yes",
        ],
    );
    assert_eq!(scout_level(&rig.env), "LEVEL_3_HOST_USER");
    let (finished, _, obs) = run_day(&rig, 4);
    assert_eq!(finished["status"], "refused", "{finished}");
    let summary = finished["summary"].as_str().unwrap();
    assert!(
        summary.contains("touch * (ask)") && summary.contains("nobody can answer"),
        "{summary}"
    );
    assert!(obs.contains("creator lead rule #1"), "{obs}");
    assert!(!marker.exists(), "the command ran without approval: {obs}");

    // Nothing escalated: the sub-agent's file is as it was.
    assert_eq!(scout_file(&rig.env), scout_as_written);
    assert_eq!(rig.routine(&id)["last_outcome"]["status"], "refused");
}
