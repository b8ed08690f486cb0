//! GUI tests of the orb under a private X server and D-Bus session, against a real daemon.
//!
//! This is a `harness = false` test: GTK must run on the process's main thread, one test at a
//! time, so `main` is the runner. The executable plays every program a test needs, so the
//! daemon, CLI, sandbox and orb are the real code without this package naming another
//! package's binaries. It does five jobs, picked by how it was started:
//!
//! 1. `__sandbox-exec …` — the sandbox's exec helper, the same entry point the `sayri-exec`
//!    program calls: the daemon below runs commands by re-executing this executable that way.
//! 2. `SAYRI_ORB_TEST_ROLE=sayri` — the `sayri` command line itself (`sayri::main`, the same
//!    entry point the `sayri` binary calls), told to use (1) as its exec helper: a real daemon
//!    (socket, sandbox and database included) and the real CLI.
//! 3. `SAYRI_ORB_TEST_ROLE=orb` — the `sayri-orb` program (`sayri_orb::app::run`, the only thing
//!    the `sayri-orb` binary calls), with the rest of the command line as its arguments.
//! 4. Without `SAYRI_ORB_TEST_BUS`: re-executes itself inside `dbus-run-session`, so GTK, the
//!    accessibility bus and the tray find a private session bus.
//! 5. Otherwise: starts `Xvfb` on a free display, initialises GTK and runs the tests.
//!    The monitor-layout tests (`layouts.rs`) also start an Xorg of their own with real RandR
//!    outputs (`dummy_x.rs`) and run the orb program (3) on it.
//!
//! `cargo test -p sayri-orb-gui-tests --test gui -- NAME` runs the tests whose name contains
//! NAME.

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acceptance;
mod case49;
mod dummy_x;
mod harness;
mod layouts;
mod monitors;
mod screenshots;
mod world;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == sayri_sandbox::EXEC_HELPER_ARG)
    {
        sayri_sandbox::exec_helper_main(&args[2..]);
    }
    if std::env::var_os(world::ROLE_VAR).is_some_and(|r| r == "sayri") {
        if let Ok(me) = std::env::current_exe() {
            sayri_daemon::brain::settings::use_helper_program(
                sayri_daemon::brain::settings::HelperProgram {
                    program: me,
                    args: vec![sayri_sandbox::EXEC_HELPER_ARG.into()],
                },
            );
        }
        return sayri::main();
    }
    if std::env::var_os(world::ROLE_VAR).is_some_and(|r| r == "orb") {
        return sayri_orb::app::run();
    }
    harness::run(&[
        (
            "typed_question_streams_the_answer_into_the_card",
            acceptance::typed_question_streams_the_answer_into_the_card,
        ),
        (
            "tool_step_appears_with_its_command_and_collapsible_output",
            acceptance::tool_step_appears_with_its_command_and_collapsible_output,
        ),
        (
            "allow_on_the_permission_card_runs_the_command",
            acceptance::allow_on_the_permission_card_runs_the_command,
        ),
        (
            "card_disappears_when_the_cli_answers_it",
            acceptance::card_disappears_when_the_cli_answers_it,
        ),
        (
            "orb_reconnects_after_a_daemon_restart_and_keeps_working",
            acceptance::orb_reconnects_after_a_daemon_restart_and_keeps_working,
        ),
        (
            "orb_starts_the_daemon_when_none_runs",
            acceptance::orb_starts_the_daemon_when_none_runs,
        ),
        (
            "settings_view_shows_validation_errors_beside_the_field",
            acceptance::settings_view_shows_validation_errors_beside_the_field,
        ),
        (
            "remember_this_on_a_said_line_keeps_it_as_a_fact_of_the_person",
            acceptance::remember_this_on_a_said_line_keeps_it_as_a_fact_of_the_person,
        ),
        (
            "model_text_with_controls_and_markup_is_shown_as_text",
            case49::model_text_with_controls_and_markup_is_shown_as_text,
        ),
        (
            "only_web_links_are_clickable_and_reach_the_launcher",
            case49::only_web_links_are_clickable_and_reach_the_launcher,
        ),
        (
            "permission_card_shows_a_hidden_command_part_and_deny_runs_nothing",
            case49::permission_card_shows_a_hidden_command_part_and_deny_runs_nothing,
        ),
        (
            "orb_sits_in_the_corner_takes_no_focus_and_passes_clicks_around_its_circle",
            monitors::orb_sits_in_the_corner_takes_no_focus_and_passes_clicks_around_its_circle,
        ),
        (
            "orb_sits_in_the_primary_monitors_corner_not_the_screens",
            layouts::orb_sits_in_the_primary_monitors_corner_not_the_screens,
        ),
        (
            "orb_follows_the_primary_monitor_when_it_moves_and_when_a_third_appears",
            layouts::orb_follows_the_primary_monitor_when_it_moves_and_when_a_third_appears,
        ),
        (
            "orb_moves_to_the_remaining_monitor_when_its_own_is_unplugged_and_back_when_replugged",
            layouts::orb_moves_to_the_remaining_monitor_when_its_own_is_unplugged_and_back_when_replugged,
        ),
        (
            "orb_at_gdk_scale_2_is_drawn_twice_as_large_on_the_primary_monitor",
            layouts::orb_at_gdk_scale_2_is_drawn_twice_as_large_on_the_primary_monitor,
        ),
        (
            "screenshots_of_idle_streaming_and_permission_are_not_blank_and_differ",
            screenshots::screenshots_of_idle_streaming_and_permission_are_not_blank_and_differ,
        ),
    ])
}
