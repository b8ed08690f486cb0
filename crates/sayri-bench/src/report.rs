//! The report: sections of rows, rendered as the `BENCHMARKS.md` Markdown file.
//!
//! A section is one area (token economy, footprint, spawn overhead, …); later features add a
//! section (a routine run, prompts with many skills, speech-to-text speed) by writing a
//! function that returns one and listing it in `main.rs`.

use crate::stats::{Stat, num};
use std::fmt::Write;

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// The measured value (`None`: the measurement failed; `note` says why).
    pub value: Option<Stat>,
    /// Unit of the value (`ms`, `MB`, `tokens`, …).
    pub unit: &'static str,
    /// Decimals shown.
    pub decimals: usize,
    /// What peers or the target measure for the same figure (free text), if anything.
    pub reference: String,
    /// How it was measured, or why it is missing.
    pub note: String,
}

impl Row {
    /// A row with a value.
    pub fn new(figure: impl Into<String>, value: Option<Stat>, unit: &'static str) -> Row {
        Row {
            figure: figure.into(),
            value,
            unit,
            decimals: 1,
            reference: String::new(),
            note: String::new(),
        }
    }

    /// Sets the decimals shown.
    pub fn decimals(mut self, d: usize) -> Row {
        self.decimals = d;
        self
    }

    /// Sets the reference column.
    pub fn reference(mut self, r: impl Into<String>) -> Row {
        self.reference = r.into();
        self
    }

    /// Sets the note column.
    pub fn note(mut self, n: impl Into<String>) -> Row {
        self.note = n.into();
        self
    }

    fn value_text(&self) -> String {
        match self.value {
            None => "—".into(),
            Some(s) if s.n <= 1 || s.min == s.max => {
                format!("{} {}", num(s.median, self.decimals), self.unit)
            }
            Some(s) => format!(
                "{} {} ({}–{}, n={})",
                num(s.median, self.decimals),
                self.unit,
                num(s.min, self.decimals),
                num(s.max, self.decimals),
                s.n
            ),
        }
    }
}

/// A titled group of rows with an explanation of the method.
#[derive(Debug, Clone)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// How the figures were obtained (Markdown).
    pub method: String,
    /// The figures.
    pub rows: Vec<Row>,
    /// Markdown shown after the table (details too wide for it), or empty.
    pub extra: String,
}

/// Facts about the machine a report was measured on.
#[derive(Debug, Clone)]
pub struct Machine {
    /// CPU model and logical cores.
    pub cpu: String,
    /// Total memory.
    pub memory: String,
    /// Kernel release.
    pub kernel: String,
    /// Load average when the run started.
    pub load: String,
}

fn first_line_with(path: &str, prefix: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .find(|l| l.starts_with(prefix))
        .map(|l| l.split_once(':').map_or(l, |(_, v)| v).trim().to_string())
}

impl Machine {
    /// Reads `/proc` and `uname`.
    pub fn detect() -> Machine {
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let model = first_line_with("/proc/cpuinfo", "model name").unwrap_or_else(|| "?".into());
        let mem_kib: f64 = first_line_with("/proc/meminfo", "MemTotal")
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        let load = std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "?".into());
        Machine {
            cpu: format!("{cores} logical cores ({model})"),
            memory: format!("{:.1} GiB", mem_kib / 1024.0 / 1024.0),
            kernel: format!("Linux {kernel}"),
            load,
        }
    }
}

/// Escapes `|` so text stays in its table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The whole report as Markdown.
pub fn render(machine: &Machine, date: &str, command: &str, sections: &[Section]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Sayri benchmarks\n");
    let _ = writeln!(
        md,
        "Every figure below comes from one run of `{command}` (nothing here is asserted by a test). \
         Timings are medians with min–max and the number of runs; counts are exact. Reference \
         figures are other tools measured on a machine of this kind with the same method, as \
         quoted in the project's issue tracker — they were not re-measured here.\n"
    );
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| date | {date} |");
    let _ = writeln!(md, "| command | `{command}` |");
    let _ = writeln!(md, "| CPU | {} |", cell(&machine.cpu));
    let _ = writeln!(md, "| memory | {} |", machine.memory);
    let _ = writeln!(md, "| kernel | {} |", machine.kernel);
    let _ = writeln!(md, "| load average at start | {} |", machine.load);
    for s in sections {
        md.push_str(&render_section(s, ""));
    }
    md
}

/// One section as Markdown, from its `## ` heading on; `provenance` (when not empty) is a line
/// after the method saying which run measured it.
pub fn render_section(s: &Section, provenance: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "\n## {}\n\n{}\n", s.title, s.method.trim());
    if !provenance.is_empty() {
        let _ = writeln!(md, "{provenance}\n");
    }
    let _ = writeln!(
        md,
        "| figure | Sayri | reference | how |\n|---|---|---|---|"
    );
    for r in &s.rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            cell(&r.figure),
            cell(&r.value_text()),
            cell(&r.reference),
            cell(&r.note)
        );
    }
    if !s.extra.is_empty() {
        md.push_str(&s.extra);
    }
    md
}

/// `report` with the section titled `title` replaced by `section` (rendered by
/// [`render_section`]); a report without that section gets it before the `smaps_rollup`
/// appendix, or at the end. A section runs from its `## ` heading to the next one.
pub fn replace_section(report: &str, title: &str, section: &str) -> String {
    let heading = format!("\n## {title}\n");
    let next_heading = |from: usize| {
        report[from..]
            .find("\n## ")
            .map_or(report.len(), |i| from + i)
    };
    let (start, end) = match report.find(&heading) {
        Some(at) => (at, next_heading(at + heading.len())),
        None => {
            let at = report
                .find("\n## Daemon `smaps_rollup`")
                .unwrap_or(report.len());
            (at, at)
        }
    };
    let mut out = String::with_capacity(report.len() + section.len());
    out.push_str(report[..start].trim_end_matches('\n'));
    out.push('\n');
    out.push_str(section.trim_end_matches('\n'));
    out.push('\n');
    out.push_str(&report[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "# Sayri benchmarks\n\nintro\n\n## A\n\nold a\n\n## B\n\nold b\n\n## Daemon `smaps_rollup`\n\nmaps\n";

    #[test]
    fn a_section_is_replaced_in_place_and_the_rest_is_kept() {
        let got = replace_section(REPORT, "A", "\n## A\n\nnew a\n");
        assert_eq!(
            got,
            "# Sayri benchmarks\n\nintro\n\n## A\n\nnew a\n\n## B\n\nold b\n\n## Daemon `smaps_rollup`\n\nmaps\n"
        );
    }

    #[test]
    fn a_new_section_goes_before_the_smaps_appendix() {
        let got = replace_section(REPORT, "C", "\n## C\n\nc\n");
        assert!(got.contains("old b\n\n## C\n\nc\n\n## Daemon"), "{got}");
        let plain = replace_section("# R\n\n## A\n\na\n", "C", "\n## C\n\nc\n");
        assert_eq!(plain, "# R\n\n## A\n\na\n\n## C\n\nc\n");
    }
}
