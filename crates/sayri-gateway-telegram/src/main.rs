//! `sayri-gateway-telegram`: the reference Telegram gateway (the library of this crate). Started
//! by the daemon, one process per gateway instance.

fn main() -> std::process::ExitCode {
    sayri_gateway_telegram::main()
}
