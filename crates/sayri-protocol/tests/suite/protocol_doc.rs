//! PROTOCOL.md documents exactly the commands and events of `names`, and each implemented
//! command's parameters exactly as its params struct has them, so docs cannot drift.

use sayri_protocol::{PROTOCOL_VERSION, event, names, params};
use std::collections::BTreeSet;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../PROTOCOL.md");
    std::fs::read_to_string(path).expect("PROTOCOL.md at the repository root")
}

/// The text of the `## {title}` section, up to the next `## ` heading.
fn section<'a>(doc: &'a str, title: &str) -> &'a str {
    let start = doc
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no '## {title}' section"));
    let rest = &doc[start + title.len() + 5..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// First-column backticked names of table rows in the `## {title}` section.
fn names_in_section(doc: &str, title: &str) -> BTreeSet<String> {
    section(doc, title)
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

/// Every name written in code in a cell: backticked (`name`, `{id, name}`, `[{a, b}]`) or
/// quoted ("name").
fn quoted_names(cell: &str) -> BTreeSet<String> {
    let quoted = |q: char| {
        cell.split(q)
            .skip(1)
            .step_by(2)
            .flat_map(|chunk| chunk.split(|c: char| !(c.is_ascii_lowercase() || c == '_')))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    quoted('`').into_iter().chain(quoted('"')).collect()
}

/// Objects a result cell names by a phrase, each defined by the paragraph that starts with the
/// marker.
const DEFINED_ABOVE: &[(&str, &str)] = &[("the routine", "A routine object:")];

/// The paragraph of `doc` from `marker` to the next blank line.
fn paragraph<'a>(doc: &'a str, marker: &str) -> &'a str {
    let start = doc
        .find(marker)
        .unwrap_or_else(|| panic!("PROTOCOL.md has no '{marker}'"));
    let rest = &doc[start..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

#[test]
fn every_member_of_each_reply_type_is_documented_in_its_result() {
    let doc = doc();
    let mut problems = Vec::new();
    for info in params::ALL {
        let cells = row_cells(&doc, info.cmd);
        let mut result = cells[2].clone();
        for (phrase, marker) in DEFINED_ABOVE {
            if result.starts_with(phrase) {
                result.push(' ');
                result.push_str(paragraph(&doc, marker));
            }
        }
        let documented = quoted_names(&result);
        let missing: Vec<&str> = (info.reply_fields)()
            .iter()
            .copied()
            .filter(|f| !documented.contains(*f))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "`{}`: the reply type has {missing:?}, which PROTOCOL.md's result does not name",
                info.cmd
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_member_of_each_event_type_is_documented_in_its_payload() {
    let doc = doc();
    let mut problems = Vec::new();
    // An event may share its name with a command (`attach_image`): its row is the one in the
    // events section.
    let events = section(&doc, "Events");
    for info in event::ALL {
        let cells = row_cells(events, info.name);
        let fields = (info.fields)();
        let documented = quoted_names(&cells[1]);
        let missing: Vec<&str> = fields
            .iter()
            .copied()
            .filter(|f| !documented.contains(*f))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "`{}`: the event type has {missing:?}, which PROTOCOL.md's payload does not name",
                info.name
            ));
        }
        if fields.is_empty() != (cells[1] == "–") {
            problems.push(format!(
                "`{}`: write `–` exactly when the event has no members",
                info.name
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
