//! The encoded forms of one secret that the redactor searches for as literal byte patterns.
//!
//! Forms that are *decodings* of the text (percent-encoding, JSON escapes, line breaks) are not listed
//! here: [`super::decoded_views`] decodes the text instead, so any subset of escaped characters is
//! covered. Here live the forms that change every byte: hex and base64.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use zeroize::Zeroizing;

/// Shortest pattern kept, in bytes; shorter fragments would match ordinary text.
pub(crate) const MIN_PATTERN_LEN: usize = 4;

/// Every literal pattern for `secret`: the plain bytes (and the same with `\r`/`\n` removed when the
/// secret spans lines), hex in lower and upper case, and base64 in the standard and URL-safe alphabets
/// at each of the 3 byte offsets the secret can have inside a longer encoded stream.
///
/// For base64 at offset `k` (the secret preceded by `k` unknown bytes in the same 3-byte group), only
/// the characters that depend on secret bits alone are certain; that *core* is one pattern. The same
/// core followed by the final, partly padded characters (as produced when the secret ends the stream),
/// with and without `=` padding, are two more, so a secret encoded on its own is replaced whole.
pub(crate) fn encoded_forms(secret: &str) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out: Vec<Zeroizing<Vec<u8>>> = Vec::new();
    let plain = secret.as_bytes();
    out.push(Zeroizing::new(plain.to_vec()));
    if plain.contains(&b'\n') || plain.contains(&b'\r') {
        out.push(Zeroizing::new(
            plain
                .iter()
                .copied()
                .filter(|b| *b != b'\n' && *b != b'\r')
                .collect(),
        ));
    }
    out.push(Zeroizing::new(hex::encode(plain).into_bytes()));
    out.push(Zeroizing::new(hex::encode_upper(plain).into_bytes()));
    separated_forms(secret, &mut out);
    for engine in [&STANDARD, &URL_SAFE] {
        for offset in 0..3usize {
            base64_forms(engine, plain, offset, &mut out);
        }
    }
    out.retain(|p| p.len() >= MIN_PATTERN_LEN);
    out.sort_unstable_by(|a, b| a.as_slice().cmp(b.as_slice()));
    out.dedup_by(|a, b| a.as_slice() == b.as_slice());
    out
}

/// Forms that dump tools and one-liners print on one line: the characters reversed (`rev`); hex
/// bytes in either case separated by a space, `:` or `-` (`od -An -tx1`, `hexdump`, MAC-style),
/// prefixed by `\x` or written as `0x67, ` (`xxd -i`), and grouped by two bytes as `xxd` prints
/// them (at either byte alignment). Dumps over several lines, with offsets and text columns
/// between the pieces, are read back by the dump views (`dump_views`).
fn separated_forms(secret: &str, out: &mut Vec<Zeroizing<Vec<u8>>>) {
    let rev: String = secret.chars().rev().collect();
    out.push(Zeroizing::new(rev.into_bytes()));
    let plain = secret.as_bytes();
    for upper in [false, true] {
        let pair = |b: u8| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        };
        let pairs: Vec<String> = plain.iter().map(|b| pair(*b)).collect();
        for sep in [" ", ":", "-"] {
            out.push(Zeroizing::new(pairs.join(sep).into_bytes()));
        }
        let prefixed: String = pairs.iter().map(|p| format!("\\x{p}")).collect();
        out.push(Zeroizing::new(prefixed.into_bytes()));
        let c_array = pairs
            .iter()
            .map(|p| format!("0x{p}"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Zeroizing::new(c_array.into_bytes()));
        // `hexdump -C`: one space between bytes, two after every eighth byte of the dump.
        for align in 0..8usize {
            let mut spaced = String::new();
            for (i, p) in pairs.iter().enumerate() {
                if i > 0 {
                    spaced.push_str(if (i + align) % 8 == 0 { "  " } else { " " });
                }
                spaced.push_str(p);
            }
            out.push(Zeroizing::new(spaced.into_bytes()));
        }
        // xxd groups: a space after every second byte, counted from the start of the dump.
        for parity in [0usize, 1] {
            let mut grouped = String::new();
            for (i, p) in pairs.iter().enumerate() {
                grouped.push_str(p);
                if (i + parity) % 2 == 1 && i + 1 < pairs.len() {
                    grouped.push(' ');
                }
            }
            out.push(Zeroizing::new(grouped.into_bytes()));
        }
    }
}

fn base64_forms(
    engine: &base64::engine::GeneralPurpose,
    plain: &[u8],
    offset: usize,
    out: &mut Vec<Zeroizing<Vec<u8>>>,
) {
    let mut input = Zeroizing::new(vec![0u8; offset]);
    input.extend_from_slice(plain);
    let encoded = Zeroizing::new(engine.encode(input.as_slice()).into_bytes());
    // First character that depends on secret bits only: character i of the first group covers
    // bits 6i..6i+6, the unknown prefix covers bits 0..8*offset.
    let start = match offset {
        0 => 0,
        1 => 2,
        _ => 3,
    };
    let total = offset + plain.len();
    let full_chars = total / 3 * 4;
    let rem = total % 3;
    // In a trailing partial group of `rem` secret bytes, the first `rem` characters are pure.
    let core_end = full_chars + rem;
    let tail_unpadded_end = if rem == 0 {
        full_chars
    } else {
        full_chars + rem + 1
    };
    for end in [core_end, tail_unpadded_end, encoded.len()] {
        if end > start && end <= encoded.len() {
            out.push(Zeroizing::new(encoded[start..end].to_vec()));
        }
    }
}
