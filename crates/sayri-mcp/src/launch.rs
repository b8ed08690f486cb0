//! How a stdio server is started: the sandbox request built from its definition.
//!
//! The server runs as `exec PROGRAM ARGS…` under the exec helper at its level (default 2, with
//! a workspace of its own, `$STATE/sandboxes/mcp-<name>`), network off unless declared, with the
//! environment of [`crate::env`] and its declared secrets from the vault, and descriptors 0–2
//! only (pipes to Sayri). At levels 1–2 it reads only the system directories, its workspace and
//! what [`readable_paths`] lists (its program's install tree and what it was given). A level the
//! kernel cannot give refuses the server; it is never started on the host instead.

use crate::servers::{ServerDef, Transport};
use sayri_core::ports::ExecRequest;
use sayri_protocol::SandboxLevel;
use std::path::{Path, PathBuf};
use std::time::Duration;
use zeroize::Zeroizing;

/// What the caller settles before a stdio server starts.
pub struct Launch {
    /// The server's own workspace (level 2: its only writable place and its `HOME`).
    pub workspace: PathBuf,
    /// The declared secrets' values, by variable name, resolved from the vault.
    pub secrets: Vec<(String, Zeroizing<String>)>,
    /// How long the server may run in all (the sandbox kills its tree after that).
    pub lifetime: Duration,
    /// How long the handshake may take.
    pub handshake_timeout: Duration,
}

impl Launch {
    /// A launch for `def` with its workspace under `state_dir` (see [`workspace_for`]), no
    /// secrets, a lifetime of an hour and a handshake of 30 s.
    pub fn new(state_dir: &Path, def: &ServerDef) -> Self {
        Launch {
            workspace: workspace_for(state_dir, &def.name),
            secrets: Vec::new(),
            lifetime: Duration::from_secs(3600),
            handshake_timeout: Duration::from_secs(30),
        }
    }
}

/// A server's workspace: `$STATE/sandboxes/mcp-<name>`, beside the agents' workspaces (the
/// sandbox hides the rest of the state directory from every level-1/2 program).
pub fn workspace_for(state_dir: &Path, name: &str) -> PathBuf {
    state_dir.join("sandboxes").join(format!("mcp-{name}"))
}

/// The declared secrets of `def`, each looked up by its vault key with `lookup`.
///
/// # Errors
/// [`MissingSecret`]: a key is not in the vault.
pub fn resolve_secrets(
    def: &ServerDef,
    lookup: impl Fn(&str) -> Option<Zeroizing<String>>,
) -> Result<Vec<(String, Zeroizing<String>)>, MissingSecret> {
    let mut out = Vec::new();
    for (var, key) in &def.secrets {
        let Some(v) = lookup(key) else {
            return Err(MissingSecret {
                server: def.name.clone(),
                key: key.clone(),
                variable: var.clone(),
            });
        };
        out.push((var.clone(), v));
    }
    Ok(out)
}

/// A declared secret the vault does not hold; the server is not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "MCP server {server} needs the vault secret {key} (given to it as {variable}), which is not in the vault; set it with `sayri vault set {key}`"
)]
pub struct MissingSecret {
    /// The server.
    pub server: String,
    /// The vault key.
    pub key: String,
    /// The variable the server gets it as.
    pub variable: String,
}

/// Why a stdio server's sandbox request cannot be made; the server is not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The definition is invalid.
    #[error(transparent)]
    Invalid(#[from] crate::servers::InvalidServer),
    /// The server is an HTTP server.
    #[error("not a stdio server")]
    NotStdio,
    /// Its level is not 1–3.
    #[error("level {0} is not offered to MCP servers; choose 1, 2 or 3")]
    Level(u8),
    /// An argument holds a NUL byte.
    #[error("argument {0:?} holds a NUL byte")]
    NulArgument(String),
}

/// The sandbox level of a level number 1–3.
///
/// # Errors
/// [`LaunchError::Level`]: any other number.
pub fn level_of(n: u8) -> Result<SandboxLevel, LaunchError> {
    match n {
        1 => Ok(SandboxLevel::ReadOnly),
        2 => Ok(SandboxLevel::IsolatedDev),
        3 => Ok(SandboxLevel::HostUser),
        other => Err(LaunchError::Level(other)),
    }
}

/// The shell text that replaces `bash` with the program: `exec -- 'PROGRAM' 'ARG'…`.
///
/// # Errors
/// [`LaunchError::NulArgument`]: an argument holds a NUL byte.
pub fn command_text(command: &str, args: &[String]) -> Result<String, LaunchError> {
    let mut words = vec!["exec".to_string(), "--".to_string()];
    for a in std::iter::once(command).chain(args.iter().map(String::as_str)) {
        let q = shlex::try_quote(a).map_err(|_| LaunchError::NulArgument(a.to_string()))?;
        words.push(q.into_owned());
    }
    Ok(words.join(" "))
}

/// The sandbox request that runs the stdio server `def`.
///
/// # Errors
/// [`LaunchError`]: `def` is not a stdio server or is invalid.
pub fn exec_request(def: &ServerDef, launch: &Launch) -> Result<ExecRequest, LaunchError> {
    def.validate()?;
    let Transport::Stdio { command, args } = &def.transport else {
        return Err(LaunchError::NotStdio);
    };
    let level = level_of(def.level)?;
    let mut env: Vec<(String, String)> = def
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in &launch.secrets {
        env.push((k.clone(), v.as_str().to_string()));
    }
    Ok(ExecRequest {
        command: command_text(command, args)?,
        level,
        agent_id: format!("mcp-{}", def.name),
        workspace: Some(launch.workspace.clone()),
        timeout: launch.lifetime,
        allow_network: def.network,
        env,
        // The server's secrets were read from the vault by name above and are in `env`; no
        // agent profile is involved.
        allowed_secrets: Vec::new(),
        output_limit: 0,
        readable: (level <= SandboxLevel::IsolatedDev).then(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            readable_paths(def, std::env::var_os("PATH").as_deref(), home.as_deref())
        }),
    })
}

/// The text of every path `def` is given, with what it is: its program, each argument that is
/// an absolute path (alone or after `=`, as in `--config=/etc/c.json`), each `--read` path and
/// each literal variable value that is an absolute path.
fn given_paths(def: &ServerDef) -> Vec<(&'static str, &str)> {
    let Transport::Stdio { command, args } = &def.transport else {
        return Vec::new();
    };
    let mut given = vec![("its program", command.as_str())];
    for a in args {
        let path = a.split_once('=').map_or(a.as_str(), |(_, v)| v);
        if path.starts_with('/') {
            given.push(("its argument", path));
        }
    }
    given.extend(
        def.read
            .iter()
            .filter_map(|r| r.to_str())
            .map(|r| ("its `--read` path", r)),
    );
    given.extend(
        def.env
            .values()
            .filter(|v| v.starts_with('/'))
            .map(|v| ("a variable's value", v.as_str())),
    );
    given
}

/// The user's home as given and as its links resolve; no directory that holds it (or `/`) is
/// ever made readable whole by what a server is given, only by an explicit `--read`.
struct Home(Vec<PathBuf>);

impl Home {
    fn new(home: Option<&Path>) -> Home {
        let mut v: Vec<PathBuf> = home.into_iter().map(Path::to_path_buf).collect();
        if let Some(c) = home.and_then(|h| std::fs::canonicalize(h).ok()) {
            v.push(c);
        }
        Home(v)
    }

    /// `/`, the home, or a directory above it.
    fn too_wide(&self, p: &Path) -> bool {
        p == Path::new("/") || self.0.iter().any(|h| h.starts_with(p))
    }

    /// A directory right inside the home whose name starts with `.` (`~/.cargo`, `~/.local`),
    /// which holds more than programs.
    fn dot_dir(&self, p: &Path) -> bool {
        let dotted = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        dotted && p.parent().is_some_and(|up| self.0.iter().any(|h| h == up))
    }
}

/// `path` with its directory resolved (no `..`, no linked directories) and its last component
/// kept as named, so a link to an interpreter stays in the tree it was placed in.
fn tidy(path: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(path.parent()?).ok()?;
    Some(dir.join(path.file_name()?))
}

/// The install tree of a program or script at `path` (tidied): the outermost `node_modules`
/// directory above it when there is one (a Node package needs its neighbours), else the
/// directory above a `bin`/`sbin` directory holding it (a virtual environment, a Node or
/// Python install) — but only the `bin` directory itself when the one above is the home (or
/// above it) or a dot directory of the home that is not a virtual environment (`~/.cargo`,
/// `~/.local`) — else its own directory, or the file alone when that is the home or above.
fn install_tree(path: &Path, home: &Home) -> PathBuf {
    if let Some(top) = path
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
    {
        return top.to_path_buf();
    }
    let Some(dir) = path.parent() else {
        return path.to_path_buf();
    };
    let above_bin = dir
        .file_name()
        .is_some_and(|n| n == "bin" || n == "sbin")
        .then(|| dir.parent())
        .flatten()
        .filter(|up| !home.too_wide(up))
        .filter(|up| !home.dot_dir(up) || up.join("pyvenv.cfg").is_file());
    match above_bin {
        Some(tree) => tree.to_path_buf(),
        None if home.too_wide(dir) => path.to_path_buf(),
        None => dir.to_path_buf(),
    }
}

/// The interpreter a script at `path` names on its `#!` line (through `/usr/bin/env`, found on
/// `path_var`), when it is one.
fn interpreter_of(
    path: &Path,
    path_var: Option<&std::ffi::OsStr>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let name = if Path::new(first).file_name().is_some_and(|n| n == "env") {
        words.find(|w| !w.starts_with('-'))?
    } else {
        first
    };
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    which::which_in(name, path_var, home.unwrap_or(Path::new("/"))).ok()
}

/// What the stdio server `def` reads at levels 1–2 besides the system directories and its
/// workspace: every `--read` path as declared; its program's [`install_tree`] (found on
/// `path_var` when it is a bare name; as named and as its links resolve) and that of the
/// interpreter a script program names on its `#!` line; the script it runs (the first
/// argument naming an existing file) with its [`install_tree`]; every other existing file it
/// is given (see `given_paths`) alone; every existing directory it is given whole, unless that
/// is `/`, the home or above (those only through `--read`). `home` is the user's home.
pub fn readable_paths(
    def: &ServerDef,
    path_var: Option<&std::ffi::OsStr>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let home_dirs = Home::new(home);
    let mut out: Vec<PathBuf> = def.read.clone();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    let mut script_seen = false;
    for (what, text) in given_paths(def) {
        let mut path = PathBuf::from(text);
        if what == "its program" && !text.contains('/') {
            let cwd = home.unwrap_or(Path::new("/"));
            match which::which_in(text, path_var, cwd) {
                Ok(found) => path = found,
                Err(_) => continue,
            }
        }
        if what == "its `--read` path" || !path.exists() {
            continue;
        }
        let Ok(resolved) = std::fs::canonicalize(&path) else {
            continue;
        };
        if resolved.is_dir() {
            if what != "its program" && !home_dirs.too_wide(&resolved) {
                push(resolved);
            }
            continue;
        }
        let script = what == "its argument" && !std::mem::replace(&mut script_seen, true);
        if what != "its program" && !script {
            push(resolved);
            continue;
        }
        let mut trees = vec![tidy(&path), Some(resolved)];
        if what == "its program"
            && let Some(interpreter) = interpreter_of(&path, path_var, home)
        {
            trees.extend([tidy(&interpreter), std::fs::canonicalize(&interpreter).ok()]);
        }
        for p in trees.into_iter().flatten() {
            push(install_tree(&p, &home_dirs));
        }
    }
    out
}

/// The first of `def`'s read paths the sandbox hides (`protected`: its deny-read list), as the
/// refusal reason: such a server cannot do its job at a sandboxed level.
pub fn hidden_read_path(def: &ServerDef, protected: &[PathBuf]) -> Option<String> {
    if def.level >= 3 {
        return None;
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    for r in &def.read {
        let r = canon(r);
        if let Some(d) = protected
            .iter()
            .map(|d| canon(d))
            .find(|d| r.starts_with(d))
        {
            return Some(format!(
                "read path {} lies inside {}, which the sandbox hides at level {}; choose another path",
                r.display(),
                d.display(),
                def.level
            ));
        }
    }
    None
}

/// Why a path the stdio server `def` is given cannot be seen inside the sandbox, if one
/// cannot: at levels 1 and 2 the sandbox replaces `/tmp` with a private, empty one, so a
/// program installed under `/tmp` (a virtual environment in a home directory under `/tmp`,
/// say) would start as "No such file or directory", and a script, a `--read` path or a file
/// named in an argument or a variable would be missing inside. The paths checked: the program,
/// every argument that is an absolute path (alone or after `=`, as in `--config=/tmp/c.json`),
/// every `--read` path and every literal variable value that is an absolute path — each one
/// only when it exists on the host (a path the server means to create in its own `/tmp` is
/// fine). Such a server is refused with this reason instead.
pub fn hidden_under_tmp(def: &ServerDef) -> Option<String> {
    if !matches!(def.transport, Transport::Stdio { .. }) || def.level >= 3 {
        return None;
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let tmp = canon(Path::new("/tmp"));
    let under_tmp = |text: &str| {
        let path = Path::new(text);
        (path.is_absolute() && path.exists() && canon(path).starts_with(&tmp)).then(|| canon(path))
    };
    let given = given_paths(def).into_iter();
    let (what, path) = given
        .filter_map(|(what, text)| under_tmp(text).map(|p| (what, p)))
        .next()?;
    Some(format!(
        "{what} {} lies under {}, which the sandbox replaces with a private, empty one at level {}; put the server's files outside {} (or run it at level 3 with `--level 3`)",
        path.display(),
        tmp.display(),
        def.level,
        tmp.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_text_execs_the_program_with_each_argument_quoted() {
        let t = command_text("mcp-server-time", &["--tz".into(), "it's; rm -rf ~".into()]).unwrap();
        assert_eq!(t, r#"exec -- mcp-server-time --tz "it's; rm -rf ~""#);
        assert!(command_text("x", &["a\0b".into()]).is_err());
    }

    #[test]
    fn the_request_carries_level_network_workspace_and_only_declared_variables() {
        let mut def = ServerDef::stdio("notes", "python3", vec!["srv.py".into()]);
        def.env.insert("NOTES_DIR".into(), "/tmp/notes".into());
        def.secrets
            .insert("NOTES_TOKEN".into(), "NOTES_TOKEN".into());
        let mut launch = Launch::new(Path::new("/state"), &def);
        launch.secrets = resolve_secrets(&def, |k| {
            (k == "NOTES_TOKEN").then(|| Zeroizing::new("tok".to_string()))
        })
        .unwrap();
        let r = exec_request(&def, &launch).unwrap();
        assert_eq!(r.level, SandboxLevel::IsolatedDev);
        assert!(!r.allow_network);
        assert_eq!(
            r.workspace.as_deref(),
            Some(Path::new("/state/sandboxes/mcp-notes"))
        );
        let mut names: Vec<&str> = r.env.iter().map(|(k, _)| k.as_str()).collect();
        names.sort();
        assert_eq!(names, ["NOTES_DIR", "NOTES_TOKEN"]);
        assert!(!r.command.contains("tok"), "no secret in argv");
        let missing = resolve_secrets(&def, |_| None).unwrap_err().to_string();
        assert!(missing.contains("sayri vault set NOTES_TOKEN"), "{missing}");
    }

    #[test]
    fn a_read_path_the_sandbox_hides_is_named() {
        let mut def = ServerDef::stdio("fs", "srv", vec![]);
        def.read.push("/home/u/.ssh/keys".into());
        let why = hidden_read_path(&def, &["/home/u/.ssh".into()]).unwrap();
        assert!(why.contains(".ssh"), "{why}");
        def.level = 3;
        assert!(hidden_read_path(&def, &["/home/u/.ssh".into()]).is_none());
    }

    #[test]
    fn a_program_under_the_private_tmp_is_named_at_levels_1_and_2_only() {
        let dir = tempfile::Builder::new()
            .prefix("sy-mcp-prog")
            .tempdir_in("/tmp")
            .unwrap();
        let program = dir.path().join("server");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        let mut def = ServerDef::stdio("srv", program.to_str().unwrap(), vec![]);
        for level in [1, 2] {
            def.level = level;
            let why = hidden_under_tmp(&def).expect("refused");
            assert!(why.contains("/tmp") && why.contains("--level 3"), "{why}");
        }
        def.level = 3;
        assert!(
            hidden_under_tmp(&def).is_none(),
            "level 3 sees the host's /tmp"
        );
        // A script, a `--read` path, an `--opt=PATH` argument or a variable's value under
        // /tmp are as hidden as the program.
        let script = program.to_str().unwrap().to_string();
        let mut interpreted = ServerDef::stdio("srv", "/usr/bin/env", vec![script.clone()]);
        interpreted.level = 2;
        let why = hidden_under_tmp(&interpreted).expect("the script is hidden");
        assert!(why.starts_with("its argument"), "{why}");
        interpreted.transport = Transport::Stdio {
            command: "/usr/bin/env".into(),
            args: vec![format!("--config={script}")],
        };
        assert!(hidden_under_tmp(&interpreted).is_some(), "--opt=PATH");
        let mut read = ServerDef::stdio("srv", "/usr/bin/env", vec![]);
        read.read = vec![dir.path().to_path_buf()];
        assert!(hidden_under_tmp(&read).is_some_and(|w| w.contains("--read")));
        let mut var = ServerDef::stdio("srv", "/usr/bin/env", vec![]);
        var.env.insert("CONFIG".into(), script.clone());
        assert!(hidden_under_tmp(&var).is_some_and(|w| w.contains("variable")));
        let scratch = ServerDef::stdio("srv", "/usr/bin/env", vec!["/tmp/not-there-yet".into()]);
        assert!(
            hidden_under_tmp(&scratch).is_none(),
            "a path the server will create in its own /tmp is fine"
        );
        let elsewhere = ServerDef::stdio("srv", "/usr/bin/env", vec![]);
        assert!(hidden_under_tmp(&elsewhere).is_none());
        let on_path = ServerDef::stdio("srv", "mcp-server-time", vec![]);
        assert!(
            hidden_under_tmp(&on_path).is_none(),
            "a bare name is looked up inside"
        );
    }

    /// A file tree for the readable-path tests: `root/home` is the home.
    fn tree(files: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for f in files {
            let p = root.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        root
    }

    #[test]
    fn a_server_reads_its_program_tree_and_what_it_was_given_and_nothing_else() {
        let root = tree(&[
            "home/venv/bin/srv",
            "home/apps/node_modules/@x/fs/dist/index.js",
            "home/notes/a.txt",
            "home/other/b.txt",
            "home/loose.py",
        ]);
        let r = root.path();
        let home = r.join("home");
        let p = |s: &str| home.join(s).display().to_string();
        let mut def = ServerDef::stdio(
            "s",
            &p("venv/bin/srv"),
            vec![
                p("apps/node_modules/@x/fs/dist/index.js"),
                format!("--root={}", p("notes")),
                p("loose.py"),
                p("missing/dir"),
                "relative/notes".into(),
            ],
        );
        def.read.push(PathBuf::from("/srv/declared"));
        let got = readable_paths(&def, None, Some(&home));
        assert_eq!(
            got,
            vec![
                PathBuf::from("/srv/declared"),
                home.join("venv"),
                home.join("apps/node_modules"),
                home.join("notes"),
                home.join("loose.py"),
            ],
            "the program's venv, the script's node_modules, the given directory, a file in the home alone; {got:?}"
        );
        assert!(!got.iter().any(|g| g == &home || g.ends_with("other")));
    }

    #[test]
    fn a_bare_program_name_is_found_on_path_and_a_program_in_the_home_bin_is_its_directory() {
        let root = tree(&["home/bin/tool"]);
        let home = root.path().join("home");
        let bin = home.join("bin");
        std::fs::set_permissions(
            bin.join("tool"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let def = ServerDef::stdio("s", "tool", Vec::new());
        let path = std::env::join_paths([bin.as_path(), Path::new("/usr/bin")]).unwrap();
        let got = readable_paths(&def, Some(&path), Some(&home));
        assert_eq!(got, vec![bin.clone()], "~/bin, not the home: {got:?}");
        let def = ServerDef::stdio("s", "no-such-program-anywhere", Vec::new());
        assert!(readable_paths(&def, Some(&path), Some(&home)).is_empty());
    }

    #[test]
    fn nothing_a_server_is_given_makes_the_home_or_a_dot_directory_readable_whole() {
        let root = tree(&[
            "real/bin/srv.py",
            "real/settings.json",
            "real/.cargo/bin/tool",
            "real/.cargo/credentials.toml",
            "real/.venv/bin/python",
            "real/.venv/pyvenv.cfg",
        ]);
        let real = root.path().join("real");
        let link = root.path().join("home");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let home = |s: &str| format!("{}/{s}", link.display());
        let wide = |def: &ServerDef| {
            let got = readable_paths(def, None, Some(&link));
            let bad: Vec<&PathBuf> = got
                .iter()
                .filter(|g| real.starts_with(g) || link.starts_with(g) || g.ends_with(".cargo"))
                .collect();
            assert!(bad.is_empty(), "{def:?} reads {bad:?} whole: {got:?}");
            got
        };
        // `..` in a program or an argument, a home reached through a link, a value of `/`.
        let mut def = ServerDef::stdio(
            "s",
            &home("bin/srv.py"),
            vec![
                format!("--config={}", home("bin/../settings.json")),
                home("."),
            ],
        );
        def.env.insert("PREFIX".into(), "/".into());
        let got = wide(&def);
        assert!(got.contains(&real.join("bin")), "{got:?}");
        assert!(
            got.contains(&real.join("settings.json")),
            "the file alone: {got:?}"
        );
        wide(&ServerDef::stdio("s", &home("bin/../srv.py"), Vec::new()));
        // A program in `~/.cargo/bin` reads that directory, not `~/.cargo`; a virtual
        // environment in the home is read whole.
        let got = wide(&ServerDef::stdio("s", &home(".cargo/bin/tool"), Vec::new()));
        assert_eq!(got, vec![real.join(".cargo/bin")]);
        let got = wide(&ServerDef::stdio(
            "s",
            &home(".venv/bin/python"),
            Vec::new(),
        ));
        assert!(got.contains(&real.join(".venv")), "{got:?}");
    }
}
