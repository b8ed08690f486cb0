//! Helpers shared by the redaction tests.

/// A secret with `~`, `+` and `/` in it (characters percent-encoding and base64 treat specially).
pub const TOKEN: &str = "sy-cS~ke4R1J+dBi2ewQr8t4/lC4";

/// No 8-character substring of `secret` survives in `text` once `\r` and `\n` are removed.
pub fn assert_no_8char_piece(text: &str, secret: &str) {
    let flat: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    let chars: Vec<char> = secret.chars().collect();
    for w in chars.windows(8) {
        let piece: String = w.iter().collect();
        assert!(!flat.contains(&piece), "{piece:?} leaked in {text:?}");
    }
}

/// Lower-cases the hex digits of every `%XX` escape (and nothing else).
pub fn lower_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut left = 0;
    for c in s.chars() {
        if c == '%' {
            left = 2;
            out.push(c);
        } else if left > 0 {
            left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
