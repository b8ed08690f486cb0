//! Decoded views of multi-line dumps: the bytes a hex or character dump shows, read back across
//! its lines, each byte mapped to the characters that printed it.
//!
//! `xxd`, `hexdump -C`, `hd`, `od -tx1` (with or without `-An`, `z`), `od -x`, `hexdump`,
//! `xxd -e` and `od -c`/`hexdump -c` print 16 bytes (or `-c`/`-w` bytes) per line with an offset
//! in front and often a text column behind, so a secret longer than one line is cut into pieces
//! that no single-line pattern matches. Three views undo that, one per kind of column:
//!
//! * **hex**: the data tokens of every hex-dump line (groups of 2, 4, 8 or 16 hex digits), as
//!   bytes in the order printed; a second view reads tokens of 4 or more digits as little-endian
//!   words (`od -x`, `hexdump`, `xxd -e`);
//! * **chars**: the 4-character fields of `od -c` lines (`   k`, `  \n`, ` 303`, four spaces);
//! * **text column**: the text column of hex dumps (`xxd`'s trailing column, `|…|`, `>…<`).
//!
//! Offsets, separators and the other columns are skipped; a line that is not a dump line of the
//! view's kind puts a break byte (`0xFF`, never part of a pattern) into the view, so no match runs
//! across unrelated lines. Lines are recognised one by one, from their own bytes only, so the
//! view of a text is a prefix of the view of any longer text that continues it — which keeps
//! streaming and one-shot redaction equal. In partial mode (a streaming prefix) a last line
//! without its newline that could still become a dump line is left out and reported as
//! incomplete, so a stream holds it until the line is whole.

use super::decoded_views::View;

/// Which dump views are worth building for a text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DumpKinds {
    /// Some line is a hex-dump line (or, in partial mode, the last line may become one).
    pub hex: bool,
    /// Some hex-dump line has tokens of 4 or more digits (words, read little-endian too).
    pub hex_words: bool,
    /// Some line is an `od -c` line (or, in partial mode, the last line may become one).
    pub chars: bool,
    /// Some hex-dump line has a text column.
    pub text_column: bool,
}

/// Which of the dump views to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DumpView {
    /// Hex data tokens; `little_endian` reverses the bytes of each token.
    Hex {
        /// Read each token as a little-endian word.
        little_endian: bool,
    },
    /// `od -c` fields.
    Chars,
    /// The text column of hex dumps.
    TextColumn,
}

/// The break byte put between lines that do not continue each other.
const BREAK: u8 = 0xFF;

/// Longest hex token (`xxd -g 8`).
const MAX_TOKEN_DIGITS: usize = 16;

/// Fewest digits of an offset followed by a space (`od` prints 7, `hexdump` 7 or 8, `od -Ax` 6).
const MIN_SPACED_OFFSET: usize = 6;

/// Fewest digits of an offset followed by a colon (`xxd` prints 8).
const MIN_COLON_OFFSET: usize = 4;

/// Fewest fields of an `od -An -c` line without an offset that is not the last line of a dump;
/// fewer would make short indented lines (`   }`) dump lines.
const MIN_FIELDS_ALONE: usize = 4;

/// Why a line is not (yet) a dump line.
#[derive(Debug, PartialEq, Eq)]
enum Fail {
    /// It cannot become one, whatever follows.
    Not,
    /// It ended where more text could still make it one (only reported for partial lines).
    More,
}

/// One parsed hex-dump line; ranges are offsets into the line.
#[derive(Debug, Default)]
struct HexLine {
    /// Data tokens, in order.
    tokens: Vec<(usize, usize)>,
    /// The text column (inside its delimiters), if any.
    column: Option<(usize, usize)>,
}

/// One parsed `od -c` line: each field's start and the byte it stands for.
#[derive(Debug, Default)]
struct CharLine {
    fields: Vec<(usize, u8)>,
    /// It has an offset or at least [`MIN_FIELDS_ALONE`] fields, so it may start a dump.
    full: bool,
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn run_len(l: &[u8], from: usize, f: impl Fn(u8) -> bool) -> usize {
    l[from..].iter().take_while(|b| f(**b)).count()
}

/// The end of a line's offset column: `(index after the offset, whether it ended with a colon)`,
/// or `(0, false)` when the line has no offset (it starts with a space).
fn offset_end(l: &[u8], partial: bool) -> Result<(usize, bool), Fail> {
    match l.first() {
        None => Err(if partial { Fail::More } else { Fail::Not }),
        Some(b' ') => Ok((0, false)),
        Some(b) if is_hex(*b) => {
            let j = run_len(l, 0, is_hex);
            match l.get(j) {
                None if partial => Err(Fail::More),
                Some(b':') if j >= MIN_COLON_OFFSET => Ok((j + 1, true)),
                Some(b' ') if j >= MIN_SPACED_OFFSET => Ok((j, false)),
                _ => Err(Fail::Not),
            }
        }
        Some(_) => Err(Fail::Not),
    }
}

/// Parses one hex-dump line (`l` without its line break). `partial`: the line may continue.
fn parse_hex(l: &[u8], partial: bool) -> Result<HexLine, Fail> {
    let more = || if partial { Fail::More } else { Fail::Not };
    let (mut i, colon) = offset_end(l, partial)?;
    let lead = run_len(l, i, |b| b == b' ');
    if i + lead == l.len() {
        return Err(more());
    }
    // `xxd -e` right-aligns a short only group of a last line after its colon.
    let max_lead = if colon { 1 + MAX_TOKEN_DIGITS } else { 2 };
    if !(1..=max_lead).contains(&lead) {
        return Err(Fail::Not);
    }
    i += lead;
    let mut line = HexLine::default();
    let mut width = 0usize;
    let mut short_seen = false;
    loop {
        let t = run_len(l, i, is_hex);
        let end = i + t;
        if end == l.len() && partial {
            // The token may still grow.
            return Err(Fail::More);
        }
        if t == 0 || t % 2 != 0 || t > MAX_TOKEN_DIGITS || short_seen {
            return Err(Fail::Not);
        }
        if width == 0 {
            width = t;
        } else if t > width {
            return Err(Fail::Not);
        } else if t < width {
            short_seen = true;
        }
        line.tokens.push((i, end));
        if end == l.len() {
            return Ok(line);
        }
        let spaces = run_len(l, end, |b| b == b' ');
        let next = end + spaces;
        if spaces == 0 {
            return Err(Fail::Not);
        }
        if next == l.len() {
            return if partial { Err(Fail::More) } else { Ok(line) };
        }
        let hexdump_gap = spaces == 2 && !colon && width == 2 && line.tokens.len() == 8;
        // `xxd -e` right-aligns a short last group within the group width.
        let short_next = run_len(l, next, is_hex);
        let aligned_short = short_next > 0
            && short_next % 2 == 0
            && short_next < width
            && spaces == 1 + width - short_next
            && l.get(next + short_next).is_none_or(|b| *b == b' ');
        if is_hex(l[next]) && (spaces == 1 || hexdump_gap || aligned_short) {
            i = next;
            continue;
        }
        if spaces == 1 {
            return Err(Fail::Not);
        }
        let bytes = line.tokens.iter().map(|(s, e)| (e - s) / 2).sum();
        line.column = Some(text_column(l, end, next, bytes, partial)?);
        return Ok(line);
    }
}

/// The text column of a hex-dump line whose data ends at `gap` and whose next non-space
/// character is at `at`: `|…|` (`hexdump -C`), `>…<` (`od -tx1z`), or the last `bytes`
/// characters after at least two spaces (`xxd`).
fn text_column(
    l: &[u8],
    gap: usize,
    at: usize,
    bytes: usize,
    partial: bool,
) -> Result<(usize, usize), Fail> {
    let delimited = match l[at] {
        b'|' => Some(b'|'),
        b'>' => Some(b'<'),
        _ => None,
    };
    if partial {
        // Whatever follows could complete the column.
        return Err(Fail::More);
    }
    if let Some(close) = delimited
        && l.len() > at + 1
        && l[l.len() - 1] == close
    {
        return Ok((at + 1, l.len() - 1));
    }
    let start = l.len().checked_sub(bytes).ok_or(Fail::Not)?;
    let spaces_before = start >= gap + 2 && l[gap..start].iter().all(|b| *b == b' ');
    if spaces_before && l[start..].iter().all(|b| (0x20..0x7f).contains(b)) {
        Ok((start, l.len()))
    } else {
        Err(Fail::Not)
    }
}

/// The byte an `od -c` field stands for: `   k`, four spaces (a space), `  \n`-style escapes,
/// ` 303` (an octal byte).
fn char_field(f: &[u8]) -> Option<u8> {
    match f {
        [b' ', b' ', b' ', c] if (0x20..0x7f).contains(c) => Some(*c),
        [b' ', b' ', b'\\', e] => match e {
            b'0' => Some(0),
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            _ => None,
        },
        [b' ', o @ ..] if o.iter().all(|d| (b'0'..=b'7').contains(d)) => {
            let v = o.iter().fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
            u8::try_from(v).ok()
        }
        _ => None,
    }
}

/// Parses one `od -c` / `hexdump -c` line (`l` without its line break). A line without an offset
/// and with fewer than [`MIN_FIELDS_ALONE`] fields is one only `after_full` such a line (the last
/// line of an `od -An -c` dump).
fn parse_chars(l: &[u8], partial: bool, after_full: bool) -> Result<CharLine, Fail> {
    let more = || if partial { Fail::More } else { Fail::Not };
    let mut i = 0;
    let mut line = CharLine::default();
    if l.first().is_some_and(|b| is_hex(*b)) {
        let j = run_len(l, 0, is_hex);
        if j == l.len() {
            return Err(more());
        }
        if j < MIN_SPACED_OFFSET || l[j] != b' ' {
            return Err(Fail::Not);
        }
        i = j;
        line.full = true;
    }
    let mut visible = false;
    while i < l.len() {
        let rest = &l[i..];
        if rest.len() < 4 {
            if partial {
                return Err(Fail::More);
            }
            // `hexdump -c` pads its last line with spaces.
            if rest.iter().all(|b| *b == b' ') {
                break;
            }
            return Err(Fail::Not);
        }
        let byte = char_field(&rest[..4]).ok_or(Fail::Not)?;
        visible |= rest[..4] != *b"    ";
        line.fields.push((i, byte));
        i += 4;
    }
    if partial {
        return Err(Fail::More);
    }
    // Trailing all-space fields are `hexdump -c`'s padding, not spaces of the data.
    while line
        .fields
        .last()
        .is_some_and(|(s, _)| l[*s..*s + 4] == *b"    ")
    {
        line.fields.pop();
    }
    line.full |= line.fields.len() >= MIN_FIELDS_ALONE;
    if visible && !line.fields.is_empty() && (line.full || after_full) {
        Ok(line)
    } else {
        Err(Fail::Not)
    }
}

/// The lines of `text`: `(start, end without the line break, terminated)`. A `\r` before the
/// `\n` belongs to the line break.
fn lines(text: &[u8]) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let start = pos;
        match text[start..].iter().position(|b| *b == b'\n') {
            Some(n) => {
                pos = start + n + 1;
                let mut end = start + n;
                if end > start && text[end - 1] == b'\r' {
                    end -= 1;
                }
                Some((start, end, true))
            }
            None => {
                pos = text.len();
                Some((start, text.len(), false))
            }
        }
    })
}

/// Cheap test before parsing: dump lines start with a hex digit or a space.
fn may_be_dump(l: &[u8]) -> bool {
    l.first().is_some_and(|b| *b == b' ' || is_hex(*b))
}

/// Which dump views `text` needs. In `partial` mode a last line without its line break that may
/// still become a dump line counts too (its view must hold it back). Without `whole_first_line`
/// the text starts inside a line (a stream's kept tail), and its first line is never a dump line.
pub(crate) fn dump_kinds(text: &str, partial: bool, whole_first_line: bool) -> DumpKinds {
    let mut k = DumpKinds::default();
    let mut after_full = false;
    for (s, e, terminated) in lines(text.as_bytes()) {
        let l = &text.as_bytes()[s..e];
        if !may_be_dump(l) || (s == 0 && !whole_first_line) {
            after_full = false;
            continue;
        }
        let open = partial && !terminated;
        match parse_hex(l, open) {
            Ok(h) => {
                k.hex = true;
                k.hex_words |= h.tokens.iter().any(|(a, b)| b - a >= 4);
                k.text_column |= h.column.is_some();
            }
            Err(Fail::More) => k.hex = true,
            Err(Fail::Not) => {}
        }
        match parse_chars(l, open, after_full) {
            Ok(c) => {
                k.chars = true;
                after_full = c.full;
            }
            Err(Fail::More) => k.chars = true,
            Err(Fail::Not) => after_full = false,
        }
    }
    k
}

/// Builds one dump view of `text` (see the module docs); `whole_first_line` as in [`dump_kinds`].
///
/// Each byte of the hex view maps to its two digits; of the little-endian view, to its whole
/// token (the bytes of a token are read in reverse, so only the token is a contiguous range); of
/// the character view, to its 4-character field.
pub(crate) fn build_dump_view(
    text: &str,
    which: DumpView,
    partial: bool,
    whole_first_line: bool,
) -> View {
    let raw = text.as_bytes();
    let mut view = View {
        bytes: Vec::new(),
        start: Vec::new(),
        end: Vec::new(),
        units: Vec::new(),
        incomplete_from: None,
    };
    let push = |view: &mut View, byte: u8, s: usize, e: usize| {
        view.bytes.push(byte);
        view.start.push(s as u32);
        view.end.push(e as u32);
        if e - s > 1 && view.units.last() != Some(&(s as u32, e as u32)) {
            view.units.push((s as u32, e as u32));
        }
    };
    let mut broken = true;
    let mut after_full = false;
    for (s, e, terminated) in lines(raw) {
        let l = &raw[s..e];
        let open = partial && !terminated;
        let before = view.bytes.len();
        if may_be_dump(l) && (s > 0 || whole_first_line) {
            match which {
                DumpView::Hex { little_endian } => match parse_hex(l, open) {
                    Ok(h) => {
                        for (a, b) in h.tokens {
                            let pairs = (a..b).step_by(2);
                            if little_endian {
                                for p in pairs.rev() {
                                    push(&mut view, hex_byte(l, p), s + a, s + b);
                                }
                            } else {
                                for p in pairs {
                                    push(&mut view, hex_byte(l, p), s + p, s + p + 2);
                                }
                            }
                        }
                    }
                    Err(Fail::More) => {
                        view.incomplete_from = Some(s);
                        break;
                    }
                    Err(Fail::Not) => {}
                },
                DumpView::Chars => match parse_chars(l, open, after_full) {
                    Ok(c) => {
                        after_full = c.full;
                        for (f, byte) in c.fields {
                            push(&mut view, byte, s + f, s + f + 4);
                        }
                    }
                    Err(Fail::More) => {
                        view.incomplete_from = Some(s);
                        break;
                    }
                    Err(Fail::Not) => after_full = false,
                },
                DumpView::TextColumn => match parse_hex(l, open) {
                    Ok(HexLine {
                        column: Some((a, b)),
                        ..
                    }) => {
                        for (p, byte) in l.iter().enumerate().take(b).skip(a) {
                            push(&mut view, *byte, s + p, s + p + 1);
                        }
                    }
                    Ok(_) | Err(Fail::Not) => {}
                    Err(Fail::More) => {
                        view.incomplete_from = Some(s);
                        break;
                    }
                },
            }
        }
        if view.bytes.len() == before {
            after_full = false;
            if !broken {
                push(&mut view, BREAK, s, s);
                broken = true;
            }
        } else {
            broken = false;
        }
    }
    view
}

/// The byte written as two hex digits at `l[p..p + 2]` (both are hex digits by construction).
fn hex_byte(l: &[u8], p: usize) -> u8 {
    let digit = |b: u8| match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    };
    digit(l[p]) * 16 + digit(l[p + 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex_bytes(text: &str, le: bool) -> Vec<u8> {
        build_dump_view(text, DumpView::Hex { little_endian: le }, false, true).bytes
    }

    #[test]
    fn xxd_lines_read_back_as_bytes_and_text_column() {
        let t = "00000000: 6b65 793d 7379 2d63 537e 6b65 3452 314a  key=sy-cS~ke4R1J\n\
                 00000010: 2b64 4269                                +dBi\n";
        assert_eq!(hex_bytes(t, false), b"key=sy-cS~ke4R1J+dBi");
        let col = build_dump_view(t, DumpView::TextColumn, false, true);
        assert_eq!(col.bytes, b"key=sy-cS~ke4R1J+dBi");
    }

    #[test]
    fn a_text_column_that_looks_like_hex_is_not_data() {
        let t = "00000000: 6162 6364                                abcd\n";
        assert_eq!(hex_bytes(t, false), b"abcd");
        let col = build_dump_view(t, DumpView::TextColumn, false, true);
        assert_eq!(col.bytes, b"abcd");
    }

    #[test]
    fn hexdump_c_middle_gap_and_delimited_column() {
        let t = "00000000  6b 65 79 3d 73 79 2d 63  53 7e 6b 65 34 52 31 4a  |key=sy-cS~ke4R1J|\n\
                 00000010  2b 64                                             |+d|\n00000012\n";
        assert_eq!(hex_bytes(t, false), b"key=sy-cS~ke4R1J+d\xff");
    }

    #[test]
    fn little_endian_words() {
        let t = "0000000 656b 3d79 7973\n";
        assert_eq!(hex_bytes(t, true), b"key=sy");
    }

    #[test]
    fn od_c_fields_with_escapes_octal_and_space() {
        let t = "0000000   k   e   y       =  \\n 303 251\n";
        let v = build_dump_view(t, DumpView::Chars, false, true);
        assert_eq!(v.bytes, b"key =\n\xc3\xa9");
    }

    #[test]
    fn ordinary_lines_are_not_dumps_and_break_the_view() {
        for l in [
            "added 3 packages",
            "   hello world",
            "deadbeef",
            "  Compiling sayri v0.1.0",
            "abc def",
        ] {
            assert_eq!(dump_kinds(l, false, true), DumpKinds::default(), "{l:?}");
        }
        let t = " 61 62\nnot a dump\n 63 64\n";
        assert_eq!(hex_bytes(t, false), b"ab\xffcd");
    }

    #[test]
    fn a_partial_line_that_may_become_a_dump_line_is_held() {
        let t = "done\n00000000: 6b65 79";
        let v = build_dump_view(
            t,
            DumpView::Hex {
                little_endian: false,
            },
            true,
            true,
        );
        assert_eq!(v.incomplete_from, Some(5));
        let none = DumpKinds::default();
        assert_eq!(dump_kinds("45%", true, true), none);
        assert_ne!(dump_kinds("0000", true, true), none);
        assert_eq!(dump_kinds(" 61 62\n", false, false), none);
    }
}
