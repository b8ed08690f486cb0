//! What goes on the wire: body fields, headers, base URL handling.

use sayri_core::ports::{ChatMessage, ChatRequest, Role};
use sayri_llm::{ClientConfig, OpenAiClient, parse_header_line};
use sayri_testkit::{FakeLlm, Reply, Script, sse};
use serde_json::json;

use super::common::{config, run};

#[tokio::test]
async fn body_and_headers() {
    let server = FakeLlm::start(Script::repeat(Reply::sse(sse::content_stream(&["ok"]))))
        .await
        .unwrap();
    let request = ChatRequest {
        model: "llama3.2".into(),
        messages: vec![
            ChatMessage::new(Role::System, "Be brief."),
            ChatMessage::new(Role::User, "hi"),
            ChatMessage::new(Role::System, "Use bash blocks."),
            ChatMessage::new(Role::System, "  "),
            ChatMessage::new(Role::Assistant, "hello"),
            ChatMessage::new(Role::User, "again"),
        ],
        temperature: Some(0.25),
        max_tokens: Some(64),
        tools: Some(json!([{"type": "function"}])),
    };
    // No key: no Authorization header; tools not sent without native_tools.
    let c = OpenAiClient::new(config(&server.base_url())).unwrap();
    run(&c, request.clone()).await;
    // With key, extra headers, max_tokens 0, no temperature, no usage request.
    let c = OpenAiClient::new(ClientConfig {
        api_key: Some("sk-test-123456".into()),
        extra_headers: vec![
            parse_header_line("HTTP-Referer: https://sayri.invalid").unwrap(),
            parse_header_line("X-Title:Sayri").unwrap(),
        ],
        include_usage: false,
        ..config(&server.base_url())
    })
    .unwrap();
    run(
        &c,
        ChatRequest {
            max_tokens: Some(0),
            temperature: None,
            model: String::new(),
            ..request
        },
    )
    .await;

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("authorization"), None);
    assert!(
        reqs[0]
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let b0 = reqs[0].json().unwrap();
    assert_eq!(
        b0,
        json!({
            "model": "llama3.2",
            "messages": [
                {"role": "system", "content": "Be brief.\n\nUse bash blocks."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "again"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.25,
            "max_tokens": 64,
        })
    );
    assert_eq!(
        reqs[1].header("authorization"),
        Some("Bearer sk-test-123456")
    );
    assert_eq!(reqs[1].header("x-title"), Some("Sayri"));
    assert_eq!(
        reqs[1].header("http-referer"),
        Some("https://sayri.invalid")
    );
    let b1 = reqs[1].json().unwrap();
    assert_eq!(b1["model"], "default");
    assert_eq!(b1["stream"], true);
    for absent in ["max_tokens", "temperature", "stream_options", "tools"] {
        assert!(b1.get(absent).is_none(), "{absent} must be omitted: {b1}");
    }
}

#[tokio::test]
async fn bare_host_url_gets_v1_and_full_endpoint_url_is_kept() {
    let server = FakeLlm::start(Script::repeat(Reply::sse(sse::content_stream(&["ok"]))))
        .await
        .unwrap();
    let host = format!("127.0.0.1:{}", server.addr().port());
    for url in [
        host.clone(),
        format!("http://{host}/"),
        format!("http://{host}/v1/chat/completions"),
    ] {
        let out = run(
            &OpenAiClient::new(config(&url)).unwrap(),
            super::common::ask("x"),
        )
        .await;
        assert_eq!(out.content, "ok", "{url}");
    }
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.path == "/v1/chat/completions")
    );
}

#[test]
fn bad_header_lines_are_config_errors() {
    assert!(parse_header_line("no colon").is_err());
    assert!(parse_header_line(": v").is_err());
    let bad = OpenAiClient::new(ClientConfig {
        extra_headers: vec![("Bad Name".into(), "v".into())],
        ..ClientConfig::default()
    });
    assert!(bad.is_err());
}
