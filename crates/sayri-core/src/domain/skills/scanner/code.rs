//! Language-independent rules over every line of every text file: reverse shells, credential
//! and Sayri paths, uploads and collection addresses, persistence, destructive commands,
//! hard-coded secrets, shell strings run from code, and — per file — code that runs what it
//! decoded or downloaded, and socket code wired to a shell.
//!
//! Paths are also matched after string pieces are joined (`path.join(home, ".ssh", "id_rsa")`
//! and `"." + "ssh"` read as `.ssh/id_rsa` and `.ssh`), so a path built at run time counts the
//! same as a literal one.

use super::{Collector, Kind, Labels};
use crate::static_regex::{static_regex, static_regex_set};
use regex::{Regex, RegexSet};
use std::sync::OnceLock;

struct Rule {
    kind: Kind,
    pattern: &'static str,
    detail: &'static str,
}

const RULES: &[Rule] = &[
    // Reverse shells.
    Rule {
        kind: Kind::ReverseShell,
        pattern: r"\b(ba|z|k|da)?sh\s+-i\b.{0,60}/dev/(tcp|udp)/|/dev/(tcp|udp)/\S+.{0,30}(0>&1|<&\s*\d|>&\s*\d)|\bexec\s+\d+<>\s*/dev/(tcp|udp)/",
        detail: "an interactive shell redirected to a TCP connection",
    },
    Rule {
        kind: Kind::ReverseShell,
        pattern: r"\b(nc|ncat|netcat|nc\.traditional|nc\.openbsd)\b[^|;&\n]{0,80}\s-[a-z]*[ec]\s*['\x22]?(/\S*/)?(ba|z|da|k)?sh\b|\b(nc|ncat|netcat)\b.{0,60}\s-[a-z]*e\s",
        detail: "netcat running a shell for a remote peer",
    },
    Rule {
        kind: Kind::ReverseShell,
        pattern: r"\bmkfifo\b.{0,160}\b(nc|ncat|netcat|telnet|openssl\s+s_client|socat)\b",
        detail: "a named pipe looping a shell through a network connection",
    },
    Rule {
        kind: Kind::ReverseShell,
        pattern: r"\bsocat\b.{0,100}\b(exec|system):",
        detail: "socat running a program for a remote peer",
    },
    Rule {
        kind: Kind::ReverseShell,
        pattern: r"\b(ba|z|da)?sh\s+-i\b.{0,60}\|\s*(nc|ncat|netcat|telnet|openssl)\b|\btelnet\s+\S+\s+\d+\s*\|\s*(/bin/)?(ba)?sh\b",
        detail: "an interactive shell piped to a network connection",
    },
    Rule {
        kind: Kind::ReverseShell,
        pattern: r"socket\.socket\(.{0,300}(dup2|pty\.spawn|subprocess\.(call|popen|run))|\bperl\b.{0,40}-e.{0,300}\bsocket\(.{0,300}\bexec\b|IO::Socket::INET.{0,300}\b(exec|system)\b|fsockopen\(.{0,300}(exec|shell_exec|system|proc_open|/bin/sh)|TCPSocket\.(new|open).{0,300}(exec|spawn|system|/bin/sh)|Net\.Sockets\.TCPClient.{0,400}(iex|Invoke-Expression|\.Invoke\()|/inet/tcp/.{0,200}(getline|\|&)|\bsocket\b.{0,200}os\.execute|net\.(Socket|connect)\(.{0,300}(child_process|spawn\(|/bin/sh)",
        detail: "a one-line program that connects out and hands the connection a shell",
    },
    Rule {
        kind: Kind::RawSocket,
        pattern: r"/dev/(tcp|udp)/[\w.\-]+/\d+",
        detail: "opens a raw TCP/UDP connection from the shell",
    },
    // Remote code, spelled in ways the shell analysis cannot see (other languages).
    Rule {
        kind: Kind::FetchExecute,
        pattern: r"\b(exec|eval)\s*\(\s*(requests\.get|urllib\.request\.urlopen|urlopen|httpx\.get|http\.get|await\s+fetch|fetch)\b|(iex|Invoke-Expression)\b.{0,120}(DownloadString|iwr|irm|Invoke-WebRequest|Invoke-RestMethod|curl|wget)|(DownloadString|Invoke-WebRequest|Invoke-RestMethod|\biwr\b|\birm\b).{0,200}\|\s*(iex|Invoke-Expression)\b|\b(curl|wget)\b[^|\n]{0,300}\|\s*(sudo\s+)?(\w+=\S*\s+)*(/usr)?(/bin/)?(ba|z|da|k|fi)?sh\b|\b(ba|z)?sh\s+(-c\s+)?['\x22]?\$\(\s*(curl|wget)\b|\b(ba|z)?sh\s+<\(\s*(curl|wget)\b|\b(source|\.)\s+<\(\s*(curl|wget)\b|\b(curl|wget)\b[^|\n]{0,300}\|\s*(python[0-9.]*|perl|ruby|node|php)\s*(-\s*)?($|['\x22);])",
        detail: "downloads code and runs it",
    },
    // Decoded data run as code.
    Rule {
        kind: Kind::ObfuscatedExecution,
        pattern: r"(base64\s+(-d|--decode|-D)\b|base32\s+-d|xxd\s+-r|openssl\s+(enc\s+)?(-\w+\s+)*-d\b|\brev\b|\btr\s+['\x22]?(a-z|A-Z|n-z)|\bgunzip\b|\bzcat\b|\buudecode\b|\bprintf\s+['\x22]?(\\x|%b)).{0,120}\|\s*(sudo\s+)?(/usr)?(/bin/)?(ba|z|da|k)?sh\b|\beval\s+['\x22]?\$\(.{0,120}(base64|xxd|\brev\b|openssl|gunzip|printf)|\b(ba|z)?sh\s+-c\s+['\x22]?\$\(.{0,120}(base64|xxd|\brev\b|openssl|gunzip|printf)",
        detail: "decodes data and runs it as shell code",
    },
    Rule {
        kind: Kind::PipeToShell,
        pattern: r"\|\s*(sudo\s+)?(/usr)?(/bin/)?(ba|z|da|k)?sh\b(\s+-s)?\s*(-\s*)?($|[;&)#'\x22`])|\|\s*(python[0-9.]*|perl|ruby|node|php)\s*(-\s*)?($|[;&)'\x22`])",
        detail: "pipes text into a shell or interpreter, which runs it as a program",
    },
    // Credentials and Sayri's own state.
    Rule {
        kind: Kind::CredentialAccess,
        pattern: r"(^|[^\w.])\.ssh([/\\'\x22\s),\]]|$)|\bid_(rsa|dsa|ecdsa|ed25519)\b|\bauthorized_keys\b|(^|[^\w.])\.gnupg\b|\bsecring\.gpg\b|(^|[^\w])\.aws([/\\'\x22\s),\]]|$)|\baws/credentials\b|(^|[^\w])\.azure/|gcloud/(credentials|application_default|legacy_credentials)|\.kube/config\b|\.docker/config\.json|(^|[^\w])\.netrc\b|\.git-credentials\b|(^|[^\w])\.npmrc\b|(^|[^\w])\.pypirc\b|gh/hosts\.ya?ml|\.config/(google-chrome|chromium|BraveSoftware|microsoft-edge|vivaldi|opera)\b|\.mozilla/firefox|\bLogin\s+Data\b|\blogins\.json\b|\bkey[34]\.db\b|\bcookies\.sqlite\b|\.local/share/keyrings|\blogin\.keyring\b|/etc/shadow\b|\.password-store\b|\bwallet\.dat\b|\.electrum/|\.ethereum/keystore|\bkeychain\b.{0,30}\bdump|\bsecret-tool\s+lookup\b",
        detail: "reads a credential file or store",
    },
    Rule {
        kind: Kind::EnvFile,
        pattern: r"(^|[^\w.$/])\.env(\.\w+)?(['\x22\s),\]]|$)|\bload_dotenv\(|\brequire\(['\x22]dotenv['\x22]\)",
        detail: "reads a .env file",
    },
    Rule {
        kind: Kind::SayriState,
        pattern: r"\.config/sayri\b|\.local/share/sayri\b|\bsayri[-_]daemon\.(sock|lock)\b|\bsayri\.(db|toml|conf|sock)\b|\bsessions\.db\b|\bvault\.(json|key|db|enc)\b|\bSAYRI_(CONFIG|STATE)_DIR\b|\bsayri/(agents|skills|vault|plugins|logs)\b|\$CONFIG/(agents|skills|vault)",
        detail: "refers to Sayri's own config, vault, database or sockets",
    },
    Rule {
        kind: Kind::HomeCollection,
        pattern: r"\b(tar|zip|7z|rsync|scp|rclone)\b[^|\n]{0,80}\s['\x22]?(~|\$HOME|\$\{HOME\}|/home/[\w.-]*|/root)/?(\*)?['\x22]?(\s|$|\||;)|os\.walk\(\s*(os\.path\.expanduser\(\s*['\x22]~['\x22]\s*\)|Path\.home\(\)|['\x22]~['\x22])|readdirSync\(\s*os\.homedir\(\)|glob\(.{0,40}~/\*\*|\bfind\s+(~|\$HOME)\s",
        detail: "collects files from the whole home folder",
    },
    // Sending data out.
    Rule {
        kind: Kind::Upload,
        pattern: r"\bcurl\b[^\n]{0,300}\s(-d|--data(-binary|-raw|-urlencode|-ascii)?|-F|--form|-T|--upload-file|-X\s*(POST|PUT)|--request\s+(POST|PUT))\b|\bwget\b.{0,120}--post-(data|file)|\b(requests|httpx|session|client)\.(post|put)\(|\bmethod\s*[:=]\s*['\x22](POST|PUT)['\x22]|\baxios\.(post|put)\(|urllib\.request\.Request\(.{0,200}\bdata\s*=|\bsmtplib\b|\bnodemailer\b|\bsendmail\b|\bscp\s+.{0,120}\S+@\S+:|Invoke-RestMethod.{0,120}-Method\s+(Post|Put)|navigator\.sendBeacon|\bnc\s+\S+\s+\d+\s*<",
        detail: "sends data out",
    },
    Rule {
        kind: Kind::ExfilEndpoint,
        pattern: r"discord(app)?\.com/api/webhooks|hooks\.slack\.com/services|api\.telegram\.org/bot|\bpastebin\.com|\bpaste\.ee\b|\bhastebin\b|\bghostbin\b|\btermbin\.com|\bix\.io\b|\b0x0\.st\b|\btransfer\.sh\b|\bfile\.io\b|\bwebhook\.site\b|\brequestbin\b|\bpipedream\.net\b|\bngrok(-free)?\.(io|app|dev)\b|\btrycloudflare\.com\b|\binteract\.sh\b|\boast\.(fun|pro|live|site|online|me)\b|\bburpcollaborator\b|https?://paste\.[\w.-]+|https?://collect\.[\w.-]+|/api/webhooks/",
        detail: "a webhook, paste site, tunnel or collection address",
    },
    Rule {
        kind: Kind::NetworkUse,
        pattern: r"\b(curl|wget|aria2c)\b|\brequests\.(get|post|put|Session)\b|\burllib\b|\bhttpx\b|\bfetch\(|\baxios\b|\bhttp\.client\b|\baiohttp\b|Invoke-WebRequest|\bsocket\.socket\(|\bnet\.(connect|Socket)\b",
        detail: "uses the network",
    },
    // Persistence.
    Rule {
        kind: Kind::Persistence,
        pattern: r"\bcrontab\b|/etc/cron|/var/spool/cron|@reboot\b|\bsystemctl\s+(--user\s+)?(enable|daemon-reload|link)\b|\.config/systemd/user|/etc/systemd/system|\.config/autostart|X-GNOME-Autostart|(>>?|\btee(\s+-a)?)\s*['\x22]?(~|\$HOME|\$\{HOME\})/\.(bashrc|zshrc|profile|bash_profile|zprofile|bash_login|zshenv)\b|open\(.{0,80}\.(bashrc|zshrc|profile|bash_profile)['\x22].{0,30}['\x22]a|appendFileSync\(.{0,80}\.(bashrc|zshrc|profile)|/etc/rc\.local|/etc/profile\.d|ld\.so\.preload|\bLaunchAgents\b|\blaunchctl\s+load|>>\s*\S*authorized_keys|\.git/hooks/|\bloginctl\s+enable-linger|\bschtasks\b|CurrentVersion\\Run",
        detail: "makes something run again later (cron, systemd, autostart, shell start-up files)",
    },
    // Destructive commands.
    Rule {
        kind: Kind::Destructive,
        pattern: r"\brm\s+(-[a-z]*\s+)*-[a-z]*[rR][a-z]*\s+(-[a-z-]*\s+)*['\x22]?(/|/\*|~/?|~/\*|\$HOME/?|\$\{HOME\}/?|\$HOME/\*)['\x22]?(\s|$|;|&|\|)|--no-preserve-root|\bmkfs(\.\w+)?\b|\bdd\b.{0,80}\bof=/dev/(sd|hd|nvme|mmcblk|vd|xvd|disk)|>\s*/dev/(sd[a-z]|nvme\d|hd[a-z]|mmcblk\d)|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:|\bshred\b.{0,60}/dev/|\bwipefs\b|\bchmod\s+-R\s+0?777\s+/(\s|$)|\bchown\s+-R\s+\S+\s+/(\s|$)|shutil\.rmtree\(\s*(os\.path\.expanduser\(\s*['\x22]~['\x22]\s*\)|['\x22]/['\x22]|Path\.home\(\)|os\.environ\[['\x22]HOME)|(rimraf|rmSync|rmdirSync|fs\.rm)\(.{0,40}(os\.homedir\(\)|['\x22]/['\x22])|\bfind\s+(/|~|\$HOME)\s+.{0,60}-delete\b|Remove-Item.{0,60}-Recurse.{0,60}(C:\\|~|\$HOME)|\bformat\s+c:",
        detail: "wipes disks, the system or the home folder",
    },
    // Secrets in the code.
    Rule {
        kind: Kind::HardcodedSecret,
        pattern: r"-----BEGIN\s+(RSA\s+|OPENSSH\s+|EC\s+|DSA\s+|ENCRYPTED\s+)?PRIVATE\s+KEY-----|\bsk-(proj-|ant-)?[A-Za-z0-9_-]{20,}|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35}\b",
        detail: "a credential in the code",
    },
    // Shell strings run from code.
    Rule {
        kind: Kind::ShellString,
        pattern: r"\bos\.(system|popen)\s*\(|\bsubprocess\.\w+\(.{0,300}\bshell\s*=\s*True|\bcommands\.getoutput\(|child_process.{0,60}\.(exec|execSync)\s*\(|\bexecSync\s*\(|\bRuntime\.getRuntime\(\)\.exec\(|\b(shell_exec|passthru|proc_open)\s*\(|\bIO\.popen\(|%x\{|\bspawn\(\s*['\x22](/bin/)?(ba)?sh['\x22]",
        detail: "runs a shell command string",
    },
    Rule {
        kind: Kind::Obfuscation,
        pattern: r"(\\x[0-9a-fA-F]{2}){8,}|fromCharCode\((\s*\d+\s*,){6,}|(chr\(\s*\d+\s*\)\s*\+\s*){5,}|\[::-1\]|\bcodecs\.decode\([^)]*rot.?13|\btr\s+['\x22]?a-zA-Z['\x22]?\s+['\x22]?n-za-mN-ZA-M",
        detail: "text spelled so that it cannot be read directly",
    },
];

/// Key-like names assigned a literal long enough to be a real secret.
const ASSIGNED_SECRET: &str = r#"(?i)\b\w*(key|token|secret|passw(or)?d|auth)\w*['"]?\s*[:=]\s*['"]([A-Za-z0-9_\-+/=.]{12,})['"]"#;

/// Values that are placeholders, not secrets.
const PLACEHOLDER: &str =
    r"(?i)your|example|xxx|changeme|placeholder|dummy|redacted|sample|test|<|\$\{|\*\*\*";

/// Calls that run code given as data.
const EXEC_CALL: &str = r"(^|[^.\w])(exec|eval)\s*\(|\bnew\s+Function\s*\(|\bFunction\s*\(\s*atob|\bvm\.runIn\w*Context\(|\bmarshal\.loads\(|\bpickle\.loads\(|\bcompile\(.{0,80}['\x22]exec['\x22]|\bInvoke-Expression\b|\biex\b";

/// Calls that decode or fetch data (what an [`EXEC_CALL`] must not run).
const DECODE_OR_FETCH: &str = r"b64decode|\bbase64\b|a2b_base64|\batob\(|Buffer\.from\([^)]*['\x22](base64|hex)['\x22]|bytes\.fromhex|unhexlify|codecs\.decode|zlib\.decompress|gzip\.decompress|lzma\.decompress|fromCharCode|\bchr\(|\^\s*(0x[0-9a-f]+|\d+|key|k)\b|\[::-1\]|\brot13\b|FromBase64String|\burlopen\(|requests\.get\(|\bfetch\(|http\.get\(|axios\.get\(|DownloadString";

/// Code that opens a network connection.
const SOCKET_CONNECT: &str = r"\.connect\(\s*\(|\bsocket\.create_connection\(|\bnet\.(connect|createConnection)\(|new\s+net\.Socket\(|\bTCPSocket\.(new|open)\(|\bfsockopen\(|Net\.Sockets\.TCPClient|\bsocket\(\s*(AF_INET|PF_INET|S,)|\bdial\(\s*['\x22]tcp";

/// Code that hands a shell its standard streams.
const SHELL_WIRING: &str = r"\bdup2\(|\bpty\.spawn\(|\bspawn\(\s*['\x22](/bin/)?(ba|z)?sh['\x22]|['\x22]/bin/(ba|z)?sh['\x22]\s*,\s*['\x22]-i['\x22]|\bexec\(\s*['\x22]/bin/(ba|z)?sh|Popen\(\s*\[\s*['\x22]/bin/(ba|z)?sh|cmd\.exe|\bstdio\s*:\s*\[\s*client|\.pipe\(\s*\w+\.stdin\)";

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
    assigned_secret: Regex,
    placeholder: Regex,
    exec_call: Regex,
    decode_or_fetch: Regex,
    socket_connect: Regex,
    shell_wiring: Regex,
    joiners: Regex,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let pats: Vec<String> = RULES.iter().map(|r| format!("(?i){}", r.pattern)).collect();
        let re = |p: &str| static_regex(&format!("(?i){p}"));
        Compiled {
            set: static_regex_set(&pats),
            each: pats.iter().map(|p| static_regex(p)).collect(),
            assigned_secret: static_regex(ASSIGNED_SECRET),
            placeholder: static_regex(PLACEHOLDER),
            exec_call: re(EXEC_CALL),
            decode_or_fetch: re(DECODE_OR_FETCH),
            socket_connect: re(SOCKET_CONNECT),
            shell_wiring: re(SHELL_WIRING),
            joiners: static_regex(r#"['"`]\s*(\+|,|\.\.|\.)\s*['"`]"#),
        }
    })
}

/// The views of a line the rules read: as written, with joined string pieces as a path
/// (`".ssh", "id_rsa"` → `".ssh/id_rsa"`), and glued (`"." + "ssh"` → `".ssh"`).
/// Runs of whitespace count as one space (the rules read `\s+` and `\s*` alike), so a line
/// padded with megabytes of spaces costs what its words cost.
fn views(line: &str) -> Vec<String> {
    let re = compiled();
    let line = &collapse_whitespace(line);
    let mut v = vec![line.to_string()];
    if re.joiners.is_match(line) {
        v.push(re.joiners.replace_all(line, "/").into_owned());
        v.push(re.joiners.replace_all(line, "").into_owned());
    }
    v
}

/// `line` with every run of whitespace turned into one space.
fn collapse_whitespace(line: &str) -> String {
    let mut out = String::with_capacity(line.len().min(4096));
    let mut in_space = false;
    for ch in line.chars() {
        if ch.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(ch);
            in_space = false;
        }
    }
    out
}

/// Scans normalised `lines` with the rules.
pub fn scan(labels: &Labels<'_>, lines: &[String], c: &mut Collector) {
    scan_lines_only(labels, lines, c);
    per_file(labels, lines, c);
}

/// The line rules only (for the strings of a binary, where unrelated strings sit side by side
/// and per-file combinations would mean nothing).
pub fn scan_lines_only(labels: &Labels<'_>, lines: &[String], c: &mut Collector) {
    let re = compiled();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        for view in views(line) {
            if !re.set.is_match(&view) {
                continue;
            }
            for k in re.set.matches(&view).iter() {
                let r = &RULES[k];
                let m = re.each[k].find(&view).map(|m| m.as_str()).unwrap_or(&view);
                c.add(
                    r.kind,
                    labels.path,
                    n,
                    line,
                    &labels.detail(
                        n,
                        &format!("{}: `{}`", r.detail, super::hidden::excerpt(m, 100)),
                    ),
                );
            }
        }
        assigned_secret(labels, n, line, c);
        super::shell::raw_ip(labels, n, line, c);
    }
}

/// `NAME_KEY = "long literal"` where the literal is not a placeholder.
fn assigned_secret(labels: &Labels<'_>, n: usize, line: &str, c: &mut Collector) {
    let re = compiled();
    if let Some(cap) = re.assigned_secret.captures(line)
        && let Some(value) = cap.get(3)
        && !re.placeholder.is_match(value.as_str())
        && value.as_str().chars().any(|ch| ch.is_ascii_digit())
        && value.as_str().chars().any(|ch| ch.is_ascii_alphabetic())
    {
        c.add(
            Kind::HardcodedSecret,
            labels.path,
            n,
            line,
            "a key or token written into the code",
        );
    }
}

/// Rules over a whole file: code that runs what it decoded or downloaded, and a network
/// connection wired to a shell.
fn per_file(labels: &Labels<'_>, lines: &[String], c: &mut Collector) {
    let re = compiled();
    let has = |r: &Regex| lines.iter().position(|l| r.is_match(l));
    if let (Some(exec), Some(src)) = (
        lines
            .iter()
            .position(|l| re.exec_call.is_match(l) && !l.contains("literal_eval")),
        has(&re.decode_or_fetch),
    ) {
        c.add(
            Kind::ObfuscatedExecution,
            labels.path,
            exec + 1,
            &lines[exec],
            &format!(
                "runs data as code, and the file decodes or downloads data (line {}: `{}`)",
                src + 1,
                super::hidden::excerpt(&lines[src], 80)
            ),
        );
    }
    if let (Some(conn), Some(wire)) = (has(&re.socket_connect), has(&re.shell_wiring)) {
        c.add(
            Kind::ReverseShell,
            labels.path,
            conn + 1,
            &lines[conn],
            &format!(
                "connects out and hands the connection a shell (line {}: `{}`)",
                wire + 1,
                super::hidden::excerpt(&lines[wire], 80)
            ),
        );
    }
}
