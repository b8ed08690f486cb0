use super::*;
use std::os::unix::fs::{PermissionsExt, symlink};

struct Tree {
    _tmp: tempfile::TempDir,
    dirs: PluginDirs,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = PluginDirs {
        user: tmp.path().join("config/plugins"),
        system: tmp.path().join("share/plugins"),
    };
    for d in [&dirs.user, &dirs.system] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    Tree { _tmp: tmp, dirs }
}

/// Writes plugin folder `root/name` with `manifest` and the given files (mode 0644).
fn plugin(root: &Path, name: &str, manifest: &str, files: &[&str]) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(d.join(MANIFEST), manifest).unwrap();
    for f in files {
        std::fs::write(d.join(f), "print('hi')\n").unwrap();
    }
    d
}

fn reason(found: &Discovery, id: &str) -> String {
    found
        .broken(id)
        .unwrap_or_else(|| panic!("{id} is not broken: {found:#?}"))
        .reason
        .clone()
}

#[test]
fn a_gateway_plugin_loads_with_the_original_defaults() {
    let t = tree();
    plugin(
        &t.dirs.user,
        "echo-gateway",
        r#"{"required_secrets": ["ECHO_TOKEN"], "authorization": {"mode": "pairing_otp"}}"#,
        &["gateway.py"],
    );
    let found = discover(&t.dirs);
    assert!(found.broken.is_empty(), "{found:#?}");
    let p = found.find("echo-gateway").unwrap();
    assert_eq!(p.kind, PluginKind::Gateway);
    assert_eq!(p.scope, Scope::User);
    assert_eq!(p.name, "echo-gateway");
    assert_eq!(p.version, "1.0.0");
    assert_eq!(p.author, "Sayri Community");
    assert_eq!(p.auth_mode(), "pairing_otp");
    assert_eq!(p.required_secrets(), ["ECHO_TOKEN"]);
    let entry = p.entrypoint.as_ref().unwrap();
    assert_eq!(entry.runner, Runner::Python);
    assert_eq!(entry.path, p.dir.join("gateway.py"));
    assert_eq!(p.settings_file_name(), "echo-gateway.json");
}

#[test]
fn the_users_plugin_wins_over_the_systems_and_the_first_id_wins() {
    let t = tree();
    plugin(&t.dirs.user, "a", r#"{"id": "same", "name": "user"}"#, &[]);
    plugin(
        &t.dirs.user,
        "b",
        r#"{"id": "same", "name": "second"}"#,
        &[],
    );
    plugin(&t.dirs.system, "same", r#"{"name": "system"}"#, &[]);
    plugin(&t.dirs.system, "other", r#"{}"#, &[]);
    let found = discover(&t.dirs);
    assert_eq!(found.find("same").unwrap().name, "user");
    assert_eq!(found.find("other").unwrap().scope, Scope::System);
    assert_eq!(found.shadowed.len(), 2, "{found:#?}");
    assert!(
        found
            .shadowed
            .iter()
            .all(|s| s.used.ends_with("config/plugins/a"))
    );
    assert_eq!(found.plugins.len(), 2);
}

#[test]
fn hostile_manifests_are_listed_as_broken_with_the_reason_and_the_rest_loads() {
    let t = tree();
    let u = &t.dirs.user;
    plugin(
        u,
        "escape",
        r#"{"type": "gateway", "entrypoint": "../../x"}"#,
        &[],
    );
    let outside = t.dirs.user.parent().unwrap().join("outside.py");
    std::fs::write(&outside, "print('owned')\n").unwrap();
    let link = plugin(u, "linked", r#"{"type": "gateway"}"#, &[]);
    symlink(&outside, link.join("gateway.py")).unwrap();
    plugin(u, "badjson", r#"{"id": "badjson", "#, &[]);
    let huge = format!(
        r#"{{"description": "{}"}}"#,
        "x".repeat(MAX_MANIFEST_BYTES as usize)
    );
    plugin(u, "huge", &huge, &[]);
    plugin(u, "slash", r#"{"id": "../evil/x"}"#, &[]);
    plugin(u, "abs", r#"{"entrypoint": "/bin/sh"}"#, &[]);
    plugin(
        u,
        "settings",
        r#"{"ui": {"settings_file": "/home/x/.bashrc"}}"#,
        &[],
    );
    plugin(
        u,
        "reserved",
        r#"{"ui": {"settings_file": "routines.json"}}"#,
        &[],
    );
    plugin(u, "secret", r#"{"required_secrets": ["A=B"]}"#, &[]);
    plugin(u, "svc", r#"{"service": {"start": ["../run.py"]}}"#, &[]);
    plugin(u, "kind", r#"{"type": "daemon"}"#, &[]);
    plugin(u, "fine", r#"{"type": "tool"}"#, &[]);
    let found = discover(&t.dirs);
    assert!(reason(&found, "escape").contains("not a path inside"));
    assert!(reason(&found, "linked").contains("leads out of"));
    assert!(reason(&found, "badjson").contains("not a valid manifest"));
    assert!(reason(&found, "huge").contains("larger than 256 KiB"));
    assert!(reason(&found, "slash").contains("is not 1-48 letters"));
    assert!(reason(&found, "abs").contains("not a path inside"));
    assert!(reason(&found, "settings").contains("plain file name"));
    assert!(reason(&found, "reserved").contains("plain file name"));
    assert!(reason(&found, "secret").contains("environment variable name"));
    assert!(reason(&found, "svc").contains("service.start"));
    assert!(reason(&found, "kind").contains("\"daemon\""));
    assert_eq!(found.broken.len(), 11, "{found:#?}");
    assert_eq!(found.plugins.len(), 1);
    assert_eq!(found.find("fine").unwrap().kind, PluginKind::Tool);
}

#[test]
fn a_linked_manifest_or_a_folder_others_can_write_is_broken() {
    let t = tree();
    let u = &t.dirs.user;
    let elsewhere = t.dirs.user.parent().unwrap().join("m.json");
    std::fs::write(&elsewhere, "{}").unwrap();
    let d = u.join("linkman");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    symlink(&elsewhere, d.join(MANIFEST)).unwrap();
    let open = plugin(u, "open", "{}", &[]);
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let found = discover(&t.dirs);
    assert!(reason(&found, "linkman").contains("leads out of"));
    assert!(reason(&found, "open").contains("chmod go-w"));
    assert!(found.plugins.is_empty());
}

#[test]
fn a_service_block_gets_the_original_defaults_and_its_program_is_checked() {
    let t = tree();
    plugin(
        &t.dirs.user,
        "svc",
        r#"{"service": {"start": ["svc.py", "run", "--fast"], "stop": ["svc.py", "stop"], "enabled_key": "on"}}"#,
        &["svc.py"],
    );
    plugin(
        &t.dirs.user,
        "probe",
        r#"{"service": {"status": ["svc.py"], "auto_start": false}}"#,
        &["svc.py"],
    );
    let found = discover(&t.dirs);
    assert!(found.broken.is_empty(), "{found:#?}");
    let p = found.find("svc").unwrap();
    assert_eq!(p.kind, PluginKind::Service);
    let s = p.service.as_ref().unwrap();
    assert_eq!(s.enabled_key, "on");
    assert!(s.enabled_by_default && s.auto_start);
    assert_eq!(s.enabled_label, "Run this service when Sayri starts");
    let start = s.start.as_ref().unwrap();
    assert_eq!(start.program.path, p.dir.join("svc.py"));
    assert_eq!(start.args, ["run", "--fast"]);
    assert_eq!(s.stop.as_ref().unwrap().args, ["stop"]);
    let probe = found.find("probe").unwrap().service.as_ref().unwrap();
    assert!(probe.start.is_none());
    assert!(!probe.auto_start && !probe.enabled_by_default);
    assert_eq!(found.services().count(), 2);
}

#[test]
fn missing_folders_and_folders_without_a_manifest_are_not_plugins() {
    let t = tree();
    std::fs::create_dir(t.dirs.user.join("empty")).unwrap();
    std::fs::create_dir(t.dirs.user.join(".hidden")).unwrap();
    std::fs::write(t.dirs.user.join(".hidden").join(MANIFEST), "{").unwrap();
    std::fs::write(t.dirs.user.join("loose.json"), "{}").unwrap();
    let found = discover(&PluginDirs {
        user: t.dirs.user.clone(),
        system: t.dirs.system.join("missing"),
    });
    assert_eq!(found, Discovery::default());
}
