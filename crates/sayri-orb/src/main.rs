//! `sayri-orb`: the desktop orb and its card (see `sayri-orb --help`).

fn main() -> std::process::ExitCode {
    sayri_orb::app::run()
}
