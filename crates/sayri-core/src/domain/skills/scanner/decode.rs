//! Encoded text: base64 and hex literals, `\x` escape runs and character-code lists are
//! decoded, and decoded text that reads as text is scanned again like a file (up to
//! [`super::MAX_DECODE_DEPTH`] levels). What it hides is reported at the line that hides it,
//! with the decoded text shown.

use super::{Collector, Kind, Labels, MAX_DECODE_DEPTH, hidden, scan_text};
use crate::static_regex::static_regex;
use base64::Engine;
use regex::Regex;
use std::sync::OnceLock;

/// Inner findings at least this heavy make the encoded text a [`Kind::DecodedPayload`].
const DANGEROUS: u32 = 40;

struct Compiled {
    base64: Regex,
    hex: Regex,
    escapes: Regex,
    char_codes: Regex,
    chr_chain: Regex,
    data_uri: Regex,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| Compiled {
        base64: static_regex(r"[A-Za-z0-9+/_-]{16,}={0,2}"),
        hex: static_regex(r"\b(?:[0-9a-fA-F]{2}){10,}\b"),
        escapes: static_regex(r"(?:\\x[0-9a-fA-F]{2}|\\u00[0-9a-fA-F]{2}|\\[0-7]{3}){6,}"),
        char_codes: static_regex(
            r"(?:fromCharCode|chr|bytes|bytearray|\[)\(?\s*((?:\d{2,3}\s*,\s*){5,}\d{2,3})",
        ),
        chr_chain: static_regex(r"(?:chr\(\s*\d{2,3}\s*\)\s*\+?\s*){5,}"),
        data_uri: static_regex(r"data:(image|font|audio|video)/[\w.+-]+;base64,"),
    })
}

/// Decodes what `lines` encode and scans the decoded text.
pub fn scan(labels: &Labels<'_>, lines: &[String], c: &mut Collector, depth: usize) {
    if depth >= MAX_DECODE_DEPTH {
        return;
    }
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        for (how, decoded) in decodings(line) {
            inspect(labels, n, line, how, &decoded, c, depth);
        }
    }
}

/// Every decoding of `line` that yields text: `(how, text)`.
fn decodings(line: &str) -> Vec<(&'static str, String)> {
    let re = compiled();
    let mut out = Vec::new();
    let skip_media = re.data_uri.is_match(line);
    if !skip_media {
        for m in re.base64.find_iter(line) {
            let s = m.as_str();
            if !s
                .chars()
                .any(|c| c.is_ascii_digit() || c == '+' || c == '/' || c == '=')
                && s.len() < 40
            {
                continue;
            }
            if let Some(t) = base64_text(s) {
                out.push(("base64", t));
            }
        }
    }
    for m in re.hex.find_iter(line) {
        if let Ok(bytes) = hex::decode(m.as_str())
            && let Some(t) = as_text(&bytes)
        {
            out.push(("hex", t));
        }
    }
    for m in re.escapes.find_iter(line) {
        if let Some(t) = unescape(m.as_str()) {
            out.push(("escape sequences", t));
        }
    }
    for cap in re.char_codes.captures_iter(line) {
        let bytes: Vec<u8> = cap[1]
            .split(',')
            .filter_map(|x| x.trim().parse::<u8>().ok())
            .collect();
        if let Some(t) = as_text(&bytes) {
            out.push(("character codes", t));
        }
    }
    for m in re.chr_chain.find_iter(line) {
        let bytes: Vec<u8> = m
            .as_str()
            .split("chr(")
            .filter_map(|x| x.split(')').next()?.trim().parse::<u8>().ok())
            .collect();
        if let Some(t) = as_text(&bytes) {
            out.push(("character codes", t));
        }
    }
    out
}

/// Base64 (standard or URL-safe, padded or not) that decodes to text.
pub fn base64_text(s: &str) -> Option<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let trimmed = s.trim_end_matches('=');
    [STANDARD, URL_SAFE]
        .iter()
        .find_map(|e| e.decode(s).ok())
        .or_else(|| {
            [STANDARD_NO_PAD, URL_SAFE_NO_PAD]
                .iter()
                .find_map(|e| e.decode(trimmed).ok())
        })
        .and_then(|b| as_text(&b))
}

/// `\x41\101\u0041` → text.
pub fn unescape(s: &str) -> Option<String> {
    let mut bytes = Vec::new();
    let mut rest = s;
    while let Some(r) = rest.strip_prefix('\\') {
        let (val, len) = if let Some(h) = r.strip_prefix('x') {
            (u8::from_str_radix(h.get(..2)?, 16).ok()?, 3)
        } else if let Some(h) = r.strip_prefix("u00") {
            (u8::from_str_radix(h.get(..2)?, 16).ok()?, 5)
        } else {
            (u8::from_str_radix(r.get(..3)?, 8).ok()?, 3)
        };
        bytes.push(val);
        rest = &r[len..];
    }
    as_text(&bytes)
}

/// UTF-8 that is mostly printable (so a random-looking word is not "decoded").
pub fn as_text(bytes: &[u8]) -> Option<String> {
    let t = std::str::from_utf8(bytes).ok()?;
    let total = t.chars().count();
    if total < 4 {
        return None;
    }
    let printable = t
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r'))
        .count();
    let letters = t
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ')
        .count();
    (printable * 100 >= total * 95 && letters * 2 >= total).then(|| t.to_string())
}

/// Scans `decoded` (found at line `n`, decoded `how`) like a file; reports it when it hides
/// something, and adds what the scan found.
pub fn inspect(
    labels: &Labels<'_>,
    n: usize,
    line: &str,
    how: &str,
    decoded: &str,
    c: &mut Collector,
    depth: usize,
) {
    let label = format!("{} ({how} at line {n})", labels.path);
    let mut inner = Collector::default();
    scan_text(&label, decoded, &mut inner, depth + 1);
    let worst = inner.findings().iter().map(|f| f.weight).max().unwrap_or(0);
    if worst >= DANGEROUS {
        let kinds: Vec<&str> = {
            let mut k: Vec<&str> = inner
                .findings()
                .iter()
                .filter(|f| f.weight >= DANGEROUS)
                .map(|f| f.kind.title())
                .collect();
            k.dedup();
            k
        };
        c.add(
            Kind::DecodedPayload,
            labels.path,
            n,
            line,
            &labels.detail(
                n,
                &format!(
                    "{how} that decodes to: {} — {}",
                    hidden::excerpt(decoded, 160),
                    kinds.join("; ")
                ),
            ),
        );
    } else if decoded.len() >= 8 && (how == "escape sequences" || how == "character codes") {
        c.add(
            Kind::Obfuscation,
            labels.path,
            n,
            line,
            &labels.detail(
                n,
                &format!("{how} spell: {}", hidden::excerpt(decoded, 120)),
            ),
        );
    }
    for f in inner.findings() {
        c.add(f.kind, &f.file, f.line, &f.excerpt, &f.detail);
    }
}
