//! MCP server definitions and the file that holds them (`$CONFIG/mcp-servers.toml`).
//!
//! ```toml
//! [servers.time]
//! command = "mcp-server-time"
//! args = ["--local-timezone", "Europe/Berlin"]
//! level = 2              # sandbox level 1–3 (default 2: read-only host, own workspace)
//! network = false        # levels 1–2: the network is off unless this is true
//! read = ["/srv/notes"]  # extra paths the server is meant to read (absolute)
//! env = { UNITS = "metric" }                 # literal variables
//! secrets = { NOTES_TOKEN = "NOTES_TOKEN" }  # variable = vault key
//!
//! [servers.remote]
//! url = "https://example.org/mcp"
//! ```
//!
//! Every definition is checked when the file is read and before it is written
//! ([`ServerDef::validate`]): a server's environment may not hold loader or interpreter start-up
//! variables, a secret reaches a server only as a declared variable (never in its arguments or a
//! literal value), and names are plain.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name under Sayri's config directory.
pub const FILE_NAME: &str = "mcp-servers.toml";

/// The reference form a vault secret takes in text (`$SECRET:KEY`); refused in arguments and
/// literal values.
pub const SECRET_REFERENCE: &str = "$SECRET:";

/// How Sayri reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program Sayri starts (inside the sandbox) and speaks to over its stdin and stdout.
    Stdio {
        /// Program: a path, or a name looked up in the server's `PATH`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A server already running somewhere, spoken to over Streamable HTTP.
    Http {
        /// Its endpoint (`http` or `https`).
        url: String,
    },
}

/// One MCP server the user added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDef {
    /// Its name: 1–64 characters of `a–z A–Z 0–9 _ -`, starting with a letter or digit.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Whether Sayri may connect to it (`sayri mcp disable` keeps the definition).
    pub enabled: bool,
    /// Sandbox level of a stdio server: 1, 2 (the default) or 3.
    pub level: u8,
    /// Levels 1–2: whether the server keeps the host's network.
    pub network: bool,
    /// Extra paths the server is meant to read (absolute).
    pub read: Vec<PathBuf>,
    /// Literal environment variables.
    pub env: BTreeMap<String, String>,
    /// Environment variables whose values come from the vault: variable name → vault key.
    pub secrets: BTreeMap<String, String>,
}

/// The default level of a stdio server: 2 (LEVEL_2_ISOLATED_DEV).
pub const DEFAULT_LEVEL: u8 = 2;

impl ServerDef {
    /// A stdio server at the default level, enabled, with nothing declared.
    pub fn stdio(name: &str, command: &str, args: Vec<String>) -> Self {
        ServerDef::new(
            name,
            Transport::Stdio {
                command: command.to_string(),
                args,
            },
        )
    }

    /// A Streamable HTTP server, enabled.
    pub fn http(name: &str, url: &str) -> Self {
        ServerDef::new(
            name,
            Transport::Http {
                url: url.to_string(),
            },
        )
    }

    fn new(name: &str, transport: Transport) -> Self {
        ServerDef {
            name: name.to_string(),
            transport,
            enabled: true,
            level: DEFAULT_LEVEL,
            network: false,
            read: Vec::new(),
            env: BTreeMap::new(),
            secrets: BTreeMap::new(),
        }
    }

    /// Every problem of this definition, each a sentence that says what to change; empty when
    /// it is valid.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Err(e) = check_name(&self.name) {
            out.push(e.to_string());
        }
        match &self.transport {
            Transport::Stdio { command, args } => {
                if command.trim().is_empty() {
                    out.push("the command is empty; give the program after `--`".into());
                }
                for a in std::iter::once(command).chain(args) {
                    if a.contains(SECRET_REFERENCE) || a.contains('\0') {
                        out.push(format!(
                            "argument {a:?} holds a secret reference or a NUL byte: a server gets secrets only as declared variables (`--secret VAR=KEY`), never in its arguments, which every local user can read"
                        ));
                    }
                }
                if !(1..=3).contains(&self.level) {
                    out.push(format!(
                        "level {} is not offered to MCP servers; choose 1 (read-only), 2 (own workspace, the default) or 3 (host user)",
                        self.level
                    ));
                }
            }
            Transport::Http { url } => {
                if let Err(e) = check_url(url) {
                    out.push(e.to_string());
                }
                if !self.env.is_empty() || !self.secrets.is_empty() {
                    out.push(
                        "an HTTP server runs elsewhere: environment variables and secrets apply only to stdio servers".into(),
                    );
                }
            }
        }
        for p in &self.read {
            if !p.is_absolute() {
                out.push(format!("read path {} must be absolute", p.display()));
            }
        }
        let declared: Vec<&String> = self.env.keys().chain(self.secrets.keys()).collect();
        let loaders: Vec<&str> = declared
            .iter()
            .filter(|n| crate::env::is_loader_variable(n))
            .map(|n| n.as_str())
            .collect();
        if !loaders.is_empty() {
            out.push(format!(
                "refused variables {}: they make the loader or an interpreter run code before the server starts",
                loaders.join(", ")
            ));
        }
        for n in &declared {
            if crate::env::is_loader_variable(n) {
                continue;
            }
            if let Err(e) = crate::env::check_variable_name(n) {
                out.push(e.to_string());
            }
        }
        for n in self.env.keys().filter(|n| self.secrets.contains_key(*n)) {
            out.push(format!(
                "variable {n} is declared both literally and from the vault"
            ));
        }
        for (n, v) in &self.env {
            if v.contains(SECRET_REFERENCE) || v.contains('\0') {
                out.push(format!(
                    "variable {n} holds a secret reference or a NUL byte; declare it from the vault instead (`--secret {n}=KEY`)"
                ));
            }
        }
        for (n, key) in &self.secrets {
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                out.push(format!(
                    "variable {n}: vault key {key:?} is not a plain key name"
                ));
            }
        }
        out
    }

    /// `Ok` when the definition is valid, else every problem in one message.
    ///
    /// # Errors
    /// [`InvalidServer`]: the definition has at least one problem (see
    /// [`ServerDef::problems`]).
    pub fn validate(&self) -> Result<(), InvalidServer> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidServer {
                name: self.name.clone(),
                problems,
            })
        }
    }
}

/// A server definition with at least one problem; nothing is saved or started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {name:?}: {}", problems.join("; "))]
pub struct InvalidServer {
    /// The server's name.
    pub name: String,
    /// Every problem, each a sentence that says what to change.
    pub problems: Vec<String>,
}

/// A server name outside `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "server name {0:?} must be 1–64 characters of a–z, A–Z, 0–9, _ and -, starting with a letter or digit"
)]
pub struct BadName(pub String);

/// An HTTP server's URL that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not a URL.
    #[error("URL {url:?} is not valid: {source}")]
    Invalid {
        /// The URL as written.
        url: String,
        /// The parser's reason.
        source: url::ParseError,
    },
    /// Another scheme than http or https.
    #[error("URL {url:?}: scheme {scheme:?} is not http or https")]
    Scheme {
        /// The URL as written.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A user name or password in the URL.
    #[error("URL {0:?} holds credentials; remove them (authentication is not supported yet)")]
    Credentials(String),
}

/// Checks a server name.
///
/// # Errors
/// [`BadName`]: the name is empty, too long, or has other characters than `a–z A–Z 0–9 _ -`.
pub fn check_name(name: &str) -> Result<(), BadName> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(BadName(name.to_string()))
    }
}

fn check_url(url: &str) -> Result<(), UrlError> {
    let parsed = url::Url::parse(url).map_err(|source| UrlError::Invalid {
        url: url.to_string(),
        source,
    })?;
    match parsed.scheme() {
        "http" | "https" => {}
        other => {
            return Err(UrlError::Scheme {
                url: url.to_string(),
                scheme: other.to_string(),
            });
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlError::Credentials(url.to_string()));
    }
    Ok(())
}

/// The file's form: one table per server under `servers`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileForm {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default = "default_level")]
    level: u8,
    #[serde(default)]
    network: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    read: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    secrets: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

fn default_level() -> u8 {
    DEFAULT_LEVEL
}

/// Reading or writing the servers file failed.
#[derive(Debug, thiserror::Error)]
pub enum ServersFileError {
    /// The file cannot be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed, and what to do.
        message: String,
    },
    /// The file is not valid TOML of this form (the message names line and column).
    #[error("{path}: {message}\nfix the file or remove the server's table, then try again")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the line, column and the offending text.
        message: String,
    },
    /// A definition is not acceptable.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every problem.
        message: String,
    },
}

/// The servers file of a config directory.
#[derive(Debug, Clone)]
pub struct ServersFile {
    path: PathBuf,
}

impl ServersFile {
    /// The file `FILE_NAME` in `config_dir`.
    pub fn in_config_dir(config_dir: &Path) -> Self {
        ServersFile {
            path: config_dir.join(FILE_NAME),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every server, by name. A missing file is no servers.
    ///
    /// # Errors
    /// The file cannot be read, is not valid TOML of the servers form, or holds an invalid
    /// definition.
    pub fn load(&self) -> Result<Vec<ServerDef>, ServersFileError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(ServersFileError::Io {
                    path: self.path.clone(),
                    message: format!("cannot read it: {e}"),
                });
            }
        };
        parse(&self.path, &text)
    }

    /// Writes `servers` (replacing the file atomically, mode 0600).
    ///
    /// # Errors
    /// A definition is invalid, two share a name, or the file cannot be written.
    pub fn save(&self, servers: &[ServerDef]) -> Result<(), ServersFileError> {
        let mut form = FileForm::default();
        for s in servers {
            s.validate().map_err(|e| ServersFileError::Invalid {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
            if form.servers.insert(s.name.clone(), entry_of(s)).is_some() {
                return Err(ServersFileError::Invalid {
                    path: self.path.clone(),
                    message: format!("two servers are named {:?}", s.name),
                });
            }
        }
        let body = toml::to_string(&form).map_err(|e| ServersFileError::Io {
            path: self.path.clone(),
            message: format!("cannot encode the servers: {e}"),
        })?;
        let text = format!(
            "# MCP servers (`sayri mcp add|remove|enable|disable`); see crates/sayri-mcp/src/servers.rs for the form.\n{body}"
        );
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| ServersFileError::Io {
                path: self.path.clone(),
                message: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        sayri_vault::atomic_write::write_atomic(&self.path, text.as_bytes()).map_err(|e| {
            ServersFileError::Io {
                path: self.path.clone(),
                message: format!("cannot write it: {e}"),
            }
        })
    }
}

fn parse(path: &Path, text: &str) -> Result<Vec<ServerDef>, ServersFileError> {
    let form: FileForm = toml::from_str(text).map_err(|e| ServersFileError::Syntax {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (name, e) in form.servers {
        let transport = match (e.command, e.url) {
            (Some(command), None) => Transport::Stdio {
                command,
                args: e.args,
            },
            (None, Some(url)) if e.args.is_empty() => Transport::Http { url },
            (None, Some(_)) => {
                problems.push(format!("[servers.{name}]: `args` belong to a stdio server (`command`), not to one with a `url`"));
                continue;
            }
            (Some(_), Some(_)) => {
                problems.push(format!(
                    "[servers.{name}]: give either `command` or `url`, not both"
                ));
                continue;
            }
            (None, None) => {
                problems.push(format!(
                    "[servers.{name}]: give `command` (a stdio server) or `url` (an HTTP one)"
                ));
                continue;
            }
        };
        let def = ServerDef {
            name,
            transport,
            enabled: e.enabled,
            level: e.level,
            network: e.network,
            read: e.read,
            env: e.env,
            secrets: e.secrets,
        };
        match def.validate() {
            Ok(()) => out.push(def),
            Err(m) => problems.push(format!("[servers.{}]: {m}", def.name)),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(ServersFileError::Invalid {
            path: path.to_path_buf(),
            message: problems.join("\n"),
        })
    }
}

fn entry_of(s: &ServerDef) -> Entry {
    let (command, args, url) = match &s.transport {
        Transport::Stdio { command, args } => (Some(command.clone()), args.clone(), None),
        Transport::Http { url } => (None, Vec::new(), Some(url.clone())),
    };
    Entry {
        command,
        args,
        url,
        enabled: s.enabled,
        level: s.level,
        network: s.network,
        read: s.read.clone(),
        env: s.env.clone(),
        secrets: s.secrets.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_file_reads_back_the_same_servers() {
        let dir = tempfile::tempdir().unwrap();
        let file = ServersFile::in_config_dir(dir.path());
        assert!(file.load().unwrap().is_empty());
        let mut time = ServerDef::stdio(
            "time",
            "mcp-server-time",
            vec!["--local-timezone".into(), "UTC".into()],
        );
        time.env.insert("UNITS".into(), "metric".into());
        time.secrets
            .insert("NOTES_TOKEN".into(), "NOTES_TOKEN".into());
        time.read.push("/srv/notes".into());
        let mut remote = ServerDef::http("remote", "https://example.org/mcp");
        remote.enabled = false;
        file.save(&[time.clone(), remote.clone()]).unwrap();
        let back = file.load().unwrap();
        assert_eq!(back, vec![remote, time]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_broken_file_names_itself_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = ServersFile::in_config_dir(dir.path());
        std::fs::write(
            file.path(),
            "[servers.a]\ncommand = \"x\"\nlevel = \"two\"\n",
        )
        .unwrap();
        let e = file.load().unwrap_err().to_string();
        assert!(e.contains(FILE_NAME), "{e}");
        assert!(e.contains("line 3"), "{e}");
        std::fs::write(file.path(), "[servers.a]\ncommand = \"x\"\nsurprise = 1\n").unwrap();
        let e = file.load().unwrap_err().to_string();
        assert!(e.contains("surprise") && e.contains("line 3"), "{e}");
        std::fs::write(file.path(), "[servers.a]\nargs = [\"x\"]\n").unwrap();
        let e = file.load().unwrap_err().to_string();
        assert!(e.contains("[servers.a]") && e.contains("`command`"), "{e}");
    }

    #[test]
    fn loader_variables_and_secrets_in_argv_are_refused_when_saving_and_loading() {
        let mut rogue = ServerDef::stdio("rogue", "python3", vec!["srv.py".into()]);
        for n in ["LD_PRELOAD", "NODE_OPTIONS", "BASH_ENV"] {
            rogue.env.insert(n.into(), "/tmp/x".into());
        }
        let e = rogue.validate().unwrap_err().to_string();
        for n in ["LD_PRELOAD", "NODE_OPTIONS", "BASH_ENV"] {
            assert!(e.contains(n), "{e}");
        }
        let argv = ServerDef::stdio(
            "notes",
            "srv",
            vec!["--token".into(), "$SECRET:NOTES_TOKEN".into()],
        );
        assert!(
            argv.validate()
                .unwrap_err()
                .to_string()
                .contains("never in its arguments")
        );
        let mut literal = ServerDef::stdio("notes", "srv", vec![]);
        literal
            .env
            .insert("TOKEN".into(), "$SECRET:NOTES_TOKEN".into());
        assert!(literal.validate().is_err());
        let dir = tempfile::tempdir().unwrap();
        let file = ServersFile::in_config_dir(dir.path());
        assert!(file.save(&[rogue]).is_err());
        assert!(!file.path().exists(), "a refused save writes nothing");
        std::fs::write(
            file.path(),
            "[servers.r]\ncommand = \"x\"\nenv = { LD_AUDIT = \"/a.so\" }\n",
        )
        .unwrap();
        assert!(file.load().unwrap_err().to_string().contains("LD_AUDIT"));
    }

    #[test]
    fn names_levels_and_urls_are_checked() {
        assert!(check_name("git-2_x").is_ok());
        for bad in ["", "-x", "a b", "a/b", "..", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        let mut s = ServerDef::stdio("t", "x", vec![]);
        s.level = 4;
        assert!(s.validate().unwrap_err().to_string().contains("level 4"));
        s.level = 0;
        assert!(s.validate().is_err());
        assert!(ServerDef::http("h", "ftp://x").validate().is_err());
        assert!(
            ServerDef::http("h", "https://u:p@x.org/mcp")
                .validate()
                .is_err()
        );
        assert!(
            ServerDef::http("h", "http://127.0.0.1:3000/mcp")
                .validate()
                .is_ok()
        );
    }
}
