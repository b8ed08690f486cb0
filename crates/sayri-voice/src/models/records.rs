//! What Sayri knows of each installed model's bytes: a record per model in
//! `<store>/.records/<kind>/<name>.json`, written when a download, import or conversion
//! installs it and when `sayri models verify` checks it.
//!
//! A record holds the sha256 and size of the model file (and of a Piper voice's config), where
//! the file came from, what its sha256 was checked against — Sayri's catalog, a checksum the
//! person gave, or nothing (imported or converted without one) — and the last verification.
//! From it and the file's size, [`Integrity`] tells a listing whether a model is verified,
//! unverified or corrupt without reading the model; [`ModelStore::verify`] reads it.

use super::{InstalledModel, ModelError, ModelKind, ModelStore, Progress, catalog, sidecar};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a model's sha256 was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// Sayri's catalog.
    Catalog,
    /// A checksum the person gave (`--sha256`, `params.sha256`).
    Given,
    /// Nothing: no checksum was known when it was installed.
    None,
}

impl Reference {
    /// The reference in words (`Sayri's catalog`, `the checksum given`, `no checksum`).
    pub fn words(self) -> &'static str {
        match self {
            Reference::Catalog => "Sayri's catalog",
            Reference::Given => "the checksum given",
            Reference::None => "no checksum",
        }
    }
}

/// The last `sayri models verify` of a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastCheck {
    /// When (seconds since the epoch).
    pub at: u64,
    /// Whether the files matched.
    pub ok: bool,
    /// What differed, when they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One installed model's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The sha256 the model file had when it was installed (lowercase hex).
    pub sha256: String,
    /// Its size then.
    pub bytes: u64,
    /// What that sha256 was checked against.
    pub reference: Reference,
    /// Where it came from: the URL (without credentials), `import of <file>` or
    /// `conversion of <dir>`.
    pub source: String,
    /// A Piper voice's config file: its sha256 when installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_sha256: Option<String>,
    /// When it was installed (seconds since the epoch).
    pub installed_at: u64,
    /// The last verification, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check: Option<LastCheck>,
}

/// What a listing says of a model's bytes (from its record and size; nothing is read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Integrity {
    /// Its sha256 matched a known checksum when it was installed or last verified, and its
    /// size is unchanged since.
    Verified {
        /// What it was checked against.
        against: Reference,
    },
    /// No known checksum vouches for it.
    Unverified {
        /// Why, and what to do.
        why: String,
    },
    /// It is not the file that was installed.
    Corrupt {
        /// What differs, and what to do.
        why: String,
    },
}

/// What replaces a corrupt model `name` of `kind`: a download for a model of Sayri's catalog,
/// else an import of a good copy.
pub fn replace_hint(kind: ModelKind, name: &str) -> String {
    let k = kind.as_str();
    if catalog::lookup(kind, name).is_some() {
        format!("`sayri models download {k} {name}` replaces it")
    } else {
        format!("`sayri models import {k} FILE --name {name}` with a good copy replaces it")
    }
}

/// `now` as seconds since the epoch.
pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ModelStore {
    fn record_path(&self, kind: ModelKind, name: &str) -> PathBuf {
        self.root
            .join(".records")
            .join(kind.as_str())
            .join(format!("{name}.json"))
    }

    /// The record of model `name` of `kind`, if there is a readable one.
    pub fn record(&self, kind: ModelKind, name: &str) -> Option<Record> {
        let text = std::fs::read_to_string(self.record_path(kind, name)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the record of `name` (through a temporary file renamed into place).
    pub(super) fn write_record(
        &self,
        kind: ModelKind,
        name: &str,
        record: &Record,
    ) -> Result<(), ModelError> {
        let path = self.record_path(kind, name);
        super::create_parent(&path)?;
        let io = |e: std::io::Error| ModelError::Io(format!("{}: {e}", path.display()));
        let text = serde_json::to_string_pretty(record)
            .map_err(|e| ModelError::Io(format!("{}: {e}", path.display())))?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    pub(super) fn forget_record(&self, kind: ModelKind, name: &str) {
        let _ = std::fs::remove_file(self.record_path(kind, name));
    }

    /// Records a model just installed at `path` with sha256 `sha256`.
    pub(super) fn record_install(
        &self,
        kind: ModelKind,
        name: &str,
        path: &Path,
        sha256: &str,
        reference: Reference,
        source: String,
    ) -> Result<(), ModelError> {
        let bytes = std::fs::metadata(path)
            .map_err(|e| ModelError::Io(format!("{}: {e}", path.display())))?
            .len();
        let config = sidecar(path);
        let config_sha256 = (kind == ModelKind::PiperVoice && config.is_file())
            .then(|| super::sha256_file(&config))
            .transpose()?;
        let record = Record {
            sha256: sha256.to_ascii_lowercase(),
            bytes,
            reference,
            source,
            config_sha256,
            installed_at: now(),
            last_check: None,
        };
        self.write_record(kind, name, &record)
    }

    /// What can be said of `m`'s bytes without reading them (see [`Integrity`]).
    pub fn integrity(&self, m: &InstalledModel) -> Integrity {
        let size = std::fs::metadata(&m.path).map_or(0, |md| md.len());
        let verify = format!("`sayri models verify {}`", m.name);
        let Some(r) = self.record(m.kind, &m.name) else {
            let why = if catalog::lookup(m.kind, &m.name).is_some() {
                format!(
                    "not checked since it was installed; {verify} checks it against Sayri's catalog"
                )
            } else {
                format!("installed without a record; {verify} --sha256 HEX checks it")
            };
            return Integrity::Unverified { why };
        };
        if size != r.bytes {
            return Integrity::Corrupt {
                why: format!(
                    "it has {size} bytes, {} when it was installed; `sayri models download` or `import` replaces it",
                    r.bytes
                ),
            };
        }
        if let Some(c) = r.last_check.as_ref().filter(|c| !c.ok) {
            return Integrity::Corrupt {
                why: format!(
                    "{} at the last check; `sayri models download` or `import` replaces it",
                    c.detail.as_deref().unwrap_or("its sha256 differed")
                ),
            };
        }
        match r.reference {
            Reference::None => Integrity::Unverified {
                why: format!(
                    "installed without a checksum ({}); {verify} --sha256 HEX checks it",
                    r.source
                ),
            },
            against => Integrity::Verified { against },
        }
    }
}

/// What `sayri models verify` found for one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Verdict {
    /// The file's sha256 is the one expected.
    Intact {
        /// What it was compared with.
        against: Reference,
        /// Its sha256.
        sha256: String,
    },
    /// The file's sha256 is the one recorded when it was installed, but no checksum from
    /// elsewhere vouches for that one.
    Unchanged {
        /// Its sha256.
        sha256: String,
    },
    /// The file (or a Piper voice's config) is not the one expected.
    Corrupt {
        /// What it was compared with.
        against: Reference,
        /// The sha256 expected.
        expected: String,
        /// The sha256 it has.
        actual: String,
        /// Which file: the model, or the voice's config.
        file: PathBuf,
    },
    /// Nothing to compare with: no record, no catalog entry, no checksum given. Its sha256 is
    /// recorded now, so a later change shows.
    NoReference {
        /// Its sha256.
        sha256: String,
    },
}

impl ModelStore {
    /// Recomputes the sha256 of model `name` of `kind` (and of a Piper voice's config) and
    /// compares it with `expected` when given, else the record's checksum (or, for a model
    /// recorded without one, the sha256 recorded then), else — no record — the catalog's. The
    /// result is recorded (a corrupt model is then listed so). `progress` sees the bytes read.
    ///
    /// # Errors
    /// The model is not installed or cannot be read.
    pub fn verify(
        &self,
        kind: ModelKind,
        name: &str,
        expected: Option<&str>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Verdict, ModelError> {
        super::check_name(name)?;
        let path = self.require(kind, name)?;
        let actual = super::sha256_file_with(&path, progress)?;
        let record = self.record(kind, name);
        let reference = match (expected, &record) {
            (Some(e), _) => Some((e.to_ascii_lowercase(), Reference::Given)),
            (None, Some(r)) if r.reference != Reference::None => {
                Some((r.sha256.clone(), r.reference))
            }
            // Recorded without a checksum (an import, a conversion): only the recorded sha256
            // applies, not the catalog's file, which it need not be.
            (None, Some(_)) => None,
            (None, None) => {
                catalog::lookup(kind, name).map(|e| (e.sha256.to_string(), Reference::Catalog))
            }
        };
        let verdict = match (&reference, &record) {
            (Some((exp, against)), _) if *exp != actual => Verdict::Corrupt {
                against: *against,
                expected: exp.clone(),
                actual,
                file: path.clone(),
            },
            (Some((_, against)), _) => {
                self.config_verdict(kind, &path, record.as_ref(), *against, actual)?
            }
            (None, Some(r)) if r.sha256 != actual => Verdict::Corrupt {
                against: Reference::None,
                expected: r.sha256.clone(),
                actual,
                file: path.clone(),
            },
            (None, Some(_)) => Verdict::Unchanged { sha256: actual },
            (None, None) => Verdict::NoReference { sha256: actual },
        };
        self.note_check(kind, name, &path, record, &verdict)?;
        Ok(verdict)
    }

    /// A model file that matched `against`: intact unless a Piper voice's config changed since
    /// it was recorded.
    fn config_verdict(
        &self,
        kind: ModelKind,
        path: &Path,
        record: Option<&Record>,
        against: Reference,
        actual: String,
    ) -> Result<Verdict, ModelError> {
        let recorded = record.and_then(|r| r.config_sha256.clone());
        if let (ModelKind::PiperVoice, Some(expected)) = (kind, recorded) {
            let config = sidecar(path);
            let now = super::sha256_file(&config)?;
            if now != expected {
                return Ok(Verdict::Corrupt {
                    against: Reference::None,
                    expected,
                    actual: now,
                    file: config,
                });
            }
        }
        Ok(Verdict::Intact {
            against,
            sha256: actual,
        })
    }

    /// Records the outcome of a verification in the model's record (made now when it had
    /// none: what is there is the file this check is about). A file found intact is recorded
    /// as checked against what it matched.
    fn note_check(
        &self,
        kind: ModelKind,
        name: &str,
        path: &Path,
        record: Option<Record>,
        verdict: &Verdict,
    ) -> Result<(), ModelError> {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let config = sidecar(path);
        let mut r = record.unwrap_or_else(|| Record {
            sha256: verdict.sha256().to_string(),
            bytes,
            reference: Reference::None,
            source: "found in the store".into(),
            config_sha256: (kind == ModelKind::PiperVoice)
                .then(|| super::sha256_file(&config).ok())
                .flatten(),
            installed_at: now(),
            last_check: None,
        });
        if let Verdict::Intact { against, sha256 } = verdict {
            r.sha256 = sha256.clone();
            r.reference = *against;
            r.bytes = bytes;
        }
        let ok = !matches!(verdict, Verdict::Corrupt { .. });
        r.last_check = Some(LastCheck {
            at: now(),
            ok,
            detail: (!ok).then(|| verdict.describe()),
        });
        self.write_record(kind, name, &r)
    }
}

impl Verdict {
    /// The sha256 the model file has (for a corrupt config, the config's).
    pub fn sha256(&self) -> &str {
        match self {
            Verdict::Intact { sha256, .. }
            | Verdict::Unchanged { sha256 }
            | Verdict::NoReference { sha256 } => sha256,
            Verdict::Corrupt { actual, .. } => actual,
        }
    }

    /// Whether the model is not the one expected.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Verdict::Corrupt { .. })
    }

    /// The finding in words.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Intact { against, .. } => format!("intact: its sha256 matches {}", against.words()),
            Verdict::Unchanged { .. } => "unchanged since it was installed, but unverified: no published checksum vouches for it (--sha256 HEX checks it against one)".into(),
            Verdict::NoReference { sha256 } => format!("unverified: no checksum is known for it; its sha256 {sha256} is recorded now, so a later change shows (--sha256 HEX checks it against one)"),
            Verdict::Corrupt { against, expected, actual, file } => {
                let whose = match against {
                    Reference::None => "the one recorded when it was installed".to_string(),
                    other => other.words().to_string(),
                };
                let file = file.file_name().map_or_else(|| file.display().to_string(), |f| f.to_string_lossy().into_owned());
                format!("the sha256 of {file} is {actual}, not {expected} ({whose})")
            }
        }
    }
}
