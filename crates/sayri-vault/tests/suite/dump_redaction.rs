//! Multi-line dumps of a secret longer than one dump line, printed by the real tools (`xxd`,
//! `hexdump`, `hd`, `od`), at every byte offset inside the line: the hex bytes, the little-endian
//! words, the `od -c` fields and the text column are all redacted, in one-shot and streamed
//! output alike, and the rest of the dump is kept.

use sayri_vault::SecretRedactor;
use std::process::Command;
use zeroize::Zeroizing;

/// 37 bytes: longer than two 16-byte dump lines, with URL, base64 and shell-special characters.
const LONG: &str = "dm-7Qx+Lp/2Zr@Kw:9%Vb=Tn4~Hs8Jc_Yf1Ge";

/// Every dump command under test.
const DUMPS: &[&str] = &[
    "xxd",
    "xxd -g1",
    "xxd -u",
    "xxd -c 8",
    "xxd -c 12 -g 4",
    "xxd -e",
    "hexdump -C",
    "hd",
    "hexdump",
    "hexdump -c",
    "od -An -tx1",
    "od -tx1",
    "od -tx1z",
    "od -Ax -tx1z -w8",
    "od -x",
    "od -c",
    "od -An -c",
];

fn r() -> SecretRedactor {
    SecretRedactor::new(vec![("LONG_TOKEN".into(), Zeroizing::new(LONG.into()))])
}

/// Output of `printf '%s%s\n' PREFIX SECRET | DUMP`, run for real.
fn dump(prefix: &str, tool: &str) -> String {
    let o = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("printf '%s%s\\n' \"$P\" \"$S\" | {tool}"))
        .env("P", prefix)
        .env("S", LONG)
        .output()
        .unwrap();
    assert!(o.status.success(), "{tool}: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// Hex spellings of every 4-byte window of the secret: in order, reversed (a little-endian
/// word) and with each byte pair swapped (16-bit words at either alignment).
fn hex_windows() -> Vec<String> {
    let b = LONG.as_bytes();
    let mut out = Vec::new();
    for w in b.windows(4) {
        out.push(hex::encode(w));
        let rev: Vec<u8> = w.iter().rev().copied().collect();
        out.push(hex::encode(rev));
        out.push(hex::encode([w[1], w[0], w[3], w[2]]));
    }
    out
}

/// Nothing of the secret is left in `out`: with whitespace removed, no 4-character piece of its
/// text (text columns, `od -c` fields) and no 4-byte window in hex (any byte order).
fn assert_no_piece(tool: &str, out: &str, original: &str) {
    let flat: String = out.chars().filter(|c| !c.is_whitespace()).collect();
    let chars: Vec<char> = LONG.chars().collect();
    for w in chars.windows(4) {
        let piece: String = w.iter().collect();
        assert!(
            !flat.contains(&piece),
            "{tool}: {piece:?} survived in\n{out}\n(from\n{original})"
        );
    }
    let lower = flat.to_ascii_lowercase();
    for h in hex_windows() {
        assert!(
            !lower.contains(&h),
            "{tool}: hex {h} survived in\n{out}\n(from\n{original})"
        );
    }
}

#[test]
fn multi_line_dumps_of_a_long_secret_are_redacted_at_every_offset() {
    let r = r();
    for tool in DUMPS {
        for prefix_len in [0usize, 1, 3, 7, 8, 13, 15, 16, 21] {
            let prefix = "k=ab".repeat(6)[..prefix_len].to_string();
            let original = dump(&prefix, tool);
            assert!(
                original.lines().count() >= 3,
                "{tool}: the dump spans lines: {original}"
            );
            let out = r.redact(&original);
            assert!(
                out.contains("$SECRET:LONG_TOKEN"),
                "{tool} at {prefix_len}: no marker in\n{out}"
            );
            assert_no_piece(tool, &out, &original);
            // The dump before the secret is kept: its first word (the offset, or a byte of the
            // prefix) starts the output.
            if prefix_len > 0 {
                let first = original.split_whitespace().next().unwrap();
                assert!(out.trim_start().starts_with(first), "{tool}: {out}");
            }
        }
    }
}

#[test]
fn streamed_dumps_equal_one_shot_whatever_the_chunks() {
    let r = r();
    for tool in DUMPS {
        let original = dump("token=", tool);
        let one_shot = r.redact(&original);
        for size in [1usize, 3, 7, 16, 50, 4096] {
            let mut s = r.stream();
            let mut streamed = String::new();
            for chunk in original.as_bytes().chunks(size) {
                streamed.push_str(&s.push(std::str::from_utf8(chunk).unwrap()));
                // Nothing emitted so far may carry a piece of the secret.
                assert_no_piece(tool, &streamed, &original);
            }
            streamed.push_str(&s.finish());
            assert_eq!(streamed, one_shot, "{tool} in chunks of {size}");
        }
    }
}

#[test]
fn a_dump_without_the_secret_is_kept_and_held_back_at_most_one_line() {
    let r = r();
    let text_in = "ordinary output: build 42 finished, 3 warnings, see log at /var/tmp/x\n";
    for tool in DUMPS {
        let o = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("printf %s \"$T\" | {tool}"))
            .env("T", text_in)
            .output()
            .unwrap();
        let text = String::from_utf8(o.stdout).unwrap();
        assert_eq!(r.redact(&text), text, "{tool}");
        let mut s = r.stream();
        let mut out = String::new();
        for line in text.split_inclusive('\n') {
            out.push_str(&s.push(line));
            // A line whose last bytes could start the secret waits for the next line, no longer.
            assert!(
                s.pending_len() <= line.len(),
                "{tool}: more than a line held"
            );
        }
        out.push_str(&s.finish());
        assert_eq!(out, text, "{tool}");
    }
}
