//! PROTOCOL.md says which commands this build implements; the dispatcher is the truth. The two
//! must agree, so the document cannot drift from the wire.

use sayri::daemon::default_dispatcher;

#[test]
fn protocol_md_marks_exactly_the_commands_the_daemon_implements() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../PROTOCOL.md"))
        .expect("PROTOCOL.md at the repository root");
    let d = default_dispatcher();
    let mut checked = 0;
    for name in sayri_protocol::names::cmd::ALL {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("PROTOCOL.md has no table row for `{name}`"));
        let documented = row.trim_end().ends_with("| implemented |");
        let implemented = d.commands().any(|(c, ..)| c == *name);
        assert_eq!(
            documented, implemented,
            "`{name}`: PROTOCOL.md says implemented={documented}, the dispatcher says {implemented}"
        );
        checked += 1;
    }
    assert_eq!(checked, sayri_protocol::names::cmd::ALL.len());
}
