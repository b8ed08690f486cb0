//! Token accounting without a resident tokenizer: after a 20-turn chat through the real daemon,
//! no exact tokenizer lives in the daemon (its `status` says so, and `/proc/PID/status` shows
//! the memory it holds), the provider-reported usage of every model call is stored with the
//! session, and the usage reports calibrated the daemon's estimate for the model.

use super::scripted_turns::Model;
use super::support::{Env, proc_status_kib, stderr, stdout};
use sayri_core::domain::tokens::exact::ExactTokenizer;
use sayri_testkit::turns::is_title_request;
use sayri_testkit::{RecordedRequest, Reply, Script, sse, tokens};
use serde_json::Value;
use std::io::Write;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

const ANSWER: &str = "Hi! How can I help?";

#[test]
fn a_twenty_turn_chat_leaves_no_tokenizer_resident_and_records_the_reported_usage() {
    let tokenizer = ExactTokenizer::load().unwrap();
    let reported = Arc::new(Mutex::new(Vec::new()));
    let log = reported.clone();
    let model = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap();
        let title = is_title_request(&body);
        let text = if title { "Greetings" } else { ANSWER };
        let prompt = tokens::prompt_tokens(&tokenizer, &body);
        let completion = tokenizer.count(text);
        if !title {
            log.lock().unwrap().push((prompt, completion));
        }
        Reply::sse(sse::with_usage(
            &sse::content_stream(&[text]),
            prompt,
            completion,
        ))
    }));
    let env = Env::new_in("/var/tmp");
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    let daemon = env.start_daemon();
    let mut chat = env
        .cmd()
        .args(["chat", "--new"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = chat.stdin.take().unwrap();
        for i in 1..=20 {
            writeln!(stdin, "Say hi {i}").unwrap();
        }
    }
    let out = chat.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).matches(ANSWER).count(), 20, "{}", stdout(&out));

    // No exact tokenizer in the daemon; the estimate was calibrated from the reports.
    let status: Value = serde_json::from_str(&stdout(&env.run(&["status", "--json"]))).unwrap();
    assert_eq!(
        status["tokens"]["exact_tokenizer_loaded"], false,
        "{status}"
    );
    let rate = status["tokens"]["bytes_per_token"]["fake-model"].as_f64();
    assert!(rate.is_some_and(|r| r > 1.0), "{status}");
    let pid = daemon.pid();
    eprintln!(
        "daemon after 20 turns: VmRSS {} KiB (RssAnon {} KiB, RssFile {} KiB), VmHWM {} KiB",
        proc_status_kib(pid, "VmRSS:"),
        proc_status_kib(pid, "RssAnon:"),
        proc_status_kib(pid, "RssFile:"),
        proc_status_kib(pid, "VmHWM:")
    );

    // The session keeps what the provider reported for each of its 20 model calls.
    let reported = reported.lock().unwrap().clone();
    assert_eq!(reported.len(), 20);
    let list: Value =
        serde_json::from_str(&stdout(&env.run(&["sessions", "list", "--json"]))).unwrap();
    let sid = list[0]["id"].as_str().unwrap().to_string();
    let session: Value =
        serde_json::from_str(&stdout(&env.run(&["sessions", "show", &sid, "--json"]))).unwrap();
    let prompt: usize = reported.iter().map(|r| r.0).sum();
    let completion: usize = reported.iter().map(|r| r.1).sum();
    assert_eq!(
        session["usage"]["prompt_tokens"], prompt,
        "{}",
        session["usage"]
    );
    assert_eq!(session["usage"]["completion_tokens"], completion);
    assert_eq!(session["usage"]["model_calls"], 20);
    let shown = stdout(&env.run(&["sessions", "show", &sid]));
    assert!(
        shown.contains(&format!(
            "(session total: {prompt} prompt + {completion} completion tokens over 20 model calls"
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "(turn: {} prompt + {} completion tokens over 1 model call,",
            reported[19].0, reported[19].1
        )),
        "{shown}"
    );
}
