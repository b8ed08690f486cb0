//! Prints throughput figures for the stream path (no assertions).
//!
//! `cargo bench -p sayri-llm --bench stream` — parser/decoder and loopback end to end.
//! Add `-- --real` to also time the real SmolLM2 server (needs `./scripts/setup --tests`).

// A benchmark run by developers: a setup step that fails panics, and the panic is its report.
#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use sayri_core::ports::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role};
use sayri_llm::{ChunkDecoder, ClientConfig, InlineThink, OpenAiClient, SseParser};
use sayri_testkit::{FakeLlm, RealModelServer, Reply, Script, sse};

fn parser_figures() {
    let deltas: Vec<String> = (0..20_000).map(|i| format!("token{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let body = sse::content_stream(&refs);
    for (label, think) in [
        ("explicit", InlineThink::Explicit),
        ("auto", InlineThink::Auto),
    ] {
        let start = Instant::now();
        let mut parser = SseParser::new();
        let mut decoder = ChunkDecoder::new(think);
        let mut events = 0usize;
        for read in body.chunks(1024) {
            for ev in parser.feed(read) {
                events += decoder.on_data(&ev.data).map(|v| v.len()).unwrap_or(0);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "parse+decode ({label}): {:.1} MB in 1 KiB reads: {:.1} MB/s, {:.0} chunks/s, {events} events",
            body.len() as f64 / 1e6,
            body.len() as f64 / 1e6 / secs,
            refs.len() as f64 / secs
        );
    }
}

async fn loopback_figures() {
    let deltas: Vec<String> = (0..2_000).map(|i| format!("t{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let reply = Reply::sse(sse::content_stream(&refs)).with_event_writes();
    let server = FakeLlm::start(Script::repeat(reply)).await.expect("bind");
    let client = OpenAiClient::new(ClientConfig {
        inline_think: InlineThink::Explicit,
        ..ClientConfig::new(server.base_url())
    })
    .expect("client");
    let mut first = Vec::new();
    let mut total = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let mut stream = client.stream_chat(request("x"));
        let mut n = 0;
        while let Some(ev) = stream.next().await {
            if let Ok(ChatEvent::Content(_)) = ev {
                if n == 0 {
                    first.push(start.elapsed());
                }
                n += 1;
            }
        }
        total.push(start.elapsed());
    }
    first.sort();
    total.sort();
    println!(
        "loopback, 2000 deltas, one write per event: first delta p50 {:?}, whole stream p50 {:?} ({:.0} deltas/s)",
        first[first.len() / 2],
        total[total.len() / 2],
        2000.0 / total[total.len() / 2].as_secs_f64()
    );
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        model: "fake-model".into(),
        messages: vec![ChatMessage::new(Role::User, text)],
        ..Default::default()
    }
}

async fn real_figures() {
    let server = match tokio::task::spawn_blocking(RealModelServer::start).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            println!("real model: {e}");
            return;
        }
        Err(e) => {
            println!("real model: {e}");
            return;
        }
    };
    let client = OpenAiClient::new(ClientConfig {
        inline_think: InlineThink::Explicit,
        ..ClientConfig::new(server.base_url())
    })
    .expect("client");
    let mut req = request("Write three sentences about the sea.");
    req.model = server.model_id().into();
    req.max_tokens = Some(128);
    let start = Instant::now();
    let mut first = None;
    let mut chunks = 0;
    let mut stream = client.stream_chat(req);
    while let Some(Ok(ev)) = stream.next().await {
        if let ChatEvent::Content(_) = ev {
            first.get_or_insert(start.elapsed());
            chunks += 1;
        }
    }
    let total = start.elapsed();
    let generating = total - first.unwrap_or(Duration::ZERO);
    println!(
        "real SmolLM2-135M: first token {:?}, {chunks} content chunks in {total:?} ({:.1} chunks/s after the first)",
        first.unwrap_or_default(),
        chunks as f64 / generating.as_secs_f64().max(1e-9)
    );
}

fn main() {
    parser_figures();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(loopback_figures());
    if std::env::args().any(|a| a == "--real") {
        rt.block_on(real_figures());
    }
}
