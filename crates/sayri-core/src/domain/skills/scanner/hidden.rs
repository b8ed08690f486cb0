//! Hidden content: invisible and direction-changing characters, Unicode tag characters,
//! look-alike letters, padding and very long lines — and the normalisation that lets the other
//! rules read text the way a model reads it.

use super::{Collector, Kind};
use unicode_normalization::UnicodeNormalization;
use unicode_security::MixedScript;
use unicode_security::confusable_detection::skeleton;

/// Blank lines in a row from which the gap is padding.
pub const PADDING_BLANK_LINES: usize = 40;
/// Whitespace characters in a row (inside one line) from which it is padding.
pub const PADDING_SPACES: usize = 400;
/// Characters from which a line is very long.
pub const LONG_LINE: usize = 2000;

/// Invisible characters (not counting bidi controls and tags): every Default_Ignorable_Code_Point
/// of Unicode (zero-width spaces and joiners, word joiner and invisible operators, deprecated
/// format controls, variation selectors including the Mongolian ones, fillers, the soft hyphen,
/// shorthand format controls, musical formatting controls, reserved U+FFF0–U+FFF8 and
/// U+E0080–U+E0FFF) and the other format characters (general category Cf) that render as
/// nothing or as a mark a reader takes for nothing: Arabic and Syriac prepended marks,
/// interlinear annotation marks, Kaithi and Egyptian hieroglyph format controls.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{0600}'..='\u{0605}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2065}'
            | '\u{206A}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0080}'..='\u{E0FFF}'
    )
}

/// A control character a text has no business holding: every C0 and C1 control but tab,
/// newline and carriage return.
pub fn is_stray_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// Characters that change the displayed order of text.
fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// The Unicode line and paragraph separators: line breaks to a model and to some renderers, but
/// not to a terminal or to a line-by-line reader.
pub fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether `c` cannot be seen where it stands: an invisible formatting character, a
/// direction-changing control or a Unicode tag character. Text from outside loses these before
/// the model reads it (see `domain::frame`).
pub fn is_hidden(c: char) -> bool {
    is_invisible(c) || is_bidi(c) || ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// Unicode tag characters (U+E0000–U+E007F): invisible copies of ASCII.
fn tag_ascii(c: char) -> Option<char> {
    let n = c as u32;
    (0xE0020..=0xE007E)
        .contains(&n)
        .then(|| char::from_u32(n - 0xE0000))
        .flatten()
}

/// `line` as the rules read it: tag characters turned into the ASCII they hide, invisible and
/// bidi characters removed, NFKC, and inside words that mix scripts, letters that look like
/// Latin ones replaced by them (`іgnоrе` with Cyrillic і/о/е reads `ignore`).
///
/// ```
/// use sayri_core::domain::skills::scanner::hidden::normalize;
/// assert_eq!(normalize("D\u{200b}i\u{200b}sregard"), "Disregard");
/// assert_eq!(normalize("\u{0456}gn\u{043e}re"), "ignore");
/// assert_eq!(normalize("ｃｕｒｌ"), "curl");
/// assert_eq!(normalize("привет"), "привет");
/// ```
pub fn normalize(line: &str) -> String {
    let visible: String = line
        .chars()
        .filter_map(|c| match tag_ascii(c) {
            Some(a) => Some(a),
            None if is_separator(c) => Some(' '),
            None if is_stray_control(c) => None,
            None if is_invisible(c) || is_bidi(c) || ('\u{E0000}'..='\u{E007F}').contains(&c) => {
                None
            }
            None => Some(c),
        })
        .collect();
    let nfkc: String = visible.nfkc().collect();
    if nfkc.is_ascii() {
        return nfkc;
    }
    fold_mixed_words(&nfkc)
}

/// Replaces look-alike letters inside mixed-script words by the Latin letters they imitate.
fn fold_mixed_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            if is_mixed_confusable(word) {
                for ch in word.chars() {
                    out.push_str(&latin_lookalike(ch).unwrap_or_else(|| ch.to_string()));
                }
            } else {
                out.push_str(word);
            }
            word.clear();
        }
    };
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The ASCII letter(s) `c` imitates, when it is a non-ASCII look-alike of them.
fn latin_lookalike(c: char) -> Option<String> {
    if c.is_ascii() {
        return None;
    }
    let mut buf = [0u8; 4];
    let s: String = skeleton(c.encode_utf8(&mut buf)).collect();
    (s.is_ascii() && !s.is_empty() && s.chars().all(|x| x.is_ascii_alphanumeric())).then_some(s)
}

/// Whether `word` mixes scripts and uses a letter that imitates a Latin one.
fn is_mixed_confusable(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_alphabetic())
        && !word.is_single_script()
        && word.chars().any(|c| latin_lookalike(c).is_some())
}

/// `text` cut to `max` characters for a report, on one line: control characters (newline and
/// carriage return among them), line separators, invisible, bidi and tag characters shown as
/// `<U+XXXX>` (so an excerpt can neither hide text, nor move a terminal's cursor, nor look like
/// more than one line). Only spaces, tabs and newlines at either end are cut.
///
/// ```
/// use sayri_core::domain::skills::scanner::hidden::excerpt;
/// assert_eq!(excerpt("a\u{200b}b\x1b[2J", 80), "a<U+200B>b<U+001B>[2J");
/// assert_eq!(excerpt(" a\nb\r", 80), "a<U+000A>b<U+000D>");
/// ```
pub fn excerpt(text: &str, max: usize) -> String {
    let trimmed = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n'));
    let mut out = shown(&trimmed.chars().take(max).collect::<String>());
    if trimmed.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// `text` whole, nothing trimmed or cut: every control character (tab, newline and carriage
/// return among them), line separator, invisible, bidi and tag character shown as
/// `<U+XXXX>`.
///
/// ```
/// use sayri_core::domain::skills::scanner::hidden::shown;
/// assert_eq!(shown("\ta b \n"), "<U+0009>a b <U+000A>");
/// ```
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_separator(c) || is_hidden(c) {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Findings about hidden content in the raw (not normalised) lines of one text.
pub fn scan(path: &str, lines: &[&str], c: &mut Collector) {
    let mut blank_run = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            blank_run += 1;
            if line.chars().count() >= PADDING_SPACES {
                c.add(
                    Kind::Padding,
                    path,
                    n,
                    "",
                    &format!("a line of {} blank characters", line.chars().count()),
                );
            }
            continue;
        }
        if blank_run >= PADDING_BLANK_LINES {
            c.add(
                Kind::Padding,
                path,
                n,
                line,
                &format!("{blank_run} blank lines before this line push it far below what a reader sees; it was read anyway"),
            );
        }
        blank_run = 0;
        characters(path, n, line, c);
        let longest_space_run = line
            .split(|ch: char| !ch.is_whitespace())
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0);
        if longest_space_run >= PADDING_SPACES {
            c.add(
                Kind::Padding,
                path,
                n,
                line.trim_start(),
                &format!("{longest_space_run} blank characters in a row hide the rest of the line to the right; it was read anyway"),
            );
        }
        let len = line.chars().count();
        if len >= LONG_LINE {
            c.add(
                Kind::LongLine,
                path,
                n,
                line,
                &format!("{len} characters on one line; it was read whole"),
            );
        }
    }
}

/// Invisible, bidi and tag characters, and look-alike letters, in one line.
fn characters(path: &str, n: usize, line: &str, c: &mut Collector) {
    if line.is_ascii() {
        return;
    }
    let chars: Vec<char> = line.chars().collect();
    let near_ascii_word = |i: usize| {
        let prev = i.checked_sub(1).and_then(|j| chars.get(j));
        let next = chars.get(i + 1);
        prev.is_some_and(|p| p.is_ascii_alphanumeric())
            || next.is_some_and(|x| x.is_ascii_alphanumeric())
    };
    let mut invisible = Vec::new();
    for (i, ch) in chars.iter().enumerate() {
        let flagged = tag_ascii(*ch).is_some()
            || ('\u{E0000}'..='\u{E007F}').contains(ch)
            || is_bidi(*ch)
            || (is_invisible(*ch) && !(i == 0 && *ch == '\u{FEFF}') && near_ascii_word(i));
        if flagged {
            invisible.push(*ch);
        }
    }
    if !invisible.is_empty() {
        let hidden: String = chars.iter().filter_map(|ch| tag_ascii(*ch)).collect();
        let mut detail = format!(
            "{} hidden character(s) ({}) inside the text; it reads as: {}",
            invisible.len(),
            distinct_codes(&invisible),
            excerpt(&normalize(line), 120)
        );
        if !hidden.is_empty() {
            detail.push_str(&format!(
                " (tag characters spell: {})",
                excerpt(&hidden, 120)
            ));
        }
        c.add(Kind::InvisibleCharacters, path, n, line, &detail);
    }
    let mixed: Vec<&str> = line
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|w| is_mixed_confusable(w))
        .collect();
    if !mixed.is_empty() {
        c.add(
            Kind::Homoglyphs,
            path,
            n,
            line,
            &format!(
                "word(s) mixing scripts with look-alike letters: {} (reads as {})",
                mixed.join(", "),
                mixed
                    .iter()
                    .map(|w| fold_mixed_words(w))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}

fn distinct_codes(chars: &[char]) -> String {
    let mut codes: Vec<String> = chars
        .iter()
        .map(|c| format!("U+{:04X}", *c as u32))
        .collect();
    codes.sort();
    codes.dedup();
    codes.truncate(4);
    codes.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_invisible_formatting_character_is_hidden_and_shown_in_excerpts() {
        for c in [
            '\u{FE00}',
            '\u{FE0F}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{1D173}',
            '\u{1D17A}',
            '\u{206A}',
            '\u{2065}',
            '\u{17B4}',
            '\u{E0101}',
            '\u{180B}',
            '\u{180F}',
            '\u{1BCA1}',
            '\u{13430}',
            '\u{E0080}',
            '\u{FFF0}',
            '\u{0600}',
            '\u{06DD}',
            '\u{070F}',
            '\u{0890}',
            '\u{08E2}',
            '\u{110BD}',
            '\u{110CD}',
            '\u{E0FFF}',
        ] {
            assert!(is_hidden(c), "U+{:04X} is hidden", c as u32);
            let shown = excerpt(&format!("ig{c}nore"), 80);
            assert_eq!(shown, format!("ig<U+{:04X}>nore", c as u32));
            assert_eq!(normalize(&format!("ig{c}nore")), "ignore");
        }
        assert!(!is_hidden('é') && !is_hidden('\u{3000}'));
        assert_eq!(
            normalize("ig\u{000B}nore"),
            "ignore",
            "a stray control splits no word"
        );
    }

    #[test]
    fn an_excerpt_is_one_line_and_keeps_carriage_returns_and_separators_visible() {
        assert_eq!(
            excerpt("\rname\u{2028}[approved]\u{2029}x\r", 80),
            "<U+000D>name<U+2028>[approved]<U+2029>x<U+000D>"
        );
        assert_eq!(excerpt("\t a\nb \n", 80), "a<U+000A>b");
        assert_eq!(normalize("ignore\u{2028}previous"), "ignore previous");
    }
}
