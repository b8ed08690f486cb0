//! Chunk-level quirks of real servers, each as exact bytes over HTTP.

use sayri_core::ports::{ChatError, ChatEvent, FinishReason};
use sayri_llm::{ClientConfig, InlineThink, OpenAiClient};
use sayri_testkit::{FakeLlm, Framing, Reply, Script, sse};
use serde_json::json;

use super::common::{ask, client, config, run};

async fn one(body: &str) -> super::common::Outcome {
    let server = FakeLlm::start(Script::queue([
        Reply::sse(body.as_bytes().to_vec()).with_write_size(5)
    ]))
    .await
    .unwrap();
    run(&client(&server.base_url()), ask("x")).await
}

#[tokio::test]
async fn missing_delta_null_content_and_role_only_chunk() {
    let out = one(concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":null}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ))
    .await;
    assert_eq!(out.error, None);
    assert_eq!(out.content, "ok");
    assert_eq!(out.usage, None, "no usage sent: unknown, not zero");
    assert!(!out.events.iter().any(|e| matches!(e, ChatEvent::Usage(_))));
}

#[tokio::test]
async fn ollama_empty_finish_reason_on_every_chunk() {
    let out = one(concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"\"}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ))
    .await;
    assert_eq!(
        (out.content.as_str(), out.finish),
        ("ab", Some(FinishReason::Stop))
    );
}

#[tokio::test]
async fn finish_reasons_are_reported() {
    for (raw, want) in [
        ("length", FinishReason::Length),
        ("content_filter", FinishReason::ContentFilter),
        ("tool_calls", FinishReason::ToolCalls),
        ("weird", FinishReason::Other("weird".into())),
    ] {
        let body = String::from_utf8(sse::stream_with_finish(&["x"], raw)).unwrap();
        let out = one(&body).await;
        assert_eq!(out.finish, Some(want), "{raw}");
        assert!(matches!(out.events.last(), Some(ChatEvent::Finish(_))));
    }
}

#[tokio::test]
async fn done_without_finish_reason_is_a_normal_end() {
    let out = one(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
    )
    .await;
    assert_eq!(out.error, None);
    assert_eq!(out.finish, Some(FinishReason::Stop));
}

#[tokio::test]
async fn finish_reason_without_done_is_a_normal_end() {
    let out = one("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n").await;
    assert_eq!(out.error, None);
    assert_eq!(
        (out.content.as_str(), out.finish),
        ("hi", Some(FinishReason::Stop))
    );
}

#[tokio::test]
async fn other_choices_never_mix_into_choice_zero() {
    let out = one(concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"zero\"}},{\"index\":1,\"delta\":{\"content\":\"ONE\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"ONE\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ))
    .await;
    assert_eq!(out.content, "zero");
}

#[tokio::test]
async fn malformed_chunks_are_skipped_and_blank_data_ignored() {
    let out = one(concat!(
        "data: {not json\n\n",
        "data:\n\n",
        "event: message\nid: 3\nretry: 100\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fine\"}}]}\n\n",
        "data: [DONE]\n\n",
    ))
    .await;
    assert_eq!((out.content.as_str(), out.error), ("fine", None));
}

#[tokio::test]
async fn error_object_mid_stream_is_an_error() {
    let out = one(concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n",
        "data: {\"error\":{\"message\":\"model crashed\"}}\n\n",
    ))
    .await;
    let err = out.error.expect("error");
    assert!(err.to_string().contains("model crashed"), "{err}");
    assert_eq!(out.finish, None);
}

#[tokio::test]
async fn utf8_split_across_http_writes() {
    let body = sse::content_stream(&["héllo ", "日本語 ", "😀"]);
    let server = FakeLlm::start(Script::queue([Reply::sse(body).with_write_size(1)]))
        .await
        .unwrap();
    let out = run(&client(&server.base_url()), ask("x")).await;
    assert_eq!(out.content, "héllo 日本語 😀");
    assert!(!out.content.contains('\u{FFFD}'));
}

#[tokio::test]
async fn explicit_think_streams_content_piece_by_piece() {
    let server = FakeLlm::start(Script::queue([Reply::sse(sse::content_stream(&[
        "a", "b", "c",
    ]))
    .with_event_writes()]))
    .await
    .unwrap();
    let c = OpenAiClient::new(ClientConfig {
        inline_think: InlineThink::Explicit,
        ..config(&server.base_url())
    })
    .unwrap();
    let out = run(&c, ask("x")).await;
    let pieces: Vec<_> = out
        .events
        .iter()
        .filter(|e| matches!(e, ChatEvent::Content(_)))
        .collect();
    assert_eq!(pieces.len(), 3, "{:?}", out.events);
}

#[tokio::test]
async fn native_tool_calls_are_assembled_by_index() {
    let frames = [
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"run_bash","arguments":""}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\":"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}},{"index":1,"function":{"arguments":"th\":\"a\"}"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ];
    let mut body: String = frames.iter().map(sse::data_event).collect();
    body.push_str(sse::DONE);
    let server = FakeLlm::start(Script::queue([
        Reply::sse(body.into_bytes()).with_write_size(9)
    ]))
    .await
    .unwrap();
    let c = OpenAiClient::new(ClientConfig {
        native_tools: true,
        ..config(&server.base_url())
    })
    .unwrap();
    let tools =
        json!([{"type":"function","function":{"name":"run_bash","parameters":{"type":"object"}}}]);
    let out = run(
        &c,
        sayri_core::ports::ChatRequest {
            tools: Some(tools.clone()),
            ..ask("x")
        },
    )
    .await;
    let calls: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "run_bash", "{\"cmd\":\"ls\"}"),
            ("call_b", "read_file", "{\"path\":\"a\"}")
        ]
    );
    assert_eq!(out.finish, Some(FinishReason::ToolCalls));
    assert_eq!(out.content, "");
    assert_eq!(server.chat_bodies()[0]["tools"], tools);
}

#[tokio::test]
async fn cut_before_done_without_finish_is_cut_off_in_every_framing() {
    let body = sse::content_stream(&["The answer is ", "incomplete"]);
    // Cut right after the second content event: no finish_reason, no [DONE].
    let text = String::from_utf8(body.clone()).unwrap();
    let stop = text.find("\"stop\"").unwrap();
    let cut = text[..stop].rfind("data: ").unwrap();
    assert!(text[..cut].contains("incomplete"));
    for framing in [Framing::Chunked, Framing::CloseDelimited, Framing::Length] {
        let reply = Reply::sse(body.clone())
            .with_framing(framing)
            .with_event_writes()
            .cut_after(cut);
        let server = FakeLlm::start(Script::queue([reply])).await.unwrap();
        let out = run(&client(&server.base_url()), ask("x")).await;
        assert_eq!(out.error, Some(ChatError::CutOff), "{framing:?}");
        assert_eq!(
            out.error.unwrap().to_string(),
            "the model stream was cut off"
        );
        assert_eq!(out.finish, None);
        assert_eq!(
            server.requests().len(),
            1,
            "{framing:?}: no retry after the first byte"
        );
    }
}
