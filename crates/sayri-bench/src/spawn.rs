//! Sandbox spawn overhead: wall time of `true` run through `LinuxSandbox` (the daemon's
//! adapter, with the `sayri-exec` helper next to this harness) at levels 1, 2 and 3, against a
//! bare fork + exec of `true` (`tokio::process::Command`). Runs alternate (bare, sandboxed,
//! bare, …) so both see the same machine load; the overhead is the per-pair difference.

use crate::report::Row;
use crate::stats::Stat;
use sayri_core::ports::{ExecRequest, Sandbox};
use sayri_protocol::SandboxLevel;
use sayri_sandbox::{LinuxSandbox, LinuxSandboxSettings};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const PAIRS: usize = 200;

/// The rows of this section: the bare spawn and the overhead of each level.
pub fn run(helper: &Path) -> Result<Vec<Row>, String> {
    let dir = tempfile::tempdir_in("/var/tmp").map_err(|e| e.to_string())?;
    let mut s = LinuxSandboxSettings::from_env(helper.to_path_buf(), Vec::new());
    s.state_dir = dir.path().join("state");
    s.config_dir = dir.path().join("config");
    s.home_dir = dir.path().to_path_buf();
    let sandbox = LinuxSandbox::new(s);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let rows = rt.block_on(async {
        let mut rows = Vec::new();
        let mut bare_all = Vec::new();
        for (level, before) in [
            (
                SandboxLevel::ReadOnly,
                "before this work +4.1 ms; target ≤ 2 ms",
            ),
            (
                SandboxLevel::IsolatedDev,
                "before this work +3.9 ms; target ≤ 2 ms",
            ),
            (SandboxLevel::HostUser, ""),
        ] {
            let mut extra = Vec::with_capacity(PAIRS);
            let mut runs = Vec::with_capacity(PAIRS);
            let mut cpu = Vec::with_capacity(PAIRS);
            for _ in 0..PAIRS {
                let b = bare().await?;
                let before = children_cpu();
                let t = sandboxed(&sandbox, level).await?;
                cpu.push((children_cpu() - before).as_secs_f64() * 1e3);
                bare_all.push(b);
                runs.push(t);
                extra.push((t.as_secs_f64() - b.as_secs_f64()) * 1e3);
            }
            let median = Stat::millis(&runs).map_or(f64::NAN, |s| s.median);
            let cpu = Stat::of(&cpu).map_or(f64::NAN, |s| s.median);
            rows.push(
                Row::new(
                    format!("sandbox spawn overhead, {level}"),
                    Stat::of(&extra),
                    "ms",
                )
                .decimals(2)
                .reference(before)
                .note(format!(
                    "{PAIRS} pairs; `true` through the sandbox: median {median:.2} ms wall, {cpu:.2} ms CPU"
                )),
            );
        }
        rows.insert(
            0,
            Row::new("bare fork + exec of `true`", Stat::millis(&bare_all), "ms")
                .decimals(2)
                .note("tokio::process::Command, waited for"),
        );
        Ok::<_, String>(rows)
    })?;
    let left = sayri_testkit::procs::stop_leftovers(dir.path(), Duration::from_secs(5));
    if !left.is_empty() {
        return Err(format!(
            "the spawn benchmark left processes running (now killed): {left:?}"
        ));
    }
    Ok(rows)
}

/// CPU time (user + system) of every waited-for descendant so far (the helper, the sandbox's
/// init and the command are all waited for).
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills a plain-data struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

async fn bare() -> Result<Duration, String> {
    let t = Instant::now();
    let st = tokio::process::Command::new("true")
        .status()
        .await
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err("`true` failed".into());
    }
    Ok(t.elapsed())
}

async fn sandboxed(sandbox: &LinuxSandbox, level: SandboxLevel) -> Result<Duration, String> {
    let req = ExecRequest {
        command: "true".into(),
        level,
        agent_id: "bench".into(),
        workspace: None,
        timeout: Duration::from_secs(10),
        allow_network: false,
        env: vec![],
        allowed_secrets: vec![],
        output_limit: 0,
        readable: None,
    };
    let t = Instant::now();
    let r = sandbox.run(req, CancellationToken::new()).await;
    let took = t.elapsed();
    if r.exit_code != Some(0) {
        return Err(format!("`true` at {level} failed: {}", r.output_text()));
    }
    Ok(took)
}
