//! What Sayri knows of the voice models' bytes: the mark `sayri models list` shows beside each
//! (verified, unverified, corrupt; from its record and size, nothing read), and
//! `sayri models verify [NAME]`, which reads every byte and compares its sha256 with the
//! catalog's or the recorded checksum (exit status 1 when a model is corrupt).

use anyhow::bail;
use sayri_client::terminal_text::terminal_safe;
use sayri_voice::models::records;
use sayri_voice::models::{InstalledModel, Integrity, ModelKind, ModelStore, Verdict};

/// The mark of `m` in a listing, and the sentence under it when it is not plainly verified.
pub(crate) fn mark(store: &ModelStore, m: &InstalledModel) -> (&'static str, Option<String>) {
    match store.integrity(m) {
        Integrity::Verified { .. } => ("verified", None),
        Integrity::Unverified { why } => ("unverified", Some(why)),
        Integrity::Corrupt { why } => ("CORRUPT", Some(why)),
    }
}

/// The installed models `name` (and `kind`) select: every one without a name.
fn targets(
    store: &ModelStore,
    name: Option<&str>,
    kind: Option<ModelKind>,
) -> anyhow::Result<Vec<InstalledModel>> {
    let all: Vec<InstalledModel> = store
        .list()
        .into_iter()
        .filter(|m| kind.is_none_or(|k| m.kind == k))
        .filter(|m| name.is_none_or(|n| m.name == n))
        .collect();
    match (name, all.len()) {
        (Some(n), 0) => bail!(
            "no installed voice model is named {:?}{} (`sayri models list` shows them)",
            terminal_safe(n),
            kind.map(|k| format!(" of kind {}", k.as_str()))
                .unwrap_or_default()
        ),
        (Some(n), c) if c > 1 => bail!(
            "{} models are named {:?} ({}): give --kind",
            c,
            terminal_safe(n),
            all.iter()
                .map(|m| m.kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => Ok(all),
    }
}

/// `sayri models verify [NAME] [--kind KIND] [--sha256 HEX] [--json]`: exit status 1 when a
/// model is corrupt.
pub(crate) fn verify(
    name: Option<&str>,
    kind: Option<ModelKind>,
    sha256: Option<&str>,
    json: bool,
) -> anyhow::Result<i32> {
    if sha256.is_some() && name.is_none() {
        bail!("--sha256 checks one model: give its NAME too");
    }
    if let Some(s) = sha256
        && (s.len() != 64 || !s.chars().all(|c| c.is_ascii_hexdigit()))
    {
        bail!(
            "--sha256 must be 64 hexadecimal digits (got {} characters)",
            s.len()
        );
    }
    let store = ModelStore::open_default();
    let models = targets(&store, name, kind)?;
    if models.is_empty() {
        println!("no voice models installed in {}", store.root().display());
        return Ok(0);
    }
    let mut corrupt = 0;
    let mut results = Vec::new();
    for m in &models {
        let bar = super::voice_models::bar(&format!("verifying {}", m.name));
        let verdict = store.verify(m.kind, &m.name, sha256, &mut |p| {
            super::voice_models::show(&bar, p)
        });
        bar.finish_and_clear();
        let verdict = verdict?;
        corrupt += usize::from(verdict.is_corrupt());
        if json {
            results.push(serde_json::json!({
                "kind": m.kind, "name": m.name, "path": m.path, "verdict": verdict,
                "corrupt": verdict.is_corrupt(), "summary": verdict.describe(),
            }));
        } else {
            println!("{}", line(m, &verdict));
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else if corrupt > 0 {
        eprintln!(
            "sayri: {corrupt} of {} voice models {} corrupt",
            models.len(),
            if corrupt == 1 { "is" } else { "are" }
        );
    }
    Ok(i32::from(corrupt > 0))
}

/// One model's result in words.
fn line(m: &InstalledModel, v: &Verdict) -> String {
    let what = format!("{} {}", m.kind.as_str(), terminal_safe(&m.name));
    match v {
        Verdict::Corrupt { .. } => {
            format!(
                "{what}: CORRUPT: {} — {}",
                v.describe(),
                records::replace_hint(m.kind, &m.name)
            )
        }
        _ => format!("{what}: {}", v.describe()),
    }
}
