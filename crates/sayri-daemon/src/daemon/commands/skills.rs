//! Skills: `skills_list`, `skills_install`, `skills_uninstall`, `skills_scan`. File work runs
//! off the async threads.

use crate::daemon::dispatch::Ctx;
use crate::skills::{self, Skills, SkillsError};
use sayri_core::domain::skills::Report;
use sayri_protocol::params::{
    SkillsInstallParams, SkillsListParams, SkillsScanParams, SkillsSearchParams,
    SkillsUninstallParams,
};
use sayri_protocol::reply::skills::{
    Finding, FoundSkill, InstalledSkill, ScanReport, SkillsInstallReply, SkillsListReply,
    SkillsScanReply, SkillsSearchReply, SkillsUninstallReply,
};
use sayri_protocol::{ErrorCode, ProtocolError};
use std::path::PathBuf;

fn library(ctx: &Ctx) -> Skills {
    Skills::new(ctx.daemon.paths.skills_dir())
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SkillsError> + Send + 'static,
) -> Result<Result<T, SkillsError>, ProtocolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ProtocolError::new(ErrorCode::Internal, format!("skills task failed: {e}")))
}

fn report(r: &Report) -> ScanReport {
    ScanReport {
        verdict: r.verdict.name().into(),
        score: r.score,
        explanation: r.explanation.clone(),
        findings: r
            .findings
            .iter()
            .map(|f| Finding {
                kind: f.kind.name().into(),
                weight: f.weight,
                file: f.file.clone(),
                line: f.line as u64,
                excerpt: f.excerpt.clone(),
                detail: f.detail.clone(),
            })
            .collect(),
        files_scanned: r.files_scanned as u64,
        bytes_scanned: r.bytes_scanned,
        scanner_version: r.scanner_version,
    }
}

fn to_protocol(e: SkillsError) -> ProtocolError {
    match e {
        SkillsError::Io(m) => ProtocolError::new(ErrorCode::Internal, m),
        other => ProtocolError::new(ErrorCode::InvalidParams, other.to_string()),
    }
}

/// The absolute path of a `path` parameter (relative paths are refused: the daemon's working
/// folder is not the client's).
fn absolute(path: &str) -> Result<PathBuf, ProtocolError> {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(ProtocolError::new(
            ErrorCode::InvalidParams,
            format!(
                "path must be absolute (got {path:?}); registry slugs and URLs are not supported yet"
            ),
        ))
    }
}

/// `skills_list` → every installed skill with its state.
pub async fn skills_list(_p: SkillsListParams, ctx: Ctx) -> Result<SkillsListReply, ProtocolError> {
    let lib = library(&ctx);
    let list = blocking(move || lib.list()).await?.map_err(to_protocol)?;
    Ok(list
        .into_iter()
        .map(|s| InstalledSkill {
            slug: s.slug,
            name: s.name,
            description: s.description,
            state: s.state.into(),
            verdict: s.verdict,
            score: s.score,
            source: s.source,
            path: s.path,
        })
        .collect())
}

/// `skills_search {query}` → `[{slug, name, description, state, installed}]`: the installed
/// skills whose slug, name or description contain every word of `query` (case-insensitive),
/// in slug order. Sayri has no skill registry: skills are installed from a folder or archive.
pub async fn skills_search(
    p: SkillsSearchParams,
    ctx: Ctx,
) -> Result<SkillsSearchReply, ProtocolError> {
    let lib = library(&ctx);
    let list = blocking(move || lib.list()).await?.map_err(to_protocol)?;
    let words: Vec<String> = p.query.split_whitespace().map(str::to_lowercase).collect();
    Ok(list
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
        })
        .collect())
}

/// `skills_install {path, slug?, confirm?}` → the outcome with the report. A refused install
/// is a result (`installed:false`, the verdict and findings), not an error.
pub async fn skills_install(
    p: SkillsInstallParams,
    ctx: Ctx,
) -> Result<SkillsInstallReply, ProtocolError> {
    let lib = library(&ctx);
    let path = absolute(&p.path)?;
    let slug = p.slug.clone();
    let out =
        blocking(move || skills::install_path(&lib, &path, slug.as_deref(), p.confirm)).await?;
    match out {
        Ok(done) => Ok(SkillsInstallReply {
            message: format!("installed {}", done.slug),
            report: report(&done.report),
            slug: Some(done.slug),
            installed: true,
            replaced: done.replaced,
        }),
        Err(SkillsError::Refused {
            report: refused,
            message,
        }) => Ok(SkillsInstallReply {
            slug: p.slug,
            installed: false,
            replaced: false,
            message,
            report: report(&refused),
        }),
        Err(e) => Err(to_protocol(e)),
    }
}

/// `skills_uninstall {slug}` → `{slug, removed}`.
pub async fn skills_uninstall(
    p: SkillsUninstallParams,
    ctx: Ctx,
) -> Result<SkillsUninstallReply, ProtocolError> {
    let lib = library(&ctx);
    let slug = p.slug.clone();
    match blocking(move || lib.uninstall(&slug)).await? {
        Ok(()) => Ok(SkillsUninstallReply {
            slug: p.slug,
            removed: true,
        }),
        Err(SkillsError::Invalid(m)) => Err(ProtocolError::new(ErrorCode::NotFound, m)),
        Err(e) => Err(to_protocol(e)),
    }
}

/// `skills_scan {slug | path, confirm?}` → the report and whether it was admitted.
pub async fn skills_scan(p: SkillsScanParams, ctx: Ctx) -> Result<SkillsScanReply, ProtocolError> {
    let lib = library(&ctx);
    match (p.slug.clone(), p.path.clone()) {
        (Some(slug), None) => {
            let out = blocking(move || lib.rescan(&slug, p.confirm, &skills::now())).await?;
            match out {
                Ok(done) => Ok(SkillsScanReply {
                    admitted: true,
                    message: None,
                    report: report(&done.report),
                }),
                Err(SkillsError::Refused {
                    report: refused,
                    message,
                }) => Ok(SkillsScanReply {
                    admitted: false,
                    message: Some(message),
                    report: report(&refused),
                }),
                Err(e) => Err(to_protocol(e)),
            }
        }
        (None, Some(path)) => {
            let path = absolute(&path)?;
            let r = blocking(move || skills::scan_path(&path))
                .await?
                .map_err(to_protocol)?;
            Ok(SkillsScanReply {
                admitted: false,
                message: None,
                report: report(&r),
            })
        }
        _ => Err(ProtocolError::new(
            ErrorCode::InvalidParams,
            "give exactly one of slug (an installed skill) or path (a folder or archive)",
        )),
    }
}
