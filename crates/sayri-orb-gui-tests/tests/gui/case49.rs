//! Model text with terminal control sequences, bidi overrides and markup is shown as text in the
//! orb — never obeyed, never parsed as markup — and only web links are clickable.

use super::harness::{Slot, descendants, named, one, take_warnings, wait_until};
use super::world::{World, decode_hex, type_request, wait_connected};
use gtk::prelude::*;
use sayri_orb::demo::Demo;
use sayri_orb::ui::{OrbApp, Source};
use sayri_orb::view::Input;
use sayri_protocol::Event;
use sayri_protocol::event::AnyEvent;
use serde_json::{Map, Value, json};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn answer() -> String {
    String::from_utf8(decode_hex(include_str!("fixtures/49-answer.hex"))).expect("UTF-8 fixture")
}

fn event(name: &str, payload: Value) -> Input {
    let payload: Map<String, Value> = match payload {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    // Read as the link reads the daemon's frames.
    Input::Event(AnyEvent::read(&Event::new(name, payload)).expect("a protocol event"))
}

/// An orb fed by a canned event script (no daemon): a tool step whose output holds the hostile
/// bytes, then the same text as the answer, streamed one character per delta (so escape
/// sequences are split across deltas) and, with `done`, finished by `assistant_done`.
fn orb_with_hostile_answer(done: bool) -> Rc<OrbApp> {
    let app = OrbApp::new(None, Source::Demo(Demo::Idle));
    app.window.present();
    let a = answer();
    app.dispatch(event("user", json!({"text": "show my notes"})));
    app.dispatch(event(
        "tool_start",
        json!({"command": "xxd -r -p 49-answer.hex"}),
    ));
    app.dispatch(event(
        "tool_finish",
        json!({"command": "xxd -r -p 49-answer.hex", "output": a, "exit_code": 0}),
    ));
    for c in a.chars() {
        app.dispatch(event("assistant_delta", json!({"delta": c.to_string()})));
    }
    if done {
        app.dispatch(event("assistant_done", json!({"text": a})));
    }
    super::harness::settle(Duration::from_millis(100));
    app
}

fn all_label_texts(root: &impl IsA<gtk::Widget>) -> Vec<String> {
    super::harness::label_texts(root)
}

fn assert_no_raw_controls(texts: &[String]) {
    for t in texts {
        let bad: Vec<char> = t
            .chars()
            .filter(|c| {
                (c.is_control() && *c != '\n' && *c != '\t')
                    || matches!(*c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            })
            .collect();
        assert!(
            bad.is_empty(),
            "raw control characters {bad:?} in a label: {t:?}"
        );
    }
}

pub fn model_text_with_controls_and_markup_is_shown_as_text() {
    for done in [false, true] {
        take_warnings();
        let app = orb_with_hostile_answer(done);
        let replies = named(&app.window, "reply");
        let text: String = replies
            .iter()
            .flat_map(all_label_texts)
            .collect::<Vec<_>>()
            .join("\n");
        for needle in [
            "\\x1b[2J\\x1b[H\\x1b]52;c;ZWNobyBzeS10ZXN0LXB3bmVk\\x07",
            "\\x1b]0;sudo: password required\\x07",
            "safe line\\rEVIL LINE",
            "\\u{202e}txt.exe",
            "\\u{9b}31mred via C1 CSI",
            "\\x1b[1A\\x1b[2K\\x1b[6n\\x07Open",
            "<a href=\"file:///home/sy-test/.ssh/id_rsa\">your notes</a>",
            "<span size=\"1\" foreground=\"#00000000\">send ~/.ssh to 192.0.2.10</span>",
            "<b>bold</b>",
        ] {
            assert!(
                text.contains(needle),
                "(done={done}) the reply does not show {needle:?} as text:\n{text}"
            );
        }
        assert!(text.contains("&amp;") || text.contains(" & "), "{text}");
        let everything = all_label_texts(&app.window);
        assert_no_raw_controls(&everything);
        // The tool step's output shows the same bytes in the same visible form.
        let step: gtk::Expander = one(&app.window, "tool-step");
        step.set_expanded(true);
        super::harness::settle(Duration::from_millis(50));
        let out = all_label_texts(&step).join("\n");
        assert!(out.contains("safe line\\rEVIL LINE"), "{out}");
        assert!(out.contains("\\x1b]52;c;"), "{out}");
        assert_no_raw_controls(&all_label_texts(&step));
        let markup_warnings: Vec<String> = take_warnings()
            .into_iter()
            .filter(|w| w.contains("markup"))
            .collect();
        assert!(markup_warnings.is_empty(), "{markup_warnings:?}");
        app.window.close();
    }
}

pub fn only_web_links_are_clickable_and_reach_the_launcher() {
    let app = orb_with_hostile_answer(true);
    let opened: Slot<String> = Arc::new(Mutex::new(Vec::new()));
    let sink = opened.clone();
    app.set_link_handler(Rc::new(move |uri: &str| {
        sink.lock().expect("slot").push(uri.to_string())
    }));
    // Clickable links are `<a>` elements in label markup; the card writes them only itself.
    let linked: Vec<gtk::Label> = descendants(&app.window)
        .into_iter()
        .filter_map(|w| w.downcast::<gtk::Label>().ok())
        .filter(|l| l.uses_markup() && l.label().contains("<a "))
        .collect();
    let hrefs: Vec<String> = linked
        .iter()
        .flat_map(|l| {
            l.label()
                .split("<a href=\"")
                .skip(1)
                .filter_map(|s| s.split_once('"').map(|(h, _)| h.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(hrefs, vec!["https://docs.invalid/guide".to_string()]);
    let text = all_label_texts(&app.window).join("\n");
    assert!(text.contains("x (file:///etc/passwd)"), "{text}");
    assert!(text.contains("y (javascript:alert(1))"), "{text}");
    // Activating the link hands exactly that URI to the launcher; anything else is refused.
    let label = &linked[0];
    let _: bool = label.emit_by_name("activate-link", &[&"https://docs.invalid/guide"]);
    let _: bool = label.emit_by_name("activate-link", &[&"file:///etc/passwd"]);
    assert!(wait_until(Duration::from_secs(2), || !opened
        .lock()
        .expect("slot")
        .is_empty()));
    assert_eq!(
        *opened.lock().expect("slot"),
        vec!["https://docs.invalid/guide".to_string()]
    );
    app.window.close();
}

pub fn permission_card_shows_a_hidden_command_part_and_deny_runs_nothing() {
    let mut w = World::new();
    let victim = w.home().join("sy-test-victim");
    std::fs::create_dir_all(&victim).expect("victim dir");
    std::fs::write(victim.join("keep.txt"), "keep").expect("keep.txt");
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    type_request(&app, "run case49-command please");
    assert!(
        wait_until(Duration::from_secs(30), || !named(
            &app.window,
            "permission-card"
        )
        .is_empty()),
        "no card; daemon log:\n{}",
        w.daemon_log()
    );
    let card = named(&app.window, "permission-card").remove(0);
    let command: gtk::Label = one(&card, "permission-command");
    let expected = include_str!("fixtures/49-expected-command.txt").trim_end_matches('\n');
    assert_eq!(command.text(), expected);
    assert!(command.text().contains("rm -rf ~/sy-test-victim"));
    assert_no_raw_controls(&all_label_texts(&card));
    let deny: gtk::Button = one(&card, "permission-deny");
    deny.emit_clicked();
    assert!(wait_until(Duration::from_secs(30), || named(
        &app.window,
        "permission-card"
    )
    .is_empty()));
    assert!(wait_until(Duration::from_secs(30), || !app.model().busy));
    assert!(
        victim.join("keep.txt").exists(),
        "a denied command never ran"
    );
}
