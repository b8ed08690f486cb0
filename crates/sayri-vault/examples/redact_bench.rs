//! Prints redaction throughput figures (not a test): one-shot and streaming over command-like
//! output, and over multi-line hex dumps. Times are CPU time of this thread (the figure that
//! does not depend on how busy the machine is), wall time in brackets.
//!
//! `cargo run --release -p sayri-vault --example redact_bench`

use std::time::{Duration, Instant};

use sayri_vault::SecretRedactor;
use zeroize::Zeroizing;

/// CPU time consumed by the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `f` and returns (CPU time, wall time).
fn timed(f: impl FnOnce()) -> (Duration, Duration) {
    let (c, w) = (thread_cpu(), Instant::now());
    f();
    (thread_cpu() - c, w.elapsed())
}

fn report(name: &str, text: &str, r: &SecretRedactor, marker: &str) {
    let mb = text.len() as f64 / 1e6;
    let mut out = String::new();
    let (one_cpu, one_wall) = timed(|| out = r.redact(text));
    let caught = if out.contains(marker) {
        "secret caught"
    } else {
        "secret NOT caught"
    };
    let mut n = 0;
    let (st_cpu, st_wall) = timed(|| {
        let mut s = r.stream();
        for line in text.split_inclusive('\n') {
            n += s.push(line).len();
        }
        n += s.finish().len();
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name}: input {mb:.2} MB, 10 secrets: one-shot {:.1} ms CPU ({:.1} MB/s) [{:.1} ms wall]; \
         streamed per line {:.1} ms CPU ({:.1} MB/s) [{:.1} ms wall], {n} bytes out, {caught}",
        ms(one_cpu),
        mb / one_cpu.as_secs_f64(),
        ms(one_wall),
        ms(st_cpu),
        mb / st_cpu.as_secs_f64(),
        ms(st_wall),
    );
}

fn main() {
    let secrets: Vec<(String, Zeroizing<String>)> = (0..10)
        .map(|i| {
            (
                format!("KEY_{i}"),
                Zeroizing::new(format!("sy-secret-value-{i:02}-Zq81+/x")),
            )
        })
        .collect();
    let r = SecretRedactor::new(secrets);
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!("line {i}: building target %20 path\\/x ok\r\n"));
        if i % 1000 == 0 {
            text.push_str("leak sy-secret-value-03-Zq81+/x here\n");
        }
    }
    report("build log", &text, &r, "$SECRET:KEY_3");

    // `xxd` of ~0.5 MB of text holding a secret every 8 KiB.
    let mut data = Vec::new();
    for i in 0..64 {
        data.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, 8000));
        data.extend_from_slice(b"sy-secret-value-07-Zq81+/x");
    }
    let mut dump = String::new();
    for (n, line) in data.chunks(16).enumerate() {
        let hex: Vec<String> = line
            .chunks(2)
            .map(|p| p.iter().map(|b| format!("{b:02x}")).collect())
            .collect();
        let text: String = line.iter().map(|b| *b as char).collect();
        dump.push_str(&format!("{:08x}: {:<39}  {text}\n", n * 16, hex.join(" ")));
    }
    report("xxd dump", &dump, &r, "$SECRET:KEY_7");
}
