//! The one rule for showing untrusted text (model answers, commands, command output, titles,
//! errors quoting them): the same function the `sayri` CLI prints through, so the terminal and
//! the orb show a control sequence the same way — as visible escapes such as `\x1b`, `\r`,
//! `\u{202e}`, never obeyed. Newline and tab are kept.
//!
//! In GTK this text is set with markup off, or escaped with `glib::markup_escape_text` before it
//! joins markup the orb builds itself; it is never handed to Pango as markup.

pub use sayri_client::terminal_text::terminal_safe as visible;
