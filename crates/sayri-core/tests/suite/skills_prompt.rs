//! Installed skills in the system prompt: one short line each, within the fixed-prompt budget,
//! and only those the agent's (effective) allow-list permits.

use sayri_core::domain::agents::effective_profile;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::domain::prompt::{
    DesktopTools, FIXED_PROMPT_BUDGET_WITH_10_SKILLS, Host, SkillSummary, build_system_prompt,
};
use sayri_core::domain::tokens;

fn ten_skills() -> Vec<SkillSummary> {
    [
        ("weather-now", "weather-now", "Current weather and a three-day forecast for a city, from wttr.in, in the user's units."),
        ("pdf-tools", "PDF Tools", "Merge, split, rotate and extract text from PDF files with qpdf and pdftotext."),
        ("git-commit-helper", "Git Commit Helper", "Writes a conventional commit message from the staged diff and shows it before committing."),
        ("image-resize", "Image Resize", "Resizes and converts images with ImageMagick, keeping the originals untouched."),
        ("csv-analyst", "CSV Analyst", "Summarises a CSV file: columns, types, missing values, top values, simple charts."),
        ("system-health", "System Health", "Reports disk, memory, CPU load and failed systemd units in a few lines."),
        ("journal-errors", "Journal Errors", "Shows the errors of the current boot from journalctl, grouped by unit."),
        ("pandoc-convert", "Pandoc Convert", "Converts documents between Markdown, HTML, DOCX, ODT and PDF with pandoc."),
        ("timezone-convert", "Timezone Convert", "Converts a time between time zones and lists the time in a few cities."),
        ("media-control", "media-control", "Play, pause, skip and show what is playing in any MPRIS player with playerctl."),
    ]
    .into_iter()
    .map(|(id, name, d)| SkillSummary {
        id: id.into(),
        name: name.into(),
        description: d.into(),
    })
    .collect()
}

#[test]
fn ten_installed_skills_keep_the_default_agents_fixed_prompt_within_budget() {
    let skills = ten_skills();
    // Every desktop tool announced: the daemon's longest prompt.
    let host = Host {
        tools: DesktopTools::ALL,
        ..Host::default()
    };
    let p = build_system_prompt(&AgentProfile::builtin_default(), &skills, &host);
    assert!(p.contains("sayri lookup"), "{p}");
    let bare = tokens::exact::count_once(&build_system_prompt(
        &AgentProfile::builtin_default(),
        &[],
        &host,
    ))
    .unwrap();
    let n = tokens::exact::count_once(&p).unwrap();
    println!(
        "default agent fixed prompt: {bare} tokens without skills, {n} tokens with 10 skills (budget {FIXED_PROMPT_BUDGET_WITH_10_SKILLS}), {} bytes",
        p.len()
    );
    for s in &skills {
        assert!(
            p.contains(&format!("- {}:", s.id)),
            "{} not listed:\n{p}",
            s.id
        );
    }
    assert!(
        p.contains("read_skill"),
        "the prompt must say how to read a skill:\n{p}"
    );
    assert!(n <= FIXED_PROMPT_BUDGET_WITH_10_SKILLS, "{n} tokens:\n{p}");
}

#[test]
fn an_agent_lists_only_the_skills_its_effective_allow_list_permits() {
    let skills = ten_skills();
    let mut parent = AgentProfile::builtin_default();
    parent.id = "parent".into();
    parent.allowed_skills = vec!["weather-now".into(), "pdf-tools".into()];
    let mut child = AgentProfile::builtin_default();
    child.id = "child".into();
    child.allowed_skills = vec!["pdf-tools".into(), "media-control".into()];
    let eff = effective_profile(&child, std::slice::from_ref(&parent));
    let p = build_system_prompt(&eff, &skills, &Host::default());
    assert!(p.contains("- pdf-tools:"), "{p}");
    assert!(
        !p.contains("media-control"),
        "the creator does not allow it:\n{p}"
    );
    assert!(
        !p.contains("weather-now"),
        "the child does not ask for it:\n{p}"
    );

    let mut none = AgentProfile::builtin_default();
    none.allowed_skills = vec!["none".into()];
    let p = build_system_prompt(&none, &skills, &Host::default());
    assert!(!p.contains("SKILLS"), "`none` lists no skill:\n{p}");
}
