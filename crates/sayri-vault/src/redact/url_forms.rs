//! What becomes of a secret used in a URL: the values URL tools derive from it, and the
//! percent-encoded spellings a second decoding would still hide.
//!
//! * **Decoded values**: a secret put into a URL unencoded is percent-decoded by whoever reads
//!   the URL (`git credential fill` prints `%41` as `A`, and Basic credentials carry the decoded
//!   value), and form decoding also turns `+` into a space.
//! * **Pieces**: an unencoded `@`, `:`, `/`, `?`, `#`, `&` or `=` makes a URL parser split the
//!   secret, and tools then print the parts on their own (`git` takes the text after the first
//!   `@` as the host). Every part that starts at the secret's start or after such a character
//!   and ends at its end or before one is a derived value — when it is long and varied enough
//!   to be told from ordinary words (at least [`MIN_PIECE_CHARS`] characters of at least
//!   [`MIN_PIECE_CLASSES`] kinds: lower case, upper case, digits, other).
//! * **Encoded spellings**: the secret percent-encoded as URL libraries do (everything but
//!   unreserved characters, optionally keeping `/`; form encoding with `+` for a space), in
//!   upper- and lower-case hex. The redactor's percent-decoded view already covers any single
//!   encoding; these literal forms catch a *double* encoding (`%252B`), which the view decodes
//!   once into one of them.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use zeroize::Zeroizing;

/// Characters at which a URL parser splits an unencoded secret.
const URL_DELIMITERS: &[char] = &['@', ':', '/', '?', '#', '&', '='];

/// Shortest piece kept as a derived value, in characters.
pub(crate) const MIN_PIECE_CHARS: usize = 8;

/// Fewest kinds of character (lower, upper, digit, other) a piece must mix.
pub(crate) const MIN_PIECE_CLASSES: usize = 3;

/// Everything but unreserved characters (`A-Z a-z 0-9 - . _ ~`), as `quote(s, safe="")`.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// As [`COMPONENT`] but keeping `/` (`quote(s)`, path segments).
const PATH: &AsciiSet = &COMPONENT.remove(b'/');

/// Values derived from `secret` by URL decoding and URL parsing (see the module docs), not
/// including `secret` itself. Each is searched in every encoded form, like a secret.
pub(crate) fn url_values(secret: &str) -> Vec<Zeroizing<String>> {
    let mut out: Vec<Zeroizing<String>> = Vec::new();
    for plus_space in [false, true] {
        let decoded = percent_decode(secret, plus_space);
        if *decoded != *secret {
            out.push(decoded);
        }
    }
    out.extend(pieces(secret).into_iter().map(Zeroizing::new));
    out.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
    out.dedup_by(|a, b| a.as_str() == b.as_str());
    out
}

/// Literal percent-encoded spellings of `secret` (see the module docs); empty when it has
/// nothing to encode.
pub(crate) fn percent_spellings(secret: &str) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out = Vec::new();
    let component = Zeroizing::new(utf8_percent_encode(secret, COMPONENT).to_string());
    if *component == *secret {
        return out;
    }
    let path = Zeroizing::new(utf8_percent_encode(secret, PATH).to_string());
    // Every `%` of the encoding starts an escape, so `%20` stands for a space only.
    let form = Zeroizing::new(component.replace("%20", "+"));
    for s in [&component, &path, &form] {
        out.push(Zeroizing::new(s.as_bytes().to_vec()));
        out.push(Zeroizing::new(lower_hex_escapes(s).into_bytes()));
    }
    out
}

/// The parts of `secret` between URL delimiters that are long and varied enough.
fn pieces(secret: &str) -> Vec<String> {
    let bounds: Vec<usize> = secret
        .char_indices()
        .filter(|(_, c)| URL_DELIMITERS.contains(c))
        .map(|(i, _)| i)
        .collect();
    if bounds.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut keep = |s: &str| {
        if s.len() < secret.len() && distinctive(s) {
            out.push(s.to_string());
        }
    };
    let mut prev = 0;
    for &b in &bounds {
        keep(&secret[..b]);
        keep(&secret[prev..b]);
        keep(&secret[b + 1..]);
        prev = b + 1;
    }
    keep(&secret[prev..]);
    out
}

/// Long enough and mixed enough to be told from ordinary words.
fn distinctive(s: &str) -> bool {
    if s.chars().count() < MIN_PIECE_CHARS {
        return false;
    }
    let classes = [
        s.chars().any(|c| c.is_lowercase()),
        s.chars().any(|c| c.is_uppercase()),
        s.chars().any(|c| c.is_ascii_digit()),
        s.chars().any(|c| !c.is_alphanumeric()),
    ];
    classes.iter().filter(|c| **c).count() >= MIN_PIECE_CLASSES
}

/// `%XX` escapes (either case) decoded once; with `plus_space`, `+` becomes a space. Invalid
/// escapes and bytes that would not form UTF-8 are kept as they are.
fn percent_decode(s: &str, plus_space: bool) -> Zeroizing<String> {
    let spaced;
    let text = if plus_space {
        spaced = Zeroizing::new(s.replace('+', " "));
        spaced.as_str()
    } else {
        s
    };
    let bytes = Zeroizing::new(percent_encoding::percent_decode_str(text).collect::<Vec<u8>>());
    match std::str::from_utf8(&bytes) {
        Ok(v) => Zeroizing::new(v.to_string()),
        Err(_) => Zeroizing::new(text.to_string()),
    }
}

/// Lower-cases the two hex digits of every `%XX` escape.
fn lower_hex_escapes(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_at_url_delimiters_and_keep_only_distinctive_ones() {
        let p = pieces("postgres://app:Zq8-vN3x+Lr5@localhost:5432/appdb");
        assert!(p.contains(&"Zq8-vN3x+Lr5".to_string()), "{p:?}");
        assert!(p.contains(&"Zq8-vN3x+Lr5@localhost:5432/appdb".to_string()));
        assert!(!p.iter().any(|s| s == "postgres" || s == "localhost"));
        assert!(pieces("no-delimiters-Here1").is_empty());
    }

    #[test]
    fn decoded_values_and_spellings() {
        let v = url_values("a+b%41cdef");
        let v: Vec<&str> = v.iter().map(|s| s.as_str()).collect();
        assert!(v.contains(&"a+bAcdef") && v.contains(&"a bAcdef"), "{v:?}");
        let s = percent_spellings("x y+z/w");
        let s: Vec<String> = s
            .iter()
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
            .collect();
        for want in [
            "x%20y%2Bz%2Fw",
            "x%20y%2Bz/w",
            "x+y%2Bz%2Fw",
            "x%20y%2bz%2fw",
        ] {
            assert!(s.contains(&want.to_string()), "{want} not in {s:?}");
        }
        assert!(percent_spellings("plain-Value_1").is_empty());
    }
}
