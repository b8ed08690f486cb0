//! `sayri-fake-llm SCRIPT.json [--port N] [--log REQUESTS.ndjson]`
//!
//! Serves a script file (see `sayri_testkit::script_file`) as an OpenAI-compatible endpoint on
//! 127.0.0.1, prints `listening http://127.0.0.1:PORT/v1` once ready, and appends every request
//! (`{"method","path","body"}`) to the log file when one is given. Runs until killed.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use sayri_testkit::FakeLlm;
use sayri_testkit::script_file::ScriptFile;

fn usage() -> ! {
    eprintln!("usage: sayri-fake-llm SCRIPT.json [--port N] [--log REQUESTS.ndjson]");
    std::process::exit(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut script: Option<PathBuf> = None;
    let mut port: u16 = 0;
    let mut log: Option<PathBuf> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--log" => log = Some(args.next().map(PathBuf::from).unwrap_or_else(|| usage())),
            _ if script.is_none() => script = Some(PathBuf::from(a)),
            _ => usage(),
        }
    }
    let Some(path) = script else { usage() };
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    let built = ScriptFile::load(&path).and_then(|f| f.build(&dir));
    let (script, models) = match built {
        Ok(v) => v,
        Err(e) => {
            eprintln!("sayri-fake-llm: cannot use the script: {e}");
            std::process::exit(1);
        }
    };
    let server = match FakeLlm::start_on(port, script).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sayri-fake-llm: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    server.set_models_reply(models);
    println!("listening {}", server.base_url());
    let _ = std::io::stdout().flush();
    let mut logged = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Some(log) = &log else { continue };
        let reqs = server.requests();
        if reqs.len() > logged {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                for r in &reqs[logged..] {
                    let body = r
                        .json()
                        .unwrap_or_else(|| String::from_utf8_lossy(&r.body).into());
                    let line =
                        serde_json::json!({"method": r.method, "path": r.path, "body": body});
                    let _ = writeln!(f, "{line}");
                }
            }
            logged = reqs.len();
        }
    }
}
