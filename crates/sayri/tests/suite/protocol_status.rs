//! PROTOCOL.md says which commands this build implements and who may use them; the dispatcher
//! is the truth. The two must agree, so the document cannot drift from the wire.

use sayri_daemon::daemon::default_dispatcher;

#[test]
fn protocol_md_marks_exactly_the_commands_the_daemon_implements_with_their_access() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../PROTOCOL.md"))
        .expect("PROTOCOL.md at the repository root");
    let d = default_dispatcher();
    let mut checked = 0;
    for name in sayri_protocol::names::cmd::ALL {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("PROTOCOL.md has no table row for `{name}`"));
        let cells: Vec<&str> = row.trim().trim_matches('|').split(" | ").collect();
        let (access, status) = (cells[cells.len() - 2].trim(), cells[cells.len() - 1].trim());
        let registered = d.commands().find(|(c, ..)| c == name);
        assert_eq!(
            status == "implemented",
            registered.is_some(),
            "`{name}`: PROTOCOL.md says {status:?}, the dispatcher {}",
            if registered.is_some() {
                "has it"
            } else {
                "does not"
            }
        );
        if let Some((_, class, _)) = registered {
            assert_eq!(
                access,
                class.name(),
                "`{name}`: PROTOCOL.md says access {access:?}, the dispatcher {class:?}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, sayri_protocol::names::cmd::ALL.len());
}
