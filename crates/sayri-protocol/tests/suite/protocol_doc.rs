//! PROTOCOL.md documents exactly the commands and events of `names`, and each implemented
//! command's parameters exactly as its params struct has them, so docs cannot drift.

use sayri_protocol::{PROTOCOL_VERSION, names, params};
use std::collections::BTreeSet;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../PROTOCOL.md");
    std::fs::read_to_string(path).expect("PROTOCOL.md at the repository root")
}

/// First-column backticked names of table rows in the `## {title}` section.
fn names_in_section(doc: &str, title: &str) -> BTreeSet<String> {
    let start = doc
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no '## {title}' section"));
    let rest = &doc[start + title.len() + 5..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(name, _)| name.to_string()))
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_command_is_documented_and_nothing_else() {
    let documented = names_in_section(&doc(), "Commands");
    let code = set(names::cmd::ALL);
    let missing: Vec<_> = code.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&code).collect();
    assert!(
        missing.is_empty(),
        "commands missing from PROTOCOL.md: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "PROTOCOL.md documents unknown commands: {extra:?}"
    );
}

#[test]
fn every_event_is_documented_and_nothing_else() {
    let documented = names_in_section(&doc(), "Events");
    let code = set(names::event::ALL);
    let missing: Vec<_> = code.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&code).collect();
    assert!(
        missing.is_empty(),
        "events missing from PROTOCOL.md: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "PROTOCOL.md documents unknown events: {extra:?}"
    );
    assert!(code.contains("reasoning_delta"));
}

#[test]
fn the_documented_version_is_the_current_one() {
    assert!(
        doc().contains(&format!("Current protocol version: **{PROTOCOL_VERSION}**")),
        "update the version line of PROTOCOL.md"
    );
}

#[test]
fn names_are_unique() {
    assert_eq!(set(names::cmd::ALL).len(), names::cmd::ALL.len());
    assert_eq!(set(names::event::ALL).len(), names::event::ALL.len());
}

/// The cells of the table row of command `name`.
fn row_cells(doc: &str, name: &str) -> Vec<String> {
    let row = doc
        .lines()
        .find(|l| l.starts_with(&format!("| `{name}` |")))
        .unwrap_or_else(|| panic!("PROTOCOL.md has no table row for `{name}`"));
    row.trim()
        .trim_matches('|')
        .split(" | ")
        .map(|c| c.trim().to_string())
        .collect()
}

/// Backticked plain names in a cell (`text`, `timeout`=120 → text, timeout).
fn backticked_names(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_string)
        .collect()
}

#[test]
fn documented_params_are_exactly_those_of_each_params_struct() {
    let doc = doc();
    let mut problems = Vec::new();
    for info in params::ALL {
        let cells = row_cells(&doc, info.cmd);
        let documented = backticked_names(&cells[1]);
        let code = set((info.fields)());
        if documented != code {
            problems.push(format!(
                "`{}`: PROTOCOL.md lists {documented:?}, the params struct has {code:?}",
                info.cmd
            ));
        }
        if code.is_empty() && cells[1] != "–" {
            problems.push(format!("`{}` takes no params: write `–`", info.cmd));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
