//! `sayri-gateway-telegram`: the reference Telegram gateway (see the `sayri-gateway-telegram`
//! crate). Started by the daemon, one process per gateway instance.

fn main() -> std::process::ExitCode {
    sayri_gateway_telegram::main()
}
