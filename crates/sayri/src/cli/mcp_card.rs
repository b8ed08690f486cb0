//! The approval card of `sayri mcp approve` and the tool lines of `sayri mcp test`: every
//! tool's name, description and input schema shown verbatim, except that control, invisible,
//! direction-changing and tag characters are shown as `<U+XXXX>` (so the text can neither
//! hide words from the person nor drive the terminal), with the scanner's findings under it.
//!
//! A server cannot forge the card's own lines: every text it sent that may span lines (a
//! description, a schema) is printed behind a `│` gutter, and every other text it sent (a tool
//! or server name, a version, a finding's excerpt) on one line ([`one_line`]).

use sayri_core::domain::skills::scanner::hidden::excerpt;
use sayri_protocol::reply::mcp::{McpApproval, McpTestReply, McpTool};

/// `text` with every hidden or control character made visible, line by line (newlines kept;
/// nothing cut).
pub(crate) fn visible(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            // `excerpt` trims; keep the line's own leading spaces (indentation).
            let lead: String = line.chars().take_while(|c| *c == ' ').collect();
            format!("{lead}{}", excerpt(line, usize::MAX))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` on one line: newlines and every other control, hidden or separator character shown
/// as `<U+XXXX>`, cut at 200 characters.
pub(crate) fn one_line(text: &str) -> String {
    excerpt(text, 200)
}

/// The word the person reads for a tool's approval state.
pub(crate) fn state_word(a: McpApproval) -> &'static str {
    match a {
        McpApproval::Approved => "approved",
        McpApproval::Changed => "CHANGED since approved (withheld)",
        McpApproval::New => "not approved (withheld)",
        McpApproval::Unknown => "withheld (approvals unreadable)",
    }
}

/// One tool, whole, indented under a heading.
pub(crate) fn print_tool(t: &McpTool) {
    println!("── tool {} — {}", one_line(&t.name), state_word(t.approval));
    match &t.description {
        Some(d) => {
            println!("   description:");
            for line in visible(d).lines() {
                println!("   │ {line}");
            }
        }
        None => println!("   description: (none)"),
    }
    println!("   input schema:");
    let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
    for line in visible(&schema).lines() {
        println!("   │ {line}");
    }
    if t.findings.is_empty() {
        println!("   scanner: nothing found");
    }
    for f in &t.findings {
        println!(
            "   ⚠ {}: {} — {}",
            one_line(&f.kind),
            one_line(&f.detail),
            one_line(&f.excerpt)
        );
    }
}

/// The whole card for the tools of `v` named in `only` (every tool when empty) that are not
/// approved yet; returns those tools.
pub(crate) fn print_card<'a>(v: &'a McpTestReply, only: &[String]) -> Vec<&'a McpTool> {
    let pending: Vec<&McpTool> = v
        .tools
        .iter()
        .filter(|t| only.is_empty() || only.contains(&t.name))
        .filter(|t| t.approval != McpApproval::Approved)
        .collect();
    print_refused(v);
    if pending.is_empty() {
        return pending;
    }
    println!(
        "MCP server {} offers {} tool(s) to approve. Read what each says: this text will be shown to the model.",
        one_line(&v.name),
        pending.len()
    );
    for t in &pending {
        print_tool(t);
    }
    pending
}

/// The tools refused outright, one line each.
pub(crate) fn print_refused(v: &McpTestReply) {
    for r in &v.refused {
        println!(
            "  refused: a tool named {} — {}",
            one_line(&r.name),
            one_line(&r.reason)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_control_characters_are_shown_and_newlines_kept() {
        assert_eq!(
            visible("a\u{200b}b\n  \u{202e}c\x1b[2J"),
            "a<U+200B>b\n  <U+202E>c<U+001B>[2J"
        );
        assert_eq!(visible("tag\u{E0041}"), "tag<U+E0041>");
    }

    #[test]
    fn a_name_or_version_is_shown_on_one_line_whatever_it_holds() {
        assert_eq!(
            one_line("add\n── tool evil — approved\r"),
            "add<U+000A>── tool evil — approved<U+000D>"
        );
        assert_eq!(
            one_line("2026\x1b]52;c;eA==\x07"),
            "2026<U+001B>]52;c;eA==<U+0007>"
        );
    }
}
