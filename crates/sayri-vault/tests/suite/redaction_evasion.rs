//! Red-team cases of redaction. A secret split by a line break keeps being caught in a stream
//! even when the match must be held back. One-line dumps of a secret by the real tools (`rev`,
//! `od -tx1`, `hexdump -C`, `xxd`) are redacted in one-shot and streamed output (the secret here
//! fits on one dump line; `dump_redaction.rs` covers dumps over several lines).

use sayri_vault::SecretRedactor;
use std::process::Command;
use zeroize::Zeroizing;

const SHORT: &str = "sy-Q4~kR1J+dBi2e";

fn r() -> SecretRedactor {
    SecretRedactor::new(vec![("SHORT_TOKEN".into(), Zeroizing::new(SHORT.into()))])
}

/// Output of `printf %s SECRET | sh -c PIPELINE`, run for real.
fn dump(pipeline: &str) -> String {
    let o = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("printf %s \"$S\" | {pipeline}"))
        .env("S", SHORT)
        .output()
        .unwrap();
    assert!(o.status.success(), "{pipeline}: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// No 2-character piece of `form` from the middle of the dump survives.
fn assert_redacted(pipeline: &str, out: &str, original: &str) {
    assert!(out.contains("$SECRET:SHORT_TOKEN"), "{pipeline}: {out:?}");
    // The tell-tale middle of the secret (bytes 4..12) in plain, hex and reversed form is gone.
    let middle = &SHORT[4..12];
    let hex: String = middle.bytes().map(|b| format!("{b:02x}")).collect();
    let flat: String = out
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect::<String>()
        .to_ascii_lowercase();
    let rev: String = middle.chars().rev().collect();
    for piece in [middle.to_ascii_lowercase(), hex, rev.to_ascii_lowercase()] {
        assert!(
            !flat.contains(&piece),
            "{pipeline}: {piece:?} survived in {out:?} (from {original:?})"
        );
    }
}

#[test]
fn one_line_dumps_of_a_secret_are_redacted() {
    for pipeline in [
        "rev",
        "od -An -tx1",
        "od -An -tx1 | tr a-f A-F",
        "hexdump -C",
        "xxd",
        "xxd -u",
        "od -An -tx1 -v | sed 's/^ //; s/ /:/g'",
    ] {
        let original = dump(pipeline);
        let out = r().redact(&original);
        assert_redacted(pipeline, &out, &original);
        // Streamed in small chunks, the result is the same.
        let mut s = r().stream();
        let mut streamed = String::new();
        let bytes = original.as_bytes();
        for chunk in bytes.chunks(5) {
            streamed.push_str(&s.push(std::str::from_utf8(chunk).unwrap()));
        }
        streamed.push_str(&s.finish());
        assert_eq!(streamed, out, "{pipeline}: stream differs");
    }
}

#[test]
fn ordinary_text_near_the_secret_forms_is_kept() {
    let text = "sy - Q 4 done; 73 79 2d 51 ok; ed2i hello";
    assert_eq!(r().redact(text), text);
}

#[test]
fn a_held_match_keeps_the_look_behind_that_found_it() {
    // A secret that ends with its own first character, split after 2 bytes by a line break (a
    // `\r` progress line does the same). Its last byte could start another copy, so the stream
    // holds the match back; the look-behind before the break that completes the match must stay
    // until the match is emitted, or the rest of the secret leaks when the stream ends.
    let secret = "zQ9-kx7Wp3z";
    let r = SecretRedactor::new(vec![("LOOP".into(), Zeroizing::new(secret.into()))]);
    for sep in ["\n", "\r"] {
        let mut s = r.stream();
        let mut out = s.push(&format!("value: zQ{sep}"));
        out.push_str(&s.push(&secret[2..]));
        out.push_str(&s.finish());
        assert_eq!(out, r.redact(&format!("value: zQ{sep}{}", &secret[2..])));
        assert!(!out.contains("9-kx7Wp3"), "leaked: {out:?}");
    }
}
