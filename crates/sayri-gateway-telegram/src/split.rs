//! Long answers as several messages of at most [`LIMIT`] UTF-16 code units each — Telegram's
//! limit, counted after entity parsing, which is the plain text of a [`Formatted`].
//!
//! Where a message ends, in order of preference (always the latest such place that fits):
//! 1. a line break outside any entity;
//! 2. a space outside any entity;
//! 3. a line break inside a code block too long for one message (the block continues as a
//!    second code block in the next message, with the same language);
//! 4. a space inside an entity (which continues in the next message);
//! 5. the last character that fits.
//!
//! A code block that fits in one message is therefore moved whole to the next message rather
//! than cut. Cuts fall between characters, so never inside a surrogate pair. The line break or
//! space at a cut is dropped, and so are line breaks at the edges of a message; every other
//! character is sent exactly once, in order.

use crate::format::{Entity, EntityKind, Formatted};

/// Telegram's longest message text, in UTF-16 code units.
pub const LIMIT: usize = 4096;

/// An entity in character indices of the whole text.
#[derive(Clone)]
struct Span {
    kind: EntityKind,
    start: usize,
    end: usize,
}

/// Splits `f` into messages of at most `limit` UTF-16 units (see the module rules).
pub fn split(f: &Formatted, limit: usize) -> Vec<Formatted> {
    let limit = limit.max(2);
    let chars: Vec<char> = f.text.chars().collect();
    // pos16[i] = UTF-16 offset of character i; pos16[n] = total length.
    let mut pos16 = Vec::with_capacity(chars.len() + 1);
    let mut acc = 0;
    for c in &chars {
        pos16.push(acc);
        acc += c.len_utf16();
    }
    pos16.push(acc);
    let char_at = |u16_off: usize| pos16.partition_point(|&p| p < u16_off);
    let spans: Vec<Span> = f
        .entities
        .iter()
        .map(|e| Span {
            kind: e.kind.clone(),
            start: char_at(e.offset),
            end: char_at(e.offset + e.length),
        })
        .collect();
    let mut out = Vec::new();
    let mut start = skip_breaks(&chars, 0);
    while start < chars.len() {
        let fits = pos16.partition_point(|&p| p <= pos16[start] + limit) - 1;
        let (end, next) = if fits >= chars.len() {
            (chars.len(), chars.len())
        } else {
            let cut = choose_cut(&chars, &spans, start, fits);
            let skip = usize::from(matches!(chars[cut], '\n' | ' '));
            (cut, cut + skip)
        };
        out.push(piece(&chars, &pos16, &spans, start, end));
        start = skip_breaks(&chars, next);
    }
    out.retain(|m| !m.text.is_empty());
    out
}

fn skip_breaks(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] == '\n' {
        i += 1;
    }
    i
}

/// The index of the character where the message starting at `start` ends (exclusive), given
/// that `[start, fits)` is the longest run that fits.
fn choose_cut(chars: &[char], spans: &[Span], start: usize, fits: usize) -> usize {
    let inside = |i: usize| spans.iter().any(|s| s.start < i && i < s.end);
    let inside_long_pre = |i: usize| {
        spans.iter().any(|s| {
            matches!(s.kind, EntityKind::Pre(_)) && s.start < i && i < s.end && s.start <= start
        })
    };
    // A cut at `i` ends the message before character `i` (a break or space there is dropped).
    let candidates = (start + 1..=fits).rev();
    let tiers: [&dyn Fn(usize) -> bool; 4] = [
        &|i| chars.get(i) == Some(&'\n') && !inside(i),
        &|i| chars.get(i) == Some(&' ') && !inside(i),
        &|i| chars.get(i) == Some(&'\n') && inside_long_pre(i),
        &|i| matches!(chars.get(i), Some(' ' | '\n')),
    ];
    for tier in tiers {
        if let Some(i) = candidates.clone().find(|&i| tier(i)) {
            return i;
        }
    }
    fits.max(start + 1)
}

/// The message for characters `[start, end)`, without line breaks at its end, with the
/// entities clipped to it.
fn piece(
    chars: &[char],
    pos16: &[usize],
    spans: &[Span],
    start: usize,
    mut end: usize,
) -> Formatted {
    while end > start && chars[end - 1] == '\n' {
        end -= 1;
    }
    let text: String = chars[start..end].iter().collect();
    let base = pos16[start];
    let entities = spans
        .iter()
        .filter_map(|s| {
            let (a, b) = (s.start.max(start), s.end.min(end));
            (a < b).then(|| Entity {
                kind: s.kind.clone(),
                offset: pos16[a] - base,
                length: pos16[b] - pos16[a],
            })
        })
        .collect();
    Formatted { text, entities }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{markdown, utf16_len};

    fn texts(f: &Formatted) -> Vec<String> {
        split(f, LIMIT).into_iter().map(|m| m.text).collect()
    }

    #[test]
    fn the_boundary_answers() {
        let a4096 = "a".repeat(4096);
        assert_eq!(
            texts(&Formatted::plain(&a4096)),
            std::slice::from_ref(&a4096)
        );
        let a4097 = "a".repeat(4097);
        let parts = texts(&Formatted::plain(&a4097));
        assert_eq!(parts.len(), 2);
        assert_eq!(parts.concat(), a4097);
        let emoji = format!("{}🙂", "a".repeat(4095));
        assert_eq!(utf16_len(&emoji), 4097);
        let parts = texts(&Formatted::plain(&emoji));
        assert_eq!(parts, ["a".repeat(4095), "🙂".to_string()]);
    }

    #[test]
    fn lines_stay_whole_and_every_character_is_kept() {
        let line = "word ".repeat(19) + "end";
        let text = vec![line.clone(); 100].join("\n");
        let parts = texts(&Formatted::plain(&text));
        assert!(parts.len() >= 3);
        for p in &parts {
            assert!(utf16_len(p) <= LIMIT);
            assert!(p.lines().all(|l| l == line), "a line was cut");
        }
        assert_eq!(parts.join("\n"), text);
    }

    #[test]
    fn a_code_block_that_fits_moves_whole_and_a_long_one_continues_as_code() {
        let prose = "x".repeat(3000);
        let code: String = (0..80).map(|i| format!("echo line {i:03}\n")).collect();
        let f = markdown(&format!("{prose}\n\n```sh\n{code}```\nafter"));
        let parts = split(&f, LIMIT);
        assert_eq!(parts[0].text, prose);
        assert!(parts[1].text.starts_with("echo line 000"));
        assert_eq!(
            parts[1].entities[0].kind,
            EntityKind::Pre(Some("sh".into()))
        );
        let big: String = (0..400).map(|i| format!("echo line {i:03}\n")).collect();
        let f = markdown(&format!("```sh\n{big}```"));
        let parts = split(&f, LIMIT);
        assert!(parts.len() >= 2);
        for p in &parts {
            assert_eq!(p.entities.len(), 1);
            assert_eq!(p.entities[0].offset, 0);
            assert_eq!(p.entities[0].length, p.len_utf16());
            assert!(
                p.text.ends_with(|c: char| c.is_ascii_digit()),
                "cut mid-line"
            );
        }
        assert_eq!(
            parts
                .iter()
                .map(|p| p.text.as_str())
                .collect::<Vec<_>>()
                .join("\n")
                + "\n",
            big
        );
    }

    #[test]
    fn inline_entities_are_not_cut_when_a_space_outside_exists() {
        let f = markdown(&format!("{} **bold words here** tail", "y".repeat(4085)));
        let parts = split(&f, LIMIT);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].text, "bold words here tail");
        assert_eq!(parts[1].entities[0].length, 15);
    }

    /// The long report of the Telegram long-reply case: 9,043 UTF-16 units, a code block
    /// across the 4096 mark, 30 emoji, CJK text, links and emphasis.
    #[test]
    fn the_long_report_arrives_whole_line_by_line_with_its_code_block_as_code() {
        let answer = include_str!("../tests/fixtures/long-reply.answer.md");
        assert_eq!(utf16_len(answer), 9043);
        let f = markdown(answer);
        let parts = split(&f, LIMIT);
        assert!(parts.len() >= 3);
        let mut all = String::new();
        for p in &parts {
            assert!(p.len_utf16() <= LIMIT);
            for e in &p.entities {
                assert!(e.offset + e.length <= p.len_utf16());
            }
            all.push_str(&p.text);
            all.push('\n');
        }
        let count = |needle: &str| all.matches(needle).count();
        for i in 1..=53 {
            assert_eq!(count(&format!("Item {i:03}:")), 1, "Item {i:03}");
        }
        for i in 1..=30 {
            assert_eq!(count(&format!("Check {i:03} ")), 1, "Check {i:03}");
            assert_eq!(
                count(&format!("sy-test-unit-{i:02}.service")),
                1,
                "unit {i}"
            );
        }
        for i in 1..=24 {
            assert_eq!(count(&format!("Note {i:02}")), 1, "Note {i:02}");
        }
        assert_eq!(count("🙂"), 30);
        assert!(!all.contains("```"), "no stray fence");
        // Every journalctl line is inside a `pre` entity of its message.
        for p in &parts {
            let units: Vec<u16> = p.text.encode_utf16().collect();
            let pre: String = p
                .entities
                .iter()
                .filter(|e| e.kind == EntityKind::Pre(Some("bash".into())))
                .map(|e| String::from_utf16_lossy(&units[e.offset..e.offset + e.length]))
                .collect();
            for line in p.text.lines().filter(|l| l.starts_with("journalctl")) {
                assert!(pre.contains(line), "{line} is not code");
            }
        }
    }
}
