//! Prints redaction throughput figures (not a test): one-shot and streaming over command-like output.
//!
//! `cargo run --release -p sayri-vault --example redact_bench`

use std::time::Instant;

use sayri_vault::SecretRedactor;
use zeroize::Zeroizing;

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
    let mb = text.len() as f64 / 1e6;
    let t = Instant::now();
    let out = r.redact(&text);
    let one = t.elapsed();
    assert!(out.contains("$SECRET:KEY_3"));
    let t = Instant::now();
    let mut s = r.stream();
    let mut n = 0;
    for line in text.split_inclusive('\n') {
        n += s.push(line).len();
    }
    n += s.finish().len();
    let streamed = t.elapsed();
    println!(
        "input {mb:.2} MB, 10 secrets: one-shot {:.1} ms ({:.1} MB/s); streamed per line {:.1} ms ({:.1} MB/s), {n} bytes out",
        one.as_secs_f64() * 1e3,
        mb / one.as_secs_f64(),
        streamed.as_secs_f64() * 1e3,
        mb / streamed.as_secs_f64()
    );
}
