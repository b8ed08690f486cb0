//! The doctor's checks of what other programs could reach: whether the kernel's Yama ptrace
//! scope adds protection, whether the model endpoint is open to other machines or unencrypted,
//! and whether the service manager passed the daemon a socket others could connect to.

use super::doctor::{Finding, Status, finding};
use sayri_core::domain::config::Config;
use sayri_protocol::reply::runtime::StatusReply;

/// The Yama ptrace scope: `ok` when it limits attaching (1–3), `off` when the kernel has none
/// or it is 0. Sayri's own processes are non-dumpable either way.
pub fn yama(out: &mut Vec<Finding>) {
    let scope = sayri_sandbox::nondumpable::yama_ptrace_scope();
    let detail = sayri_sandbox::nondumpable::describe_yama(scope);
    let limited = scope.is_some_and(|s| s >= 1);
    out.push(finding(
        "ptrace_scope",
        "process isolation (Yama ptrace scope)",
        if limited { Status::Ok } else { Status::Off },
        detail,
        (!limited).then(|| {
            "optional: `sudo sysctl kernel.yama.ptrace_scope=1` (and `kernel.yama.ptrace_scope = 1` in /etc/sysctl.d/ to keep it), on a kernel with Yama".to_string()
        }),
    ));
}

/// Warnings about `provider.base_url`: a loopback server listening on every address (other
/// machines reach it, usually without authentication), or plain `http://` to another host.
pub fn endpoint_exposure(cfg: &Config, out: &mut Vec<Finding>) {
    if !cfg.provider.local_model.is_empty() {
        return; // Sayri's own server: loopback only, on a socket the daemon holds.
    }
    let Ok(url) = url::Url::parse(cfg.provider.base_url.trim()) else {
        return; // the settings check reports it
    };
    let Some(host) = url.host() else { return };
    let port = url.port_or_known_default().unwrap_or(80);
    let loopback = match &host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(a) => a.is_loopback(),
        url::Host::Ipv6(a) => a.is_loopback(),
    };
    if loopback {
        if let Some(wild) = wildcard_listener(port) {
            let ollama = if port == 11434 {
                " For Ollama, set OLLAMA_HOST=127.0.0.1:11434 in the environment of `ollama serve` (e.g. `systemctl edit ollama`, Environment=\"OLLAMA_HOST=127.0.0.1:11434\") and restart it."
            } else {
                ""
            };
            out.push(finding(
                "model_endpoint.exposure",
                "model server exposure",
                Status::Warn,
                format!(
                    "the model server at :{port} listens on all addresses ({wild}), so other machines on your network can use it, usually without authentication, and read what it serves"
                ),
                Some(format!(
                    "make the server listen on 127.0.0.1 only.{ollama} llama-server: `--host 127.0.0.1`"
                )),
            ));
        }
    } else if url.scheme() == "http" {
        out.push(finding(
            "model_endpoint.exposure",
            "model server exposure",
            Status::Warn,
            format!(
                "provider.base_url is plain http:// to {host}: every prompt, answer and the API key travel unencrypted over the network"
            ),
            Some(format!(
                "use https:// (`sayri config set provider.base_url https://{host}:{port}{}`), or reach the server through an SSH tunnel to 127.0.0.1",
                url.path()
            )),
        ));
    }
}

/// `0.0.0.0:PORT` or `[::]:PORT` when a TCP socket of this network namespace listens on the
/// wildcard address of `port`.
pub fn wildcard_listener(port: u16) -> Option<String> {
    for (table, wild, shown) in [
        ("/proc/net/tcp", "00000000", "0.0.0.0"),
        ("/proc/net/tcp6", "00000000000000000000000000000000", "[::]"),
    ] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Some((addr, p)) = f.get(1).and_then(|a| a.split_once(':')) else {
                continue;
            };
            if f.get(3) == Some(&"0A") && addr == wild && u16::from_str_radix(p, 16) == Ok(port) {
                return Some(format!("{shown}:{port}"));
            }
        }
    }
    None
}

/// The daemon's warnings about the sockets the service manager passed it (from `status`).
pub fn passed_sockets(daemon: Option<&StatusReply>, out: &mut Vec<Finding>) {
    let Some(status) = daemon else {
        return;
    };
    for w in &status.socket_warnings {
        out.push(finding(
            "daemon.socket",
            "daemon socket",
            Status::Warn,
            w.clone(),
            Some(
                "`sayri install --user --socket-activation` rewrites the socket units with SocketMode=0600 and their names; then `systemctl --user daemon-reload` and restart sayri.socket"
                    .into(),
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_listener_is_found_and_a_loopback_one_is_not() {
        let wild = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = wild.local_addr().unwrap().port();
        assert_eq!(wildcard_listener(port), Some(format!("0.0.0.0:{port}")));
        let lo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert_eq!(wildcard_listener(lo.local_addr().unwrap().port()), None);
    }

    fn cfg_with(url: &str) -> Config {
        let mut c = sayri_daemon::config_file::user_defaults();
        c.provider.base_url = url.into();
        c
    }

    #[test]
    fn ollama_on_all_addresses_is_warned_about_naming_ollama_host() {
        let Ok(wild) = std::net::TcpListener::bind("0.0.0.0:11434") else {
            return; // the port is in use on this machine
        };
        let mut out = Vec::new();
        endpoint_exposure(&cfg_with("http://127.0.0.1:11434/v1"), &mut out);
        drop(wild);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].status, Status::Warn);
        assert!(out[0].detail.contains("all addresses"), "{out:?}");
        assert!(out[0].fix.as_deref().unwrap().contains("OLLAMA_HOST"));
    }

    #[test]
    fn plain_http_to_another_host_is_warned_about_and_https_is_not() {
        let mut out = Vec::new();
        endpoint_exposure(&cfg_with("http://192.0.2.7:8080/v1"), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].detail.contains("unencrypted"), "{out:?}");
        let mut out = Vec::new();
        endpoint_exposure(&cfg_with("https://api.example.invalid/v1"), &mut out);
        assert!(out.is_empty(), "{out:?}");
    }
}
