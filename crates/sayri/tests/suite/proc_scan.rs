//! Reading other processes' `/proc/PID/cmdline` and `/proc/PID/environ` the way an attacker on
//! the same machine would: as this test's uid (the user Sayri runs as) and as uid 65534 through
//! `setpriv` (another local user). The pids go to the reader on stdin, never in its arguments.

use super::secret_rig::{forms, leaks};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::{Command, Stdio};

/// One file as one reader saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub pid: u32,
    /// `cmdline` or `environ`.
    pub file: &'static str,
    /// Its bytes, or `None` when the kernel refused the read.
    pub bytes: Option<Vec<u8>>,
}

/// `pid → ppid` of every process.
fn parents() -> HashMap<u32, u32> {
    let mut out = HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name is in parentheses and may hold spaces: the fields after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            out.insert(pid, ppid);
        }
    }
    out
}

/// `root` and every process below it.
pub fn tree(root: u32) -> Vec<u32> {
    let parents = parents();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        let mut kids: Vec<u32> = parents
            .iter()
            .filter(|(_, pp)| **pp == p)
            .map(|(c, _)| *c)
            .collect();
        kids.sort();
        out.extend(kids);
        i += 1;
    }
    out
}

/// The raw command line of `pid` (empty when it is gone).
pub fn cmdline(pid: u32) -> Vec<u8> {
    std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default()
}

/// Whether `pid`'s command line is `…sayri-exec exec` (a command's helper).
fn is_exec_helper(pid: u32) -> bool {
    let c = cmdline(pid);
    let args: Vec<&[u8]> = c.split(|b| *b == 0).filter(|a| !a.is_empty()).collect();
    args.first().is_some_and(|a| a.ends_with(b"sayri-exec")) && args.get(1) == Some(&&b"exec"[..])
}

/// The processes of `all` that are commands: below a `sayri-exec exec` helper (the helper
/// itself is Sayri's). A command holds its agent's secrets in its environment by design.
pub fn commands(all: &[u32]) -> HashSet<u32> {
    let parents = parents();
    all.iter()
        .copied()
        .filter(|pid| {
            let mut p = parents.get(pid).copied();
            while let Some(pp) = p {
                if is_exec_helper(pp) {
                    return true;
                }
                p = parents.get(&pp).copied();
            }
            false
        })
        .collect()
}

/// The reader: for each pid on stdin, `PID FILE xHEX` or `PID FILE -` (refused).
const READER: &str = r#"import sys
for pid in sys.stdin.read().split():
    for f in ("cmdline", "environ"):
        try:
            d = open("/proc/%s/%s" % (pid, f), "rb").read()
            print(pid, f, "x" + d.hex())
        except OSError:
            print(pid, f, "-")
"#;

fn parse(out: &[u8]) -> Vec<Seen> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            let pid = it.next()?.parse().ok()?;
            let file = match it.next()? {
                "cmdline" => "cmdline",
                "environ" => "environ",
                _ => return None,
            };
            let bytes = it
                .next()?
                .strip_prefix('x')
                .map(|h| hex::decode(h).unwrap_or_default());
            Some(Seen { pid, file, bytes })
        })
        .collect()
}

fn read_with(mut cmd: Command, pids: &[u32]) -> Vec<Seen> {
    let mut child = cmd
        .arg("/usr/bin/python3")
        .arg("-c")
        .arg(READER)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 and setpriv must be installed (./scripts/setup --tests)");
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.join(" ").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the /proc reader failed");
    parse(&out.stdout)
}

/// What uid 65534, with no capabilities and no groups, reads of `pids`.
pub fn read_as_nobody(pids: &[u32]) -> Vec<Seen> {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
    ]);
    read_with(c, pids)
}

/// What this test's own uid reads of `pids`.
pub fn read_as_us(pids: &[u32]) -> Vec<Seen> {
    read_with(Command::new("env"), pids)
}

/// Panics naming every file of `seen` (restricted to `which`) that holds `secret` in any form.
pub fn assert_none_holds(who: &str, seen: &[Seen], which: impl Fn(&Seen) -> bool, secret: &str) {
    let mut bad = Vec::new();
    for s in seen.iter().filter(|s| which(s)) {
        if let Some(b) = &s.bytes {
            let hits = leaks(b, secret);
            if !hits.is_empty() {
                let name = String::from_utf8_lossy(&cmdline(s.pid)).replace('\0', " ");
                bad.push(format!("{} of pid {} ({name}): {hits:?}", s.file, s.pid));
            }
        }
    }
    assert!(bad.is_empty(), "{who} reads the secret in: {bad:#?}");
}

/// Panics naming every file of `seen` that holds `secret` in one of its encoded forms (plain,
/// base64 at each offset, hex, percent-encoded), for a secret too regular for piece matching.
pub fn assert_no_form(who: &str, seen: &[Seen], secret: &str) {
    let mut bad = Vec::new();
    for s in seen {
        if let Some(b) = &s.bytes {
            let text = String::from_utf8_lossy(b);
            for (name, f) in forms(secret) {
                if text.contains(&f) {
                    bad.push(format!("{} of pid {}: {name}", s.file, s.pid));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{who} reads the secret in: {bad:#?}");
}
