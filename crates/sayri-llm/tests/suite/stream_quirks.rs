//! Streams as real servers send them, end to end over HTTP with several write boundaries each:
//! SSE comments, CRLF line ends and `data:` without a space; `choices` empty or null around a
//! usage chunk; reasoning (a `reasoning_content` field or inline `<think>`) that must never reach
//! the answer. The fixtures are byte-exact recordings.

use sayri_core::ports::{ChatEvent, FinishReason, Usage};
use sayri_llm::{ClientConfig, InlineThink, OpenAiClient};
use sayri_testkit::{FakeLlm, Reply, Script};
use std::time::Duration;

use super::common::{ask, client, config, fixture, hex_reads, run};

/// Delivery plans: one write, per SSE event, 1-byte writes, 7-byte writes.
fn plans(body: &[u8]) -> Vec<Reply> {
    vec![
        Reply::sse(body.to_vec()),
        Reply::sse(body.to_vec()).with_event_writes(),
        Reply::sse(body.to_vec()).with_write_size(1),
        Reply::sse(body.to_vec())
            .with_write_size(7)
            .with_write_delay(Duration::from_millis(1)),
    ]
}

#[tokio::test]
async fn comments_crlf_and_data_without_space_give_the_answer() {
    let reads = hex_reads("sse-comments-crlf.chunks.hex");
    let body: Vec<u8> = reads.concat();
    assert_eq!(
        body,
        fixture("sse-comments-crlf.sse"),
        "hex reads == .sse bytes"
    );
    let exact = Reply::sse(body.clone())
        .with_boundaries(&[reads[0].len()])
        .with_write_delay(Duration::from_millis(50));
    let mut replies = vec![exact];
    replies.extend(plans(&body));
    let n = replies.len();
    let server = FakeLlm::start(Script::queue(replies)).await.unwrap();
    let c = client(&server.base_url());
    for _ in 0..n {
        let out = run(&c, ask("hi")).await;
        assert_eq!(out.error, None);
        assert_eq!(out.content, "Hello");
        assert_eq!(out.finish, Some(FinishReason::Stop));
        assert_eq!(out.reasoning, "");
    }
}

#[tokio::test]
async fn empty_and_null_choices_around_usage_give_the_answer_and_usage() {
    for file in [
        "sse-empty-choices-usage.a.sse",
        "sse-empty-choices-usage.b.sse",
    ] {
        let body = fixture(file);
        let replies = plans(&body);
        let n = replies.len();
        let server = FakeLlm::start(Script::queue(replies)).await.unwrap();
        let c = client(&server.base_url());
        for _ in 0..n {
            let out = run(&c, ask("hi")).await;
            assert_eq!(out.error, None, "{file}");
            assert_eq!(out.content, "Done.", "{file}");
            assert_eq!(out.finish, Some(FinishReason::Stop), "{file}");
            assert_eq!(
                out.usage,
                Some(Usage {
                    prompt_tokens: 12,
                    completion_tokens: 2,
                    total_tokens: 14
                }),
                "{file}"
            );
            // Usage comes right before Finish, which is last.
            let k = out.events.len();
            assert!(matches!(out.events[k - 2], ChatEvent::Usage(_)));
        }
        for body in server.chat_bodies() {
            assert_eq!(body["stream_options"]["include_usage"], true);
        }
    }
}

const REASONING: &str = "The user wants a listing. Old habit would be:\n```bash\nrm -rf ~/sayri-cache\n```\nbut listing is enough.";
const ANSWER: &str = "Here is the listing:\n```bash\nls -la\n```\n";

#[tokio::test]
async fn reasoning_never_reaches_the_answer() {
    for file in [
        "sse-reasoning.a.sse",
        "sse-reasoning.b.sse",
        "sse-reasoning.c.sse",
    ] {
        for think in [InlineThink::Auto, InlineThink::Explicit] {
            let body = fixture(file);
            let replies = plans(&body);
            let n = replies.len();
            let server = FakeLlm::start(Script::queue(replies)).await.unwrap();
            let c = OpenAiClient::new(ClientConfig {
                inline_think: think,
                ..config(&server.base_url())
            })
            .unwrap();
            for _ in 0..n {
                let out = run(&c, ask("list")).await;
                assert_eq!(out.error, None, "{file}");
                assert_eq!(out.reasoning, REASONING, "{file} {think:?}");
                assert_eq!(out.content.trim_start(), ANSWER, "{file} {think:?}");
                assert!(!out.content.contains("rm -rf"), "{file}");
                assert!(
                    !out.content.contains("null"),
                    "{file}: content null appended"
                );
                assert!(!out.content.contains("think>"), "{file}");
                assert_eq!(out.finish, Some(FinishReason::Stop));
                for ev in &out.events {
                    if let ChatEvent::Content(t) = ev {
                        assert!(
                            !t.contains("sayri-cache"),
                            "{file}: reasoning as Content: {t:?}"
                        );
                    }
                }
            }
        }
    }
}

/// A server that ignores `"stream": true` and answers with one `chat.completion` JSON document
/// still gives the answer, the reasoning kept apart, the finish reason and the usage it reports
/// (which the engine records and calibrates its token estimate with), in small writes too.
#[tokio::test]
async fn a_non_streamed_completion_gives_the_answer_reasoning_and_usage() {
    let body = serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Paris.", "reasoning_content": "France's capital."
        }}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 3, "total_tokens": 34},
    });
    for reply in [
        Reply::json(200, &body),
        Reply::json(200, &body).with_write_size(5),
    ] {
        let server = FakeLlm::start(Script::queue([reply])).await.unwrap();
        let out = run(&client(&server.base_url()), ask("Capital of France?")).await;
        assert!(out.error.is_none(), "{:?}", out.error);
        assert_eq!(out.content, "Paris.");
        assert_eq!(out.reasoning, "France's capital.");
        assert_eq!(out.finish, Some(FinishReason::Stop));
        assert_eq!(
            out.usage,
            Some(Usage {
                prompt_tokens: 31,
                completion_tokens: 3,
                total_tokens: 34
            })
        );
    }
    let server = FakeLlm::start(Script::queue([Reply::json(
        200,
        &serde_json::json!({"ok": true}),
    )]))
    .await
    .unwrap();
    let out = run(&client(&server.base_url()), ask("x")).await;
    let e = out.error.expect("a JSON reply without choices is an error");
    assert!(e.to_string().contains("no choices"), "{e}");
}
