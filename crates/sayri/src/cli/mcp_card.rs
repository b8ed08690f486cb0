//! The approval card of `sayri mcp approve` and the tool lines of `sayri mcp test`: every
//! tool's name, description and input schema shown verbatim, except that control, invisible,
//! direction-changing and tag characters are shown as `<U+XXXX>` (so the text can neither
//! hide words from the person nor drive the terminal), with the scanner's findings under it.

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
    println!("── tool {} — {}", visible(&t.name), state_word(t.approval));
    match &t.description {
        Some(d) => {
            println!("   description:");
            for line in visible(d).lines() {
                println!("     {line}");
            }
        }
        None => println!("   description: (none)"),
    }
    println!("   input schema:");
    let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
    for line in visible(&schema).lines() {
        println!("     {line}");
    }
    if t.findings.is_empty() {
        println!("   scanner: nothing found");
    }
    for f in &t.findings {
        println!(
            "   ⚠ {}: {} — {}",
            f.kind,
            visible(&f.detail),
            visible(&f.excerpt)
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
    if pending.is_empty() {
        return pending;
    }
    println!(
        "MCP server {} offers {} tool(s) to approve. Read what each says: this text will be shown to the model.",
        visible(&v.name),
        pending.len()
    );
    for t in &pending {
        print_tool(t);
    }
    pending
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
}
