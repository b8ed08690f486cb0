//! The orb against a real daemon and the scripted model: everything asserted through the widget
//! tree of the real window.

use super::harness::{descendants, named, one, shows, wait_until};
use super::world::{self, ANSWER_END, World, type_request, wait_connected};
use gtk::prelude::*;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

/// Text of every `reply` box's labels, joined.
pub fn reply_text(app: &sayri_orb::ui::OrbApp) -> String {
    named(&app.window, "reply")
        .iter()
        .flat_map(super::harness::label_texts)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The open card's request id (from the view model, as the CLI user would read it from
/// `sayri ask` or `permission_list`).
fn open_card_id(app: &sayri_orb::ui::OrbApp) -> String {
    app.model().permissions[0].id.clone()
}

pub fn wait_for_card(app: &sayri_orb::ui::OrbApp, w: &World) -> gtk::Widget {
    let ok = wait_until(LONG, || !named(&app.window, "permission-card").is_empty());
    assert!(
        ok,
        "no permission card appeared; the card shows {:?}; daemon log:\n{}",
        reply_text(app),
        w.daemon_log()
    );
    named(&app.window, "permission-card").remove(0)
}

pub fn typed_question_streams_the_answer_into_the_card() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    type_request(&app, "How are you today?");
    assert!(
        wait_until(LONG, || shows(&app.window, "How are you today?")),
        "the request is shown on the card"
    );
    // The answer arrives in pieces 600 ms apart: the card shows the first part before the end.
    let partial_seen = wait_until(LONG, || {
        let t = reply_text(&app);
        t.contains("Hello from the scripted model.") && !t.contains(ANSWER_END)
    });
    assert!(
        partial_seen,
        "no partial answer seen; reply: {:?}",
        reply_text(&app)
    );
    assert!(
        wait_until(LONG, || reply_text(&app).contains(ANSWER_END)),
        "the answer did not finish; daemon log:\n{}",
        w.daemon_log()
    );
    let text = reply_text(&app);
    assert!(
        text.contains("• first point") || text.contains("first point"),
        "{text}"
    );
    let items: Vec<String> = super::harness::label_texts(&app.window)
        .into_iter()
        .filter(|t| t == "•")
        .collect();
    assert_eq!(items.len(), 2, "the two list items are drawn as a list");
    let bold = descendants(&app.window).into_iter().any(|wd| {
        wd.downcast_ref::<gtk::Label>()
            .is_some_and(|l| l.label().contains("<b>scripted</b>"))
    });
    assert!(bold, "**scripted** is drawn bold by the card's own markup");
    assert!(wait_until(LONG, || !app.model().busy));
}

pub fn tool_step_appears_with_its_command_and_collapsible_output() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    type_request(&app, "Say it: <cmd>echo orb-step-output</cmd>");
    let ok = wait_until(LONG, || {
        app.model()
            .turns
            .last()
            .is_some_and(|t| t.steps().any(|s| !s.running()))
    });
    assert!(
        ok,
        "the step did not finish; daemon log:\n{}",
        w.daemon_log()
    );
    let step: gtk::Expander = one(&app.window, "tool-step");
    assert!(
        super::harness::label_texts(&step)
            .iter()
            .any(|t| t == "$ echo orb-step-output"),
        "the step shows its command"
    );
    assert!(!step.is_expanded(), "output starts collapsed");
    assert!(!shows(&step, "orb-step-output\n") && !shows(&app.window, "(no output)"));
    step.set_expanded(true);
    assert!(
        wait_until(LONG, || descendants(&step).iter().any(|wd| {
            wd.is_mapped()
                && wd
                    .downcast_ref::<gtk::Label>()
                    .is_some_and(|l| l.text().trim() == "orb-step-output")
        })),
        "expanding shows the command's real output"
    );
    assert!(wait_until(LONG, || reply_text(&app)
        .contains("Finished: the command ran.")));
}

pub fn allow_on_the_permission_card_runs_the_command() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    let marker = w.home().join("allowed-by-orb");
    type_request(
        &app,
        &format!("<cmd>echo start && touch {}</cmd>", marker.display()),
    );
    let card = wait_for_card(&app, &w);
    let command: gtk::Label = one(&card, "permission-command");
    assert_eq!(
        command.text(),
        format!("echo start && touch {}", marker.display())
    );
    let segments: Vec<String> = named(&card, "permission-segment")
        .iter()
        .filter_map(|s| s.downcast_ref::<gtk::Label>().map(|l| l.text().to_string()))
        .collect();
    assert_eq!(
        segments.len(),
        2,
        "every simple command is listed: {segments:?}"
    );
    assert!(segments[0].contains("echo start") && segments[0].contains("allow"));
    assert!(segments[1].contains("touch") && segments[1].contains("ask"));
    let why: gtk::Label = one(&card, "permission-reason");
    assert!(why.text().contains("touch"), "{}", why.text());
    let countdown: gtk::Label = one(&card, "permission-countdown");
    assert!(countdown.text().contains(" s"), "{}", countdown.text());
    assert!(!marker.exists(), "nothing runs before the answer");
    let allow: gtk::Button = one(&card, "permission-allow");
    assert!(allow.is_sensitive());
    allow.emit_clicked();
    assert!(
        wait_until(LONG, || marker.exists()),
        "Allow did not run the command; daemon log:\n{}",
        w.daemon_log()
    );
    assert!(
        wait_until(LONG, || named(&app.window, "permission-card").is_empty()),
        "the card goes away once resolved"
    );
}

pub fn card_disappears_when_the_cli_answers_it() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    let marker = w.home().join("denied-by-cli");
    type_request(&app, &format!("<cmd>touch {}</cmd>", marker.display()));
    wait_for_card(&app, &w);
    let id = open_card_id(&app);
    let out = w.cli(&["permissions", "answer", &id, "--deny"]);
    assert!(
        out.status.success(),
        "sayri permissions answer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        wait_until(LONG, || named(&app.window, "permission-card").is_empty()),
        "the card stays after the CLI answered"
    );
    assert!(wait_until(LONG, || !app.model().busy));
    assert!(!marker.exists(), "a denied command never ran");
}

pub fn orb_reconnects_after_a_daemon_restart_and_keeps_working() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    w.stop_daemon();
    let banner: gtk::Label = one(&app.window, "link-banner");
    assert!(
        wait_until(LONG, || banner.is_visible()
            && banner.text().contains("Reconnecting")),
        "no reconnecting banner: {:?}",
        banner.text()
    );
    let entry: gtk::Entry = one(&app.window, "talk-entry");
    assert!(!entry.is_sensitive(), "no typing into a dead connection");
    w.start_daemon();
    wait_connected(&app);
    assert!(!banner.is_visible());
    type_request(&app, "<cmd>echo after-restart</cmd>");
    assert!(
        wait_until(LONG, || reply_text(&app)
            .contains("Finished: the command ran.")),
        "the orb does not work after the restart; daemon log:\n{}",
        w.daemon_log()
    );
    assert!(
        super::harness::label_texts(&app.window)
            .iter()
            .any(|t| t == "$ echo after-restart")
    );
}

pub fn orb_starts_the_daemon_when_none_runs() {
    let w = World::new();
    assert!(!world::greets(&w.socket()));
    let app = w.orb(true);
    wait_connected(&app);
    assert!(world::greets(&w.socket()), "a daemon now serves the socket");
    type_request(&app, "hello?");
    assert!(wait_until(LONG, || reply_text(&app).contains(ANSWER_END)));
}

pub fn settings_view_shows_validation_errors_beside_the_field() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    assert!(wait_until(LONG, || !app.model().settings.is_empty()));
    one::<gtk::ToggleButton>(&app.window, "page-settings").set_active(true);
    let grid: gtk::Grid = one(&app.window, "settings-grid");
    // The entry of ui.orb_size: the widget right of its name label.
    let name = descendants(&grid)
        .into_iter()
        .find(|wd| {
            wd.downcast_ref::<gtk::Label>()
                .is_some_and(|l| l.text() == "ui.orb_size")
        })
        .expect("ui.orb_size row");
    let entry = grid
        .child_at(1, grid.query_child(&name).1)
        .and_then(|e| e.downcast::<gtk::Entry>().ok())
        .expect("an entry beside ui.orb_size");
    assert_eq!(entry.text(), "140");
    entry.set_text("5");
    entry.emit_activate();
    let row = grid.query_child(&name).1;
    let error = grid
        .child_at(1, row + 1)
        .and_then(|e| e.downcast::<gtk::Label>().ok())
        .expect("error label below the field");
    assert!(
        wait_until(LONG, || error.is_visible()
            && error.text().contains("orb_size")),
        "no validation error beside the field: {:?}",
        error.text()
    );
    // Another client changes it: the field follows, the error goes.
    let out = w.cli(&["config", "set", "ui.orb_size", "96"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(wait_until(LONG, || entry.text() == "96" && !error.is_visible()));
    let orb: gtk::DrawingArea = one(&app.window, "orb");
    assert!(
        wait_until(LONG, || orb.content_width() == 96),
        "the orb follows ui.orb_size"
    );
}

pub fn remember_this_on_a_said_line_keeps_it_as_a_fact_of_the_person() {
    let mut w = World::new();
    w.start_daemon();
    let app = w.orb(false);
    wait_connected(&app);
    type_request(&app, "My backup disk is /mnt/tank");
    assert!(
        wait_until(LONG, || !named(&app.window, "remember-this").is_empty()),
        "the said line has a Remember this button"
    );
    let keep: gtk::Button = one(&app.window, "remember-this");
    keep.emit_clicked();
    assert!(
        wait_until(LONG, || shows(&app.window, "Remembered as fact 1")),
        "no notice that the fact was kept; daemon log:\n{}",
        w.daemon_log()
    );
    let out = w.cli(&["memory", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let facts: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(facts.as_array().map(Vec::len), Some(1), "{facts}");
    assert_eq!(facts[0]["text"], "My backup disk is /mnt/tank");
    assert_eq!(facts[0]["source"], "person");
}
