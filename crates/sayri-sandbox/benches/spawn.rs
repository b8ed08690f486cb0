//! Spawn overhead: median wall time of 200 runs of `true` through `LinuxSandbox` at levels 1 and 2
//! versus a bare `tokio::process::Command` spawn. Run: `cargo bench -p sayri-sandbox --bench spawn`.
//!
//! Two more figures per level, because wall times on a shared 2-core machine swing with the load:
//! the CPU time one run costs (helper, sandbox init and command, from `getrusage(RUSAGE_CHILDREN)`),
//! and the median of 30 runs spaced 100 ms apart, the way a daemon sees commands (back-to-back runs
//! share kernel work such as RCU grace periods that a lone run pays in full).
//! `SAYRI_SANDBOX_HELPER=/path/to/helper` measures another helper build with the same launcher.

use sayri_core::ports::{ExecRequest, Sandbox};
use sayri_protocol::SandboxLevel;
use sayri_sandbox::{LinuxSandbox, LinuxSandboxSettings};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 200;
const SPACED_RUNS: usize = 30;

/// CPU time (user + system) of every waited-for descendant so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills a plain-data struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let helper = std::env::var_os("SAYRI_SANDBOX_HELPER")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            let mut p = std::env::current_exe().unwrap_or_default();
            p.pop();
            if p.ends_with("deps") {
                p.pop();
            }
            p.join("sayri-sandbox")
        });
    if !helper.exists() {
        eprintln!(
            "build the helper first: cargo build --release -p sayri-sandbox ({} missing)",
            helper.display()
        );
        std::process::exit(1);
    }
    let dir = std::env::temp_dir().join(format!("sayri-bench-{}", std::process::id()));
    let mut s = LinuxSandboxSettings::from_env(helper, vec![sayri_sandbox::EXEC_HELPER_ARG.into()]);
    s.state_dir = dir.join("state");
    s.config_dir = dir.join("config");
    let sb = LinuxSandbox::new(s);
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    rt.block_on(async {
        let mut bare = Vec::with_capacity(RUNS);
        let cpu0 = children_cpu();
        for _ in 0..RUNS {
            let t = Instant::now();
            let st = tokio::process::Command::new("true").status().await;
            bare.push(t.elapsed());
            assert!(st.map(|s| s.success()).unwrap_or(false));
        }
        let bare_cpu = (children_cpu() - cpu0) / RUNS as u32;
        let bare_m = median(bare);
        println!(
            "bare spawn of `true`: median {:.3} ms; cpu {:.3} ms per run",
            bare_m.as_secs_f64() * 1e3,
            bare_cpu.as_secs_f64() * 1e3
        );
        for level in [
            SandboxLevel::ReadOnly,
            SandboxLevel::IsolatedDev,
            SandboxLevel::HostUser,
        ] {
            let one = || async {
                let req = ExecRequest {
                    command: "true".into(),
                    level,
                    agent_id: "bench".into(),
                    workspace: None,
                    timeout: Duration::from_secs(10),
                    allow_network: false,
                    env: vec![],
                    output_limit: 0,
                };
                let t = Instant::now();
                let r = sb.run(req, CancellationToken::new()).await;
                assert_eq!(r.exit_code, Some(0), "{r:?}");
                t.elapsed()
            };
            let mut v = Vec::with_capacity(RUNS);
            let cpu0 = children_cpu();
            for _ in 0..RUNS {
                v.push(one().await);
            }
            let cpu = (children_cpu() - cpu0) / RUNS as u32;
            let m = median(v);
            let mut spaced = Vec::with_capacity(SPACED_RUNS);
            for _ in 0..SPACED_RUNS {
                tokio::time::sleep(Duration::from_millis(100)).await;
                spaced.push(one().await);
            }
            let sm = median(spaced);
            println!(
                "{level}: median {:.3} ms (overhead {:.3} ms over bare); cpu {:.3} ms per run; \
                 spaced 100 ms apart: median {:.3} ms",
                m.as_secs_f64() * 1e3,
                (m.as_secs_f64() - bare_m.as_secs_f64()) * 1e3,
                cpu.as_secs_f64() * 1e3,
                sm.as_secs_f64() * 1e3,
            );
        }
    });
    let _ = std::fs::remove_dir_all(dir);
}
