//! PROTOCOL.md says, for every command, every event and every legacy gateway request, whether
//! its shape is the original Sayri's, an extension, or a change — and why, for the latter two —
//! in a `shape` column, so a client author knows what an original client can rely on.

use sayri_protocol::names;
use std::collections::BTreeSet;

/// The first word of a `shape` cell.
const SHAPES: &[&str] = &["original", "extension", "change"];

/// The fewest words a reason may have ("it is new" says nothing; "the original had no MCP" does).
const MIN_REASON_WORDS: usize = 3;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../PROTOCOL.md");
    std::fs::read_to_string(path).expect("PROTOCOL.md at the repository root")
}

/// The text of the `## {title}` section, up to the next `## ` heading.
fn section<'a>(doc: &'a str, title: &str) -> &'a str {
    let heading = format!("\n## {title}\n");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("PROTOCOL.md has no '## {title}' section"));
    let rest = &doc[start + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// The cells of one table line (`| a | b |` → `["a", "b"]`), split as the other PROTOCOL.md
/// checks split them.
fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_matches('|')
        .split(" | ")
        .map(|c| c.trim().to_string())
        .collect()
}

/// One markdown table: its header cells and its rows' cells.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// Every table of `text`: a `|` line followed by a `|---` line, then its `|` lines.
fn tables(text: &str) -> Vec<Table> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        if lines[i].starts_with('|') && lines[i + 1].starts_with("|---") {
            let header = cells(lines[i]);
            let mut rows = Vec::new();
            let mut j = i + 2;
            while j < lines.len() && lines[j].starts_with('|') {
                rows.push(cells(lines[j]));
                j += 1;
            }
            out.push(Table { header, rows });
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// What is wrong with a `shape` cell, if anything: it must start with exactly one of
/// [`SHAPES`] as a whole word, and `extension`/`change` must go on with `: ` and a reason.
fn shape_problem(cell: &str) -> Option<String> {
    let word: String = cell
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !SHAPES.contains(&word.as_str()) {
        return Some(format!(
            "starts with {word:?}, not one of {SHAPES:?}: {cell:?}"
        ));
    }
    if word == "original" {
        return None;
    }
    let Some(reason) = cell[word.len()..].strip_prefix(": ") else {
        return Some(format!(
            "`{word}` must be followed by `: ` and why: {cell:?}"
        ));
    };
    let words = reason
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count();
    (words < MIN_REASON_WORDS)
        .then(|| format!("`{word}` gives no reason (at least {MIN_REASON_WORDS} words): {cell:?}"))
}

/// The row names (first cell, one backticked name) and shape problems of every table of
/// `text` whose header starts with `first_header`. A table without a `shape` column, or a row
/// whose first cell is not one backticked name, is a problem too.
fn named_rows(text: &str, first_header: &str, problems: &mut Vec<String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for table in tables(text)
        .into_iter()
        .filter(|t| t.header.first().map(String::as_str) == Some(first_header))
    {
        let Some(col) = table.header.iter().position(|h| h == "shape") else {
            problems.push(format!(
                "a `{first_header}` table has no `shape` column: {:?}",
                table.header
            ));
            continue;
        };
        for row in &table.rows {
            let first = row.first().map(String::as_str).unwrap_or("");
            let name = first
                .strip_prefix('`')
                .and_then(|s| s.strip_suffix('`'))
                .filter(|s| !s.contains('`'));
            let Some(name) = name else {
                problems.push(format!(
                    "a `{first_header}` row does not start with one backticked name: {first:?}"
                ));
                continue;
            };
            match row.get(col) {
                None => problems.push(format!("`{name}`: the row has no `shape` cell")),
                Some(cell) => {
                    if let Some(p) = shape_problem(cell) {
                        problems.push(format!("`{name}`: shape {p}"));
                    }
                }
            }
            names.insert(name.to_string());
        }
    }
    names
}

/// The names of `code` without a row, and the rows that name nothing of `code`.
fn compare(kind: &str, code: &[&str], rows: &BTreeSet<String>, problems: &mut Vec<String>) {
    let code: BTreeSet<String> = code.iter().map(|s| s.to_string()).collect();
    for missing in code.difference(rows) {
        problems.push(format!("{kind} `{missing}` has no row with a shape"));
    }
    for extra in rows.difference(&code) {
        problems.push(format!(
            "a row names `{extra}`, which is no {kind} of names.rs"
        ));
    }
}

#[test]
fn every_command_and_event_row_says_whether_it_is_the_originals_shape_and_why_not() {
    let doc = doc();
    let mut problems = Vec::new();
    let commands = named_rows(section(&doc, "Commands"), "command", &mut problems);
    compare("command", names::cmd::ALL, &commands, &mut problems);
    let events = named_rows(section(&doc, "Events"), "event", &mut problems);
    compare("event", names::event::ALL, &events, &mut problems);
    assert!(problems.is_empty(), "PROTOCOL.md:\n{}", problems.join("\n"));
}

#[test]
fn every_legacy_gateway_request_row_says_whether_it_is_the_originals_shape_and_why_not() {
    let doc = doc();
    let legacy = section(&doc, "Legacy gateway socket");
    let tables: Vec<Table> = tables(legacy)
        .into_iter()
        .filter(|t| t.header.first().map(String::as_str) == Some("request"))
        .collect();
    assert!(
        !tables.is_empty(),
        "PROTOCOL.md has no legacy request table"
    );
    let mut problems = Vec::new();
    for table in &tables {
        let Some(col) = table.header.iter().position(|h| h == "shape") else {
            problems.push(format!("no `shape` column: {:?}", table.header));
            continue;
        };
        for row in &table.rows {
            match row.get(col) {
                None => problems.push(format!("{:?}: no `shape` cell", row[0])),
                Some(cell) => {
                    if let Some(p) = shape_problem(cell) {
                        problems.push(format!("{:?}: shape {p}", row[0]));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "PROTOCOL.md:\n{}", problems.join("\n"));
}

#[test]
fn a_shape_cell_needs_one_of_the_three_words_and_a_reason_unless_original() {
    assert_eq!(shape_problem("original"), None);
    assert_eq!(shape_problem("original (plus `pid`)"), None);
    assert_eq!(
        shape_problem("extension: MCP servers did not exist in the original"),
        None
    );
    assert!(shape_problem("extension").is_some());
    assert!(shape_problem("change:").is_some());
    assert!(shape_problem("change: new").is_some());
    assert!(shape_problem("originally the same").is_some());
    assert!(shape_problem("*(new)*").is_some());
    assert!(shape_problem("").is_some());
}
