//! Decoded views of a text, each byte mapped back to the original bytes it came from.
//!
//! A secret can hide behind a decoding of the text rather than an encoding of the secret: line breaks
//! inserted by `fold` or a base64 wrapper, percent-escapes of any subset of its characters (upper or
//! lower hex digits, `+` for a space in form encoding), JSON string escapes (`\"`, `\/`, `\u00XX`,
//! surrogate pairs). Rather than enumerate every escaped variant of every secret, the redactor searches
//! the text *decoded* in each of these ways. Every view keeps, per decoded byte, the range of original
//! bytes that produced it, so a match maps back to the exact original span to replace.
//!
//! Views: {as is, with `\r` and `\n` removed} × {no decoding, percent-decoding, percent-decoding with
//! `+` as space, JSON unescaping}, plus the views of multi-line dumps ([`super::dump_views`]). A
//! view is built only when the text contains what it decodes.

use super::dump_views::{DumpView, build_dump_view, dump_kinds};

/// How a view decodes the (possibly line-stripped) text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoding {
    /// Bytes as they are.
    None,
    /// `%XX` (either case) becomes one byte; with `plus_space`, `+` becomes a space.
    Percent { plus_space: bool },
    /// JSON string escapes are decoded.
    Json,
    /// The bytes a multi-line hex or character dump shows (never combined with line stripping).
    Dump(DumpView),
}

/// One decoded view.
pub(crate) struct View {
    /// Decoded bytes.
    pub bytes: Vec<u8>,
    /// For each decoded byte, the first original byte of the unit that produced it.
    pub start: Vec<u32>,
    /// For each decoded byte, one past the last original byte of that unit.
    pub end: Vec<u32>,
    /// Original ranges of units longer than one byte (escapes, or escapes spanning stripped line
    /// breaks), in order; a cut inside one would change how the rest decodes.
    pub units: Vec<(u32, u32)>,
    /// In partial mode, the original offset of an escape left incomplete at the end of the text.
    pub incomplete_from: Option<usize>,
}

/// The base sequence a decoder reads: original bytes, optionally without `\r` and `\n`.
struct Base<'t> {
    bytes: std::borrow::Cow<'t, [u8]>,
    origin: Option<Vec<u32>>,
}

impl<'t> Base<'t> {
    /// The base of `raw`: without its line breaks when `strip`, with each byte's offset in `raw`
    /// recorded when `strip` and `map`.
    fn new(raw: &'t [u8], strip: bool, map: bool) -> Self {
        if strip {
            let mut bytes = Vec::with_capacity(raw.len());
            let mut origin = Vec::with_capacity(if map { raw.len() } else { 0 });
            for (i, &c) in raw.iter().enumerate() {
                if c != b'\n' && c != b'\r' {
                    bytes.push(c);
                    if map {
                        origin.push(i as u32);
                    }
                }
            }
            Base {
                bytes: std::borrow::Cow::Owned(bytes),
                origin: map.then_some(origin),
            }
        } else {
            Base {
                bytes: std::borrow::Cow::Borrowed(raw),
                origin: None,
            }
        }
    }

    fn origin(&self, i: usize) -> u32 {
        match &self.origin {
            Some(o) => o[i],
            None => i as u32,
        }
    }
}

/// Which views are worth building for `text`: (strip line breaks, decoding). In `partial` mode (a
/// streaming prefix) a dump view is also built for a last line that may still become a dump line;
/// without `whole_first_line` the text starts inside a line, which is then never a dump line.
pub(crate) fn view_kinds(
    text: &str,
    any_secret_has_space: bool,
    partial: bool,
    whole_first_line: bool,
) -> Vec<(bool, Decoding)> {
    let b = text.as_bytes();
    let has = |c: u8| b.contains(&c);
    let mut strips = vec![false];
    if has(b'\n') || has(b'\r') {
        strips.push(true);
    }
    let mut out = Vec::new();
    for strip in strips {
        out.push((strip, Decoding::None));
        if has(b'%') {
            out.push((strip, Decoding::Percent { plus_space: false }));
        }
        if any_secret_has_space && (has(b'+') || has(b'%')) {
            out.push((strip, Decoding::Percent { plus_space: true }));
        }
        if has(b'\\') {
            out.push((strip, Decoding::Json));
        }
    }
    let dumps = dump_kinds(text, partial, whole_first_line);
    for (wanted, view) in [
        (
            dumps.hex,
            DumpView::Hex {
                little_endian: false,
            },
        ),
        (
            dumps.hex_words,
            DumpView::Hex {
                little_endian: true,
            },
        ),
        (dumps.chars, DumpView::Chars),
        (dumps.text_column, DumpView::TextColumn),
    ] {
        if wanted {
            out.push((false, Decoding::Dump(view)));
        }
    }
    out
}

/// The decoded bytes of one view of `text`, without the map back to the original (a quick test
/// for any match before [`build_view`] maps it). The plain view borrows `text`.
pub(crate) fn view_bytes<'t>(
    text: &'t str,
    strip: bool,
    decoding: Decoding,
    whole_first_line: bool,
) -> std::borrow::Cow<'t, [u8]> {
    if !strip && decoding == Decoding::None {
        return std::borrow::Cow::Borrowed(text.as_bytes());
    }
    let view = if let Decoding::Dump(which) = decoding {
        build_dump_view(text, which, false, whole_first_line)
    } else {
        decode(text, strip, decoding, false, false)
    };
    std::borrow::Cow::Owned(view.bytes)
}

/// Builds one view of `text`. In `partial` mode (a streaming prefix) an escape cut off by the end of the
/// text is left out of the view and reported in [`View::incomplete_from`]; otherwise it is literal.
/// `whole_first_line` matters to dump views only (see [`view_kinds`]).
///
/// Texts longer than `u32::MAX` bytes are not supported (callers cap tool output far below that).
pub(crate) fn build_view(
    text: &str,
    strip: bool,
    decoding: Decoding,
    partial: bool,
    whole_first_line: bool,
) -> View {
    if let Decoding::Dump(which) = decoding {
        return build_dump_view(text, which, partial, whole_first_line);
    }
    decode(text, strip, decoding, partial, true)
}

/// Decodes `text` (line breaks stripped when `strip`); with `map`, records where each decoded
/// byte came from (else `start`, `end` and `units` stay empty).
fn decode(text: &str, strip: bool, decoding: Decoding, partial: bool, map: bool) -> View {
    let base = Base::new(text.as_bytes(), strip, map);
    let cap = if map { base.bytes.len() } else { 0 };
    let mut view = View {
        bytes: Vec::with_capacity(base.bytes.len()),
        start: Vec::with_capacity(cap),
        end: Vec::with_capacity(cap),
        units: Vec::new(),
        incomplete_from: None,
    };
    let b = &base.bytes;
    let n = b.len();
    let mut i = 0;
    while i < n {
        // Copy the run of bytes up to the next one that may start an escape in one go.
        let run_end = match decoding {
            Decoding::Percent { plus_space: true } => memchr::memchr2(b'%', b'+', &b[i..]),
            Decoding::Percent { plus_space: false } => memchr::memchr(b'%', &b[i..]),
            Decoding::Json => memchr::memchr(b'\\', &b[i..]),
            Decoding::None | Decoding::Dump(_) => None,
        }
        .map_or(n, |k| i + k);
        if run_end > i {
            view.bytes.extend_from_slice(&b[i..run_end]);
            if map {
                for k in i..run_end {
                    let o = base.origin(k);
                    view.start.push(o);
                    view.end.push(o + 1);
                }
            }
            i = run_end;
            continue;
        }
        let (decoded, used) = match decoding {
            // Dump views return early above.
            Decoding::None | Decoding::Dump(_) => (Decoded::One(b[i]), 1),
            Decoding::Percent { plus_space } => match percent_unit(&b[i..], plus_space) {
                Unit::Done(d, used) => (d, used),
                Unit::Incomplete if partial => {
                    view.incomplete_from = Some(base.origin(i) as usize);
                    break;
                }
                Unit::Incomplete => (Decoded::One(b[i]), 1),
            },
            Decoding::Json => match json_unit(&b[i..]) {
                Unit::Done(d, used) => (d, used),
                Unit::Incomplete if partial => {
                    view.incomplete_from = Some(base.origin(i) as usize);
                    break;
                }
                Unit::Incomplete => (Decoded::One(b[i]), 1),
            },
        };
        let (s, e) = if map {
            (base.origin(i), base.origin(i + used - 1) + 1)
        } else {
            (0, 0)
        };
        if e - s > 1 {
            view.units.push((s, e));
        }
        let mut push = |byte: u8| {
            view.bytes.push(byte);
            if map {
                view.start.push(s);
                view.end.push(e);
            }
        };
        match decoded {
            Decoded::One(c) => push(c),
            Decoded::Char(ch) => {
                let mut buf = [0u8; 4];
                for &c in ch.encode_utf8(&mut buf).as_bytes() {
                    push(c);
                }
            }
        }
        i += used;
    }
    view
}

enum Decoded {
    One(u8),
    Char(char),
}

enum Unit {
    /// Decoded value and the number of base bytes consumed.
    Done(Decoded, usize),
    /// An escape that the end of the text cut short.
    Incomplete,
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    let mut out = [0u8; 1];
    hex::decode_to_slice(two, &mut out).ok().map(|()| out[0])
}

fn percent_unit(b: &[u8], plus_space: bool) -> Unit {
    match b[0] {
        b'%' => {
            if b.len() >= 3 {
                match hex_byte(&b[1..3]) {
                    Some(v) => Unit::Done(Decoded::One(v), 3),
                    None => Unit::Done(Decoded::One(b'%'), 1),
                }
            } else if b[1..].iter().all(u8::is_ascii_hexdigit) {
                Unit::Incomplete
            } else {
                Unit::Done(Decoded::One(b'%'), 1)
            }
        }
        b'+' if plus_space => Unit::Done(Decoded::One(b' '), 1),
        c => Unit::Done(Decoded::One(c), 1),
    }
}

/// Parses `\uXXXX` at the start of `b` (`b[0] == b'\\'`, `b[1] == b'u'`).
fn json_u16(b: &[u8]) -> Option<Result<u16, ()>> {
    if b.len() < 6 {
        return if b[2..].iter().all(u8::is_ascii_hexdigit) {
            None
        } else {
            Some(Err(()))
        };
    }
    let mut out = [0u8; 2];
    match hex::decode_to_slice(&b[2..6], &mut out) {
        Ok(()) => Some(Ok(u16::from_be_bytes(out))),
        Err(_) => Some(Err(())),
    }
}

fn json_unit(b: &[u8]) -> Unit {
    if b[0] != b'\\' {
        return Unit::Done(Decoded::One(b[0]), 1);
    }
    let Some(&kind) = b.get(1) else {
        return Unit::Incomplete;
    };
    let simple = match kind {
        b'"' => Some(b'"'),
        b'\\' => Some(b'\\'),
        b'/' => Some(b'/'),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        _ => None,
    };
    if let Some(c) = simple {
        return Unit::Done(Decoded::One(c), 2);
    }
    if kind != b'u' {
        return Unit::Done(Decoded::One(b'\\'), 1);
    }
    let literal = Unit::Done(Decoded::One(b'\\'), 1);
    let first = match json_u16(b) {
        None => return Unit::Incomplete,
        Some(Err(())) => return literal,
        Some(Ok(u)) => u,
    };
    if (0xD800..0xDC00).contains(&first) {
        // High surrogate: needs `\uDC00`..`\uDFFF` next.
        let rest = &b[6..];
        if rest.is_empty() || (rest.len() == 1 && rest[0] == b'\\') {
            return Unit::Incomplete;
        }
        if rest.len() >= 2 && rest[0] == b'\\' && rest[1] == b'u' {
            return match json_u16(rest) {
                None => Unit::Incomplete,
                Some(Ok(low)) if (0xDC00..0xE000).contains(&low) => {
                    let cp =
                        0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    match char::from_u32(cp) {
                        Some(ch) => Unit::Done(Decoded::Char(ch), 12),
                        None => literal,
                    }
                }
                _ => literal,
            };
        }
        return literal;
    }
    match char::from_u32(u32::from(first)) {
        Some(ch) => Unit::Done(Decoded::Char(ch), 6),
        None => literal,
    }
}
