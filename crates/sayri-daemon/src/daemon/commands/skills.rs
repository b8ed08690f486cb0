//! Skills: `skills_list`, `skills_install`, `skills_uninstall`, `skills_scan`,
//! `skills_search`. File work runs off the async threads; registry work
//! ([`crate::skills::registry`]) is bounded by `skills.registry_timeout`.

use crate::daemon::dispatch::Ctx;
use crate::skills::registry::{self, Registry, RegistryError};
use crate::skills::{self, Skills, SkillsError};
use sayri_core::domain::skills::Report;
use sayri_protocol::params::{
    SkillSource, SkillsInstallParams, SkillsListParams, SkillsScanParams, SkillsSearchParams,
    SkillsUninstallParams,
};
use sayri_protocol::reply::skills::{
    Finding, InstalledSkill, ScanReport, SkillsInstallReply, SkillsListReply, SkillsScanReply,
    SkillsSearchReply, SkillsUninstallReply,
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
    let code = match &e {
        SkillsError::Io(_) => ErrorCode::Internal,
        SkillsError::Registry(r) => match r {
            RegistryError::NotConfigured(_) | RegistryError::Unreachable(_) => {
                ErrorCode::Unavailable
            }
            RegistryError::NotFound(_) => ErrorCode::NotFound,
            RegistryError::TimedOut(_) => ErrorCode::Timeout,
            RegistryError::Slug(_) | RegistryError::Refused(_) => ErrorCode::InvalidParams,
        },
        SkillsError::Refused { .. } | SkillsError::Invalid(_) => ErrorCode::InvalidParams,
    };
    ProtocolError::new(code, e.to_string())
}

/// The registry the configuration names (`None`: none is set).
fn configured_registry(ctx: &Ctx) -> Result<Option<Registry>, SkillsError> {
    Ok(Registry::from_config(&ctx.daemon.config())?)
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
                "path must be absolute (got {path:?}); to install from the skills registry give `slug` instead"
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

/// `skills_search {query, detailed?}` → the installed skills whose slug, name or description
/// contain every word of `query` (case-insensitive, slug order), then the configured
/// registry's matching skills (index order) not already listed. A registry that cannot be
/// asked leaves its part out and is said in `warnings` (with `detailed`) and in the log; it
/// is never an error.
pub async fn skills_search(
    p: SkillsSearchParams,
    ctx: Ctx,
) -> Result<SkillsSearchReply, ProtocolError> {
    let reg = configured_registry(&ctx);
    let found = registry::search_all(library(&ctx), reg, &p.query)
        .await
        .map_err(to_protocol)?;
    for why in &found.warnings {
        tracing::warn!("skills_search: {why}");
    }
    Ok(if p.detailed {
        SkillsSearchReply::Detailed(found)
    } else {
        SkillsSearchReply::List(found.results)
    })
}

/// `skills_install {path | slug, install_as?, confirm?}` → the outcome with the report (and,
/// for a slug, the download's `sha256` and `download_url`). A refused install is a result
/// (`installed:false`, the verdict and findings), not an error.
pub async fn skills_install(
    p: SkillsInstallParams,
    ctx: Ctx,
) -> Result<SkillsInstallReply, ProtocolError> {
    let lib = library(&ctx);
    let (outcome, download) = match &p.source {
        SkillSource::Path(path) => {
            let path = absolute(path)?;
            let slug = p.install_as.clone();
            let out =
                blocking(move || skills::install_path(&lib, &path, slug.as_deref(), p.confirm))
                    .await?;
            (out, None)
        }
        SkillSource::Slug(given) => {
            let reg = configured_registry(&ctx).map_err(to_protocol)?;
            let done = registry::install(
                &lib,
                reg.as_ref(),
                given,
                p.install_as.as_deref(),
                p.confirm,
            )
            .await
            .map_err(to_protocol)?;
            tracing::info!(
                "skills_install: downloaded {} ({} bytes, sha256 {}) for {}",
                done.download.url,
                done.download.bytes,
                done.download.sha256,
                done.slug
            );
            let slug = done.slug;
            let outcome = done.outcome.map_err(|e| match e {
                SkillsError::Refused { report, message } => SkillsError::Refused {
                    report,
                    message: format!("{message} Nothing was installed."),
                },
                other => other,
            });
            (outcome, Some((slug, done.download)))
        }
    };
    let (sha256, download_url) = match &download {
        Some((_, d)) => (Some(d.sha256.clone()), Some(d.url.clone())),
        None => (None, None),
    };
    let asked = download
        .map(|(slug, _)| slug)
        .or_else(|| p.install_as.clone());
    match outcome {
        Ok(done) => Ok(SkillsInstallReply {
            message: match &sha256 {
                Some(h) => format!("installed {} (downloaded, sha256 {h})", done.slug),
                None => format!("installed {}", done.slug),
            },
            report: report(&done.report),
            slug: Some(done.slug),
            installed: true,
            replaced: done.replaced,
            sha256,
            download_url,
        }),
        Err(SkillsError::Refused {
            report: refused,
            message,
        }) => Ok(SkillsInstallReply {
            slug: asked,
            installed: false,
            replaced: false,
            message,
            report: report(&refused),
            sha256,
            download_url,
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
