//! A hostile local user of another uid impersonating the daemon.
//!
//! The helper "daemon" really runs as uid 65534 (`setpriv`) and listens on a real Unix socket;
//! the client must refuse it before sending anything, so a secret sent by `sayri vault set` or
//! `config_set provider.api_key` can never reach another user.

use super::support::*;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const IMPOSTOR: &str = r#"
import os, socket, sys
path, loot = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o666)
s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b'{"event":"ready","info":{}}\n')
    c.settimeout(5)
    try:
        data = c.recv(65536)
    except Exception:
        data = b""
    with open(loot, "ab") as f:
        f.write(data)
    c.close()
"#;

fn is_root() -> bool {
    // SAFETY: getuid/geteuid take no arguments, touch no memory and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

struct Impostor(Child);
impl Drop for Impostor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A world-traversable directory (outside /tmp) holding the impostor's socket and loot file.
fn start_impostor(dir: &Path) -> Impostor {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["/usr/bin/python3", "-c", IMPOSTOR])
        .arg(dir.join("sayri-daemon.sock"))
        .arg(dir.join("loot"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("setpriv and /usr/bin/python3 are needed");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "listening");
    Impostor(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_refuses_a_daemon_socket_served_by_another_uid() {
    if !is_root() {
        eprintln!("skipped: needs root to run the impostor as uid 65534 (setpriv)");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let _imp = start_impostor(dir.path());
    let socket = dir.path().join("sayri-daemon.sock");
    let result = sayri_client::client::Client::connect(&socket, Duration::from_secs(3)).await;
    let err = match result {
        Ok(_) => panic!("connected to a socket served by uid 65534"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("65534"), "the refusal names the uid: {err}");
    // Nothing at all was written to the impostor.
    std::thread::sleep(Duration::from_millis(300));
    let loot = std::fs::read(dir.path().join("loot")).unwrap_or_default();
    assert!(loot.is_empty(), "the impostor received {loot:?}");
}

#[test]
fn a_runtime_dir_symlink_planted_by_another_uid_is_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to plant a symlink as uid 65534");
        return;
    }
    // A shared, world-writable parent (like a misconfigured XDG_RUNTIME_DIR=/tmp): another user
    // plants `sayri` as a symlink to a directory we own, to swap it for theirs later.
    let env = Env::new();
    let shared = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let ours = env.dir.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    let link = shared.path().join("sayri");
    let st = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "ln",
            "-s",
        ])
        .arg(&ours)
        .arg(&link)
        .status()
        .unwrap();
    assert!(st.success());
    let mut daemon = env
        .cmd()
        .env("XDG_RUNTIME_DIR", shared.path())
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let exited = eventually(Duration::from_secs(10), || {
        matches!(daemon.try_wait(), Ok(Some(_)))
    });
    if !exited {
        let _ = daemon.kill();
    }
    let o = daemon.wait_with_output().unwrap();
    assert!(
        exited,
        "the daemon started behind another user's symlink; its socket is {:?}",
        std::fs::read_dir(&ours).map(|d| d.count())
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("65534"), "{}", stderr(&o));
    assert!(
        !ours.join("sayri-daemon.sock").exists(),
        "a socket was created through the planted symlink"
    );
}
