//! Skills from a registry (`skills.registry_url`): the index read for `skills_search`, and
//! `skills_install {slug}` — the package the slug names downloaded, then installed exactly like
//! a local folder or archive (scanned first; a `BLOCK` installs nothing).
//!
//! Rules:
//! * No registry is set by default; then a slug install says how to set one, and a search
//!   covers the installed skills only.
//! * Every address — the index, each package, each redirect — is `https://`, or `http://` to
//!   this machine only ([`allowed`]). Anything else is refused before a request is sent.
//! * One deadline (`skills.registry_timeout`) bounds the whole operation, index and download
//!   together; the index may have at most [`MAX_INDEX_BYTES`], a package [`MAX_PACKAGE_BYTES`]
//!   (both also refused when announced larger). The download's SHA-256 is computed while it
//!   arrives, compared with the index's `sha256` when it gives one, and reported.
//! * The folder name is the sanitised slug asked for (or `install_as`), never a name the
//!   registry chose. The download goes to a temporary file; a refused, broken or hostile
//!   package (a zip with `../` members, a bomb) leaves nothing behind.

use super::archive::{self, Kind};
use super::{Installed, Skills, SkillsError, now};
use sayri_core::domain::config::Config;
use sayri_core::domain::config::check::is_loopback;
use sayri_core::domain::skills::hash::sha256;
use sayri_core::domain::skills::registry::{Index, Package, SlugRequest};
use sayri_core::domain::skills::{SKILL_FILE, parse_skill_md};
use sayri_http::{LimitError, Limits, without_credentials};
use sayri_protocol::reply::skills::{FoundSkill, SkillsSearchDetail};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use url::Url;

/// Most bytes an index may have.
pub const MAX_INDEX_BYTES: u64 = 4 * 1024 * 1024;
/// Most bytes one downloaded package may have.
pub const MAX_PACKAGE_BYTES: u64 = 16 * 1024 * 1024;
/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 5;
/// Longest wait for the next chunk of an answer.
const STALL: Duration = Duration::from_secs(10);

/// Why the registry could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// `skills.registry_url` is empty.
    #[error(
        "no skills registry is set, so {0:?} cannot be looked up: set one with `sayri config set skills.registry_url https://…/index.json`, or install from a folder or archive (`path`)"
    )]
    NotConfigured(String),
    /// The slug sanitises to nothing usable.
    #[error("{0}")]
    Slug(String),
    /// The registry has no such skill.
    #[error("{0}")]
    NotFound(String),
    /// The registry could not be reached, or answered with an error.
    #[error("{0}")]
    Unreachable(String),
    /// The deadline passed.
    #[error("{0}")]
    TimedOut(String),
    /// An address, a size or a package was refused.
    #[error("{0}")]
    Refused(String),
}

/// The configured registry.
#[derive(Debug, Clone)]
pub struct Registry {
    index: Url,
    timeout: Duration,
}

/// What was downloaded for an install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// The package's address (without credentials).
    pub url: String,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// Whether `url` may be fetched: `https://`, or `http://` to this machine.
///
/// # Errors
/// A sentence naming the address and what to use instead.
pub fn allowed(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err(format!(
            "{} is plain http:// to another machine; a skill must come over https:// (http:// is allowed only to 127.0.0.1, ::1 or localhost)",
            without_credentials(url.as_str())
        )),
        other => Err(format!(
            "{} is a {other}: address; a registry is fetched over https:// only",
            without_credentials(url.as_str())
        )),
    }
}

impl Registry {
    /// The registry `cfg` names, or `None` when `skills.registry_url` is empty.
    ///
    /// # Errors
    /// [`RegistryError::Refused`] for an address that is not a URL or not [`allowed`].
    pub fn from_config(cfg: &Config) -> Result<Option<Registry>, RegistryError> {
        let raw = cfg.skills.registry_url.trim();
        if raw.is_empty() {
            return Ok(None);
        }
        let index = Url::parse(raw).map_err(|e| {
            RegistryError::Refused(format!(
                "skills.registry_url is not a URL ({e}); fix it with `sayri config set skills.registry_url …`"
            ))
        })?;
        allowed(&index).map_err(RegistryError::Refused)?;
        let secs = u64::try_from(cfg.skills.registry_timeout)
            .unwrap_or(30)
            .max(1);
        Ok(Some(Registry {
            index,
            timeout: Duration::from_secs(secs),
        }))
    }

    /// The index's address, without credentials (for messages and `source`).
    pub fn address(&self) -> String {
        without_credentials(self.index.as_str())
    }

    /// The end of an operation started now.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// The registry's index, read before `deadline`.
    ///
    /// # Errors
    /// Unreachable, too slow, too big, or not an index.
    pub async fn index(&self, deadline: Instant) -> Result<Index, RegistryError> {
        let mut body = Vec::new();
        let mut sink = |chunk: &[u8]| -> Result<(), std::io::Error> {
            body.extend_from_slice(chunk);
            Ok(())
        };
        self.fetch(&self.index, MAX_INDEX_BYTES, deadline, "index", &mut sink)
            .await?;
        Index::parse(&body)
            .map_err(|e| RegistryError::Refused(format!("{} at {}", e, self.address())))
    }

    /// Downloads `package` before `deadline`: its bytes (at most [`MAX_PACKAGE_BYTES`]) and
    /// what was downloaded.
    ///
    /// # Errors
    /// An address that is not [`allowed`], an unreachable or slow server, a package over
    /// [`MAX_PACKAGE_BYTES`], a hash that differs from the index's.
    pub async fn download(
        &self,
        package: &Package,
        deadline: Instant,
    ) -> Result<(Download, Vec<u8>), RegistryError> {
        let raw = package.download_url.as_deref().unwrap_or_default();
        let url = self.index.join(raw).map_err(|e| {
            RegistryError::Refused(format!(
                "the registry gives {} a download address that is not a URL ({e})",
                package.id
            ))
        })?;
        allowed(&url).map_err(RegistryError::Refused)?;
        let mut body = Vec::new();
        let mut sink = |chunk: &[u8]| -> Result<(), std::io::Error> {
            body.extend_from_slice(chunk);
            Ok(())
        };
        let bytes = self
            .fetch(&url, MAX_PACKAGE_BYTES, deadline, "package", &mut sink)
            .await?;
        let hashed = sha256(&body);
        let sha256 = hashed
            .strip_prefix("sha256:")
            .unwrap_or(&hashed)
            .to_string();
        let shown = without_credentials(url.as_str());
        if let Some(expected) = &package.sha256 {
            let expected = expected.strip_prefix("sha256:").unwrap_or(expected);
            if expected != sha256 {
                return Err(RegistryError::Refused(format!(
                    "the package {shown} has SHA-256 {sha256}, but the registry's index says {expected}; nothing was installed (the package or the index was changed — tell the registry's maintainer)"
                )));
            }
        }
        let download = Download {
            url: shown,
            sha256,
            bytes,
        };
        Ok((download, body))
    }

    /// One bounded GET of `url` into `sink`; returns the bytes received.
    async fn fetch(
        &self,
        url: &Url,
        max: u64,
        deadline: Instant,
        what: &str,
        sink: &mut (dyn FnMut(&[u8]) -> Result<(), std::io::Error> + Send),
    ) -> Result<u64, RegistryError> {
        let shown = without_credentials(url.as_str());
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timed_out());
        }
        let client = client(url, left)?;
        let limits = Limits {
            max_bytes: Some(max),
            deadline: Some(left),
            // Within a shorter deadline the deadline alone bounds the wait.
            stall: (STALL < left).then_some(STALL),
        };
        match sayri_http::fetch(client.get(url.clone()), limits, sink, &mut |_, _| {}).await {
            Ok(done) => Ok(done.bytes),
            Err(LimitError::Deadline { .. }) => Err(self.timed_out()),
            Err(LimitError::Announced { .. } | LimitError::TooLong { .. }) => {
                Err(RegistryError::Refused(format!(
                    "the registry's {what} at {shown} is larger than {} MiB; refused, nothing was installed",
                    max >> 20
                )))
            }
            Err(LimitError::Transport(e)) => Err(RegistryError::Unreachable(format!(
                "cannot reach the skills registry at {shown}: {}; check that it is up and that skills.registry_url is right",
                causes(&e)
            ))),
            Err(LimitError::Status(s)) if s == reqwest::StatusCode::NOT_FOUND => {
                Err(RegistryError::NotFound(format!(
                    "the registry has no {what} at {shown} (HTTP 404); check skills.registry_url"
                )))
            }
            Err(LimitError::Sink(e)) => Err(RegistryError::Refused(format!(
                "cannot keep the download of {shown}: {e}"
            ))),
            Err(e) => Err(RegistryError::Unreachable(format!(
                "the skills registry's {what} at {shown} could not be read: {e}; try again later"
            ))),
        }
    }

    fn timed_out(&self) -> RegistryError {
        RegistryError::TimedOut(format!(
            "the skills registry at {} gave no complete answer within {} s; try again later, or raise skills.registry_timeout",
            self.address(),
            self.timeout.as_secs()
        ))
    }
}

/// An HTTP client for `url` whose redirects must each be [`allowed`].
fn client(url: &Url, connect: Duration) -> Result<reqwest::Client, RegistryError> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match allowed(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(why) => attempt.error(format!("a redirect was refused: {why}")),
        }
    });
    sayri_http::client_builder(url.scheme() == "https")
        .map_err(|e| RegistryError::Unreachable(e.to_string()))?
        .user_agent(sayri_http::USER_AGENT)
        .connect_timeout(connect)
        .redirect(policy)
        .build()
        .map_err(|e| RegistryError::Unreachable(format!("cannot set up HTTP: {}", causes(&e))))
}

/// A transport error with its causes, without the URL.
fn causes(e: &reqwest::Error) -> String {
    let mut text = String::from("the request failed");
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// What an install from the registry did: what was downloaded (when it got that far) and the
/// install's own outcome (a scan refusal included).
#[derive(Debug)]
pub struct FromRegistry {
    /// The folder name.
    pub slug: String,
    /// The download.
    pub download: Download,
    /// The install: admitted, or refused by the scan, or invalid content.
    pub outcome: Result<Installed, SkillsError>,
}

/// Installs the skill `given` names from `registry` (see the module notes).
///
/// # Errors
/// [`SkillsError::Registry`] when nothing could be downloaded (no registry, a bad slug, no
/// such skill, an unreachable, slow or hostile registry).
pub async fn install(
    skills: &Skills,
    registry: Option<&Registry>,
    given: &str,
    install_as: Option<&str>,
    confirm: bool,
) -> Result<FromRegistry, SkillsError> {
    let request = SlugRequest::parse(given).map_err(|e| RegistryError::Slug(e.to_string()))?;
    let registry = registry.ok_or_else(|| RegistryError::NotConfigured(given.to_string()))?;
    let deadline = registry.deadline();
    let index = registry.index(deadline).await?;
    let package = index.find(&request).cloned().ok_or_else(|| {
        let by = request.owner.as_deref().map(|o| format!(" by {o}"));
        let asked = (given.trim() != request.slug).then(|| format!(" (asked as {given:?})"));
        RegistryError::NotFound(format!(
            "the registry at {} has no skill {:?}{}{}; search it with `sayri skills search WORDS`",
            registry.address(),
            request.slug,
            by.unwrap_or_default(),
            asked.unwrap_or_default()
        ))
    })?;
    let (download, bytes) = registry.download(&package, deadline).await?;
    let slug = install_as.unwrap_or(&request.slug).to_string();
    let origin = format!("{} (sha256 {})", download.url, download.sha256);
    let lib = skills.clone();
    let into = slug.clone();
    let outcome =
        tokio::task::spawn_blocking(move || install_bytes(&lib, &bytes, &into, &origin, confirm))
            .await
            .map_err(|e| SkillsError::Io(format!("the install task failed: {e}")))?;
    Ok(FromRegistry {
        slug,
        download,
        outcome,
    })
}

/// Installs a downloaded package: a zip or `.tar.gz` (by its first bytes) is unpacked with
/// [`archive::unpack_as`], anything else must be a `SKILL.md`.
fn install_bytes(
    skills: &Skills,
    bytes: &[u8],
    slug: &str,
    origin: &str,
    confirm: bool,
) -> Result<Installed, SkillsError> {
    let (_tmp, root): (tempfile::TempDir, PathBuf) = match Kind::sniff(bytes) {
        Some(kind) => {
            let mut file = tempfile::Builder::new()
                .prefix("sayri-skill-download-")
                .tempfile()
                .map_err(|e| SkillsError::Io(format!("cannot create a temporary file: {e}")))?;
            file.write_all(bytes)
                .map_err(|e| SkillsError::io("write", file.path(), e))?;
            archive::unpack_as(file.path(), kind)?
        }
        None => bare_skill_md(bytes)?,
    };
    skills.install_dir(&root, Some(slug), origin, confirm, &now())
}

/// A folder holding `bytes` as its `SKILL.md`, when they are one: UTF-8 text that opens with
/// its `---` frontmatter block (so an error page or a binary is never taken for a skill).
fn bare_skill_md(bytes: &[u8]) -> Result<(tempfile::TempDir, PathBuf), SkillsError> {
    let refuse = |why: String| {
        SkillsError::Invalid(format!(
            "the downloaded package is neither a .zip or .tar.gz archive nor a {SKILL_FILE} ({why}); nothing was installed"
        ))
    };
    let text = std::str::from_utf8(bytes).map_err(|_| refuse("it is not text".into()))?;
    let first = text
        .trim_start_matches('\u{feff}')
        .lines()
        .next()
        .unwrap_or("");
    if first.trim_end() != "---" {
        return Err(refuse(format!(
            "a {SKILL_FILE} opens with its --- frontmatter"
        )));
    }
    parse_skill_md(bytes).map_err(|e| refuse(e.to_string()))?;
    let tmp = tempfile::Builder::new()
        .prefix("sayri-skill-")
        .tempdir()
        .map_err(|e| SkillsError::Io(format!("cannot create a temporary folder: {e}")))?;
    let path = tmp.path().join(SKILL_FILE);
    std::fs::write(&path, bytes).map_err(|e| SkillsError::io("write", &path, e))?;
    let root = tmp.path().to_path_buf();
    Ok((tmp, root))
}

/// `skills_search`: the installed skills whose slug, name or description contain every word
/// of `query` (ignoring case, slug order), then the matching skills of `registry` (index
/// order) not already listed. A registry that cannot be asked (or is misconfigured) leaves its
/// part out and is said in `warnings`; it is never an error.
///
/// # Errors
/// Only when the skills directory cannot be read.
pub async fn search_all(
    skills: Skills,
    registry: Result<Option<Registry>, SkillsError>,
    query: &str,
) -> Result<SkillsSearchDetail, SkillsError> {
    let list = tokio::task::spawn_blocking(move || skills.list())
        .await
        .map_err(|e| SkillsError::Io(format!("the skills task failed: {e}")))??;
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let states: BTreeMap<String, &'static str> =
        list.iter().map(|s| (s.slug.clone(), s.state)).collect();
    let mut results: Vec<FoundSkill> = list
        .into_iter()
        .filter(|s| {
            let text = format!("{} {} {}", s.slug, s.name, s.description).to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        })
        .map(|s| FoundSkill {
            slug: s.slug,
            name: s.name,
            description: s.description,
            state: s.state.into(),
            installed: true,
            source: "installed".into(),
            owner: None,
            version: None,
        })
        .collect();
    let found = match registry {
        Ok(Some(reg)) => match reg.index(reg.deadline()).await {
            Ok(index) => Ok(index.search(query).into_iter().cloned().collect()),
            Err(e) => Err(e.to_string()),
        },
        Ok(None) => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    };
    let mut warnings = Vec::new();
    match found {
        Ok(packages) => add_packages(&mut results, packages, &states),
        Err(why) => warnings.push(format!(
            "the skills registry was not searched, so only installed skills are listed: {why}"
        )),
    }
    Ok(SkillsSearchDetail { results, warnings })
}

/// Appends the registry's `packages` not already in `results`, marked with their source.
fn add_packages(
    results: &mut Vec<FoundSkill>,
    packages: Vec<Package>,
    states: &BTreeMap<String, &'static str>,
) {
    for pkg in packages {
        if results.iter().any(|r| r.slug == pkg.id) {
            continue;
        }
        let state = states.get(&pkg.id).copied();
        results.push(FoundSkill {
            installed: state.is_some(),
            state: state.unwrap_or("available").into(),
            slug: pkg.id,
            name: pkg.name,
            description: pkg.description,
            source: "registry".into(),
            owner: pkg.author,
            version: pkg.version,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_addresses_are_allowed() {
        let ok = |s: &str| allowed(&Url::parse(s).unwrap()).is_ok();
        assert!(ok("https://skills.example.org/index.json"));
        assert!(ok("http://127.0.0.1:8080/index.json"));
        assert!(ok("http://[::1]/i"));
        assert!(ok("http://localhost/i"));
        assert!(!ok("http://192.0.2.7/i"));
        assert!(!ok("http://127.0.0.1.nip.io/i"));
        assert!(!ok("file:///etc/passwd"));
        assert!(!ok("ftp://127.0.0.1/x"));
    }

    #[test]
    fn no_registry_is_set_by_default_and_a_slug_install_says_how_to_set_one() {
        let cfg = Config::default();
        assert!(Registry::from_config(&cfg).unwrap().is_none());
        let e = RegistryError::NotConfigured("weather".into()).to_string();
        assert!(e.contains("skills.registry_url"), "{e}");
    }

    #[test]
    fn a_download_that_is_no_archive_and_no_skill_md_is_refused() {
        for junk in [
            &b"\x00\x01 binary junk"[..],
            b"<html>404</html>",
            b"\xff\xfe",
        ] {
            let e = bare_skill_md(junk).unwrap_err().to_string();
            assert!(e.contains("neither"), "{e}");
        }
        let (tmp, root) = bare_skill_md(b"---\nname: x\ndescription: y\n---\nbody\n").unwrap();
        assert!(root.join(SKILL_FILE).is_file());
        drop(tmp);
        assert!(!root.exists());
    }
}
