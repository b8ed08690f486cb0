//! `sayri`: the daemon and the CLI.

fn main() {
    println!("sayri {}", env!("CARGO_PKG_VERSION"));
}
