//! Shell code, wherever it is, judged with the permission engine's bash analysis
//! ([`sayri_permissions::shell::analyse`]): shell scripts whole, Markdown code blocks,
//! inline code spans, command-looking text inside sentences and HTML comments, and string
//! literals that code hands to a shell (`os.system("…")`, `execSync('…')`). The analysis sees
//! through quoting, `$'\x63url'`, wrappers (`env`, `sudo`, `xargs`, …), `bash -c` strings and
//! substitutions; its findings (remote-script execution, decoded payloads run by a shell,
//! recursive deletes of protected directories, processes that outlive the command, what it
//! reads, writes and fetches) become scanner findings.

use super::{Collector, FileRole, Kind, Labels};
use crate::static_regex::static_regex;
use regex::Regex;
use sayri_permissions::rule::Action;
use sayri_permissions::{detach, recursive_delete, remote_exec, shell, targets};
use std::sync::OnceLock;

/// Programs whose name at the start of a phrase makes it a command worth analysing.
const COMMAND_WORDS: &str = r"(?:^|[\s`'\x22(:>$])((?:sudo\s+)?(?:curl|wget|bash|sh|zsh|python3?|node|perl|ruby|php|nc|ncat|socat|tar|rm|dd|mkfs\S*|chmod|chown|crontab|systemctl|echo|printf|base64|eval|cat|cp|mv|scp|rsync|openssl|xxd|source|npx|pip3?|npm|git|env|exec|nohup|setsid|mkfifo|telnet)\s.*)$";

/// Fence languages that hold shell commands.
const SHELL_FENCES: &[&str] = &[
    "",
    "bash",
    "sh",
    "shell",
    "zsh",
    "console",
    "terminal",
    "shell-session",
    "shellsession",
    "ksh",
    "command",
    "cmd",
];

/// Shell text longer than this is analysed line by line.
const WHOLE_LIMIT: usize = 64 * 1024;

struct Compiled {
    command: Regex,
    literal: Regex,
    inline: Regex,
    dynamic_feeder: Regex,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| Compiled {
        command: static_regex(&format!("(?i){COMMAND_WORDS}")),
        literal: static_regex(r#""((?:[^"\\]|\\.){6,})"|'((?:[^'\\]|\\.){6,})'|`([^`]{6,})`"#),
        inline: static_regex(r"`([^`]+)`"),
        dynamic_feeder: static_regex(
            r"(?m)(?:^|[;&|(]\s*)\$\{?\w+\}?[^|\n]*\|\s*(?:\S*/)?(?:ba|z|da|k)?sh\b",
        ),
    })
}

/// Scans the shell code in normalised `lines`.
pub fn scan(labels: &Labels<'_>, lines: &[String], role: FileRole, c: &mut Collector) {
    match role {
        FileRole::Shell => whole(labels, lines, 0, c),
        FileRole::Prose => prose(labels, lines, c),
        FileRole::Code => {
            for (i, line) in lines.iter().enumerate() {
                literals(labels, i + 1, line, c);
            }
        }
    }
}

/// A whole shell text starting at 0-based line `first`, analysed at once when it is short
/// enough, else line by line.
fn whole(labels: &Labels<'_>, lines: &[String], first: usize, c: &mut Collector) {
    let text = lines.join("\n");
    if text.len() <= WHOLE_LIMIT {
        judge(labels, first + 1, &text, c);
    }
    for (i, line) in lines.iter().enumerate() {
        if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            judge(labels, first + i + 1, line, c);
        }
    }
}

/// Markdown: fenced blocks (shell ones as shell, others for their string literals), inline
/// spans, and command-looking text in sentences and comments.
fn prose(labels: &Labels<'_>, lines: &[String], c: &mut Collector) {
    let re = compiled();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if let Some(rest) = t.strip_prefix("```").or_else(|| t.strip_prefix("~~~")) {
            let lang = rest
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            let fence = &t[..3];
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && !lines[end].trim_start().starts_with(fence) {
                end += 1;
            }
            let body: Vec<String> = lines[start..end]
                .iter()
                .map(|l| strip_prompt(l).to_string())
                .collect();
            if SHELL_FENCES.contains(&lang.as_str()) {
                whole(labels, &body, start, c);
            } else {
                for (k, line) in body.iter().enumerate() {
                    literals(labels, start + k + 1, line, c);
                }
            }
            i = end + 1;
            continue;
        }
        let n = i + 1;
        for cap in re.inline.captures_iter(&lines[i]) {
            judge(labels, n, &cap[1], c);
        }
        let plain = re.inline.replace_all(&lines[i], " ");
        if let Some(cap) = re.command.captures(&plain) {
            let cmd = cap[1].trim_end_matches("-->").trim();
            judge(labels, n, cmd, c);
        }
        i += 1;
    }
}

/// `$ cmd` / `# cmd` prompts in console blocks.
fn strip_prompt(line: &str) -> &str {
    let t = line.trim_start();
    t.strip_prefix("$ ").unwrap_or(t)
}

/// String literals in code that look like shell commands.
fn literals(labels: &Labels<'_>, n: usize, line: &str, c: &mut Collector) {
    let re = compiled();
    for cap in re.literal.captures_iter(line) {
        let Some(m) = cap.get(1).or_else(|| cap.get(2)).or_else(|| cap.get(3)) else {
            continue;
        };
        let s = m.as_str().replace("\\\"", "\"").replace("\\'", "'");
        if s.contains(' ') && (s.contains('|') || re.command.is_match(&format!(" {s}"))) {
            judge(labels, n, &s, c);
        }
    }
}

/// Analyses one piece of shell text found at line `n` and records what it does.
fn judge(labels: &Labels<'_>, n: usize, text: &str, c: &mut Collector) {
    if text.trim().is_empty() {
        return;
    }
    let a = shell::analyse(text);
    let detail = |d: &str| labels.detail(n, d);
    let rx = remote_exec::findings(&a);
    for d in &rx.denied {
        let kind = if d.contains("decoded payload") {
            Kind::ObfuscatedExecution
        } else {
            Kind::FetchExecute
        };
        c.add(
            kind,
            labels.path,
            n,
            text,
            &detail(&format!("shell analysis: {d}")),
        );
    }
    for d in &rx.opaque {
        c.add(
            Kind::PipeToShell,
            labels.path,
            n,
            text,
            &detail(&format!("shell analysis: {d}")),
        );
    }
    // A shell fed by a program whose name is only known at run time (`c=cu; c="${c}rl";
    // $c -s "$u" | sh`) is a fetch-and-execute written so a reader cannot see it.
    if !rx.opaque.is_empty() && compiled().dynamic_feeder.is_match(text) {
        c.add(
            Kind::ObfuscatedExecution,
            labels.path,
            n,
            text,
            &detail("a shell runs the output of a program whose name is only known at run time"),
        );
    }
    for d in recursive_delete::findings(&a) {
        c.add(
            Kind::Destructive,
            labels.path,
            n,
            text,
            &detail(&format!("shell analysis: {d}")),
        );
    }
    for d in detach::findings(&a) {
        c.add(
            detach_kind(&d),
            labels.path,
            n,
            text,
            &detail(&format!("shell analysis: {d}")),
        );
    }
    for t in targets::targets(&a) {
        if t.action == Action::Web
            && let Some(ip) = public_ip_in(&t.value)
        {
            c.add(
                Kind::RawIpAddress,
                labels.path,
                n,
                text,
                &detail(&format!("fetches from the bare address {ip}")),
            );
        }
    }
    for o in &a.opaque {
        c.add(
            Kind::UnanalysableShell,
            labels.path,
            n,
            text,
            &detail(&format!("shell analysis: {o}")),
        );
    }
}

/// A detach finding `d` is persistence when it names a scheduler, a unit, autostart, a login
/// hook, lingering or a shell profile; otherwise it only runs in the background.
fn detach_kind(d: &str) -> Kind {
    let lower = d.to_lowercase();
    if [
        "cron",
        "systemd",
        "unit",
        "autostart",
        "login",
        "linger",
        "at ",
        "rc",
        "profile",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        Kind::Persistence
    } else {
        Kind::Background
    }
}

/// The first public IPv4 address written in `text` (loopback, private, link-local and
/// unspecified addresses do not count; documentation ranges do, as stand-ins for real hosts).
///
/// ```
/// use sayri_core::domain::skills::scanner::shell::public_ip_in;
/// assert_eq!(public_ip_in("http://192.0.2.10/q7x").as_deref(), Some("192.0.2.10"));
/// assert_eq!(public_ip_in("http://127.0.0.1:8080/"), None);
/// assert_eq!(public_ip_in("http://192.168.1.20/api"), None);
/// ```
pub fn public_ip_in(text: &str) -> Option<String> {
    static IP: OnceLock<Regex> = OnceLock::new();
    let re = IP.get_or_init(|| static_regex(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\b"));
    for cap in re.captures_iter(text) {
        let o: Vec<u32> = (1..=4).filter_map(|k| cap[k].parse::<u32>().ok()).collect();
        if o.len() != 4 || o.iter().any(|x| *x > 255) {
            continue;
        }
        let private = o[0] == 10
            || o[0] == 127
            || o[0] == 0
            || (o[0] == 172 && (16..=31).contains(&o[1]))
            || (o[0] == 192 && o[1] == 168)
            || (o[0] == 169 && o[1] == 254)
            || o[0] >= 224;
        if !private {
            return Some(cap[0].to_string());
        }
    }
    None
}

/// Raw public addresses in URLs or socket calls of one line (for any language).
pub fn raw_ip(labels: &Labels<'_>, n: usize, line: &str, c: &mut Collector) {
    static CTX: OnceLock<Regex> = OnceLock::new();
    let re = CTX.get_or_init(|| {
        static_regex(r#"(?i)\b(https?|ftp|tcp|udp|wss?)://\d|/dev/(tcp|udp)/\d|connect\(\s*\(?\s*['"]\d|['"]\d{1,3}(\.\d{1,3}){3}['"]\s*,\s*\d{2,5}"#)
    });
    if re.is_match(line)
        && let Some(ip) = public_ip_in(line)
    {
        c.add(
            Kind::RawIpAddress,
            labels.path,
            n,
            line,
            &labels.detail(n, &format!("talks to the bare address {ip}")),
        );
    }
}
