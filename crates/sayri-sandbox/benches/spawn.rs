//! Spawn overhead: median wall time of 200 runs of `true` through `LinuxSandbox` at levels 1 and 2
//! versus a bare `tokio::process::Command` spawn. Run: `cargo bench -p sayri-sandbox --bench spawn`.

use sayri_core::ports::{ExecRequest, Sandbox};
use sayri_protocol::SandboxLevel;
use sayri_sandbox::{LinuxSandbox, SandboxSettings};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 200;

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
    let mut s = SandboxSettings::from_env(helper, vec!["__sandbox-exec".into()]);
    s.state_dir = dir.join("state");
    s.config_dir = dir.join("config");
    let sb = LinuxSandbox::new(s);
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    rt.block_on(async {
        let mut bare = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let t = Instant::now();
            let st = tokio::process::Command::new("true").status().await;
            bare.push(t.elapsed());
            assert!(st.map(|s| s.success()).unwrap_or(false));
        }
        let bare_m = median(bare);
        println!(
            "bare spawn of `true`: median {:.3} ms",
            bare_m.as_secs_f64() * 1e3
        );
        for level in [
            SandboxLevel::ReadOnly,
            SandboxLevel::IsolatedDev,
            SandboxLevel::HostUser,
        ] {
            let mut v = Vec::with_capacity(RUNS);
            for _ in 0..RUNS {
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
                v.push(t.elapsed());
                assert_eq!(r.exit_code, Some(0), "{r:?}");
            }
            let m = median(v);
            println!(
                "{level}: median {:.3} ms (overhead {:.3} ms over bare)",
                m.as_secs_f64() * 1e3,
                (m.as_secs_f64() - bare_m.as_secs_f64()) * 1e3
            );
        }
    });
    let _ = std::fs::remove_dir_all(dir);
}
