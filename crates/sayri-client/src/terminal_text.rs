//! Text from the model (answers, commands, command output, titles) made safe to print on a
//! terminal.
//!
//! A model's answer is untrusted input. Printed raw, its control sequences drive the user's
//! terminal: OSC 52 writes the clipboard (paste-jacking), CSI sequences move the cursor and erase
//! lines, and a carriage return overwrites what was printed — so a command shown for approval
//! could read `echo innocent` while something else runs. [`terminal_safe`] keeps newline and tab
//! and shows every other C0 control, DEL, every C1 control and the Unicode bidirectional
//! overrides and isolates (which reorder how a command reads, "trojan source") as visible
//! escapes: `\r`, `\x1b`, `\u{9b}`, `\u{202e}`. JSON output needs none of this (JSON escapes
//! control characters itself).

use std::borrow::Cow;
use std::fmt::Write as _;

fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// `text` with terminal control characters shown as escapes (see the module rules); borrowed
/// when there is nothing to escape.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if c == '\r' {
            out.push_str("\\r");
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn controls_become_visible_and_text_stays() {
        assert_eq!(terminal_safe("ls -la\n\tok"), "ls -la\n\tok");
        assert_eq!(
            terminal_safe("a\u{1b}]52;c;eA==\u{7}b\rc\u{9b}1m\u{202e}d"),
            "a\\x1b]52;c;eA==\\x07b\\rc\\u{9b}1m\\u{202e}d"
        );
        assert_eq!(terminal_safe("naïve — ok"), "naïve — ok");
    }
}
