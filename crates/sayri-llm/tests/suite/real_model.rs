//! A real model (SmolLM2-135M-Instruct via node-llama-cpp) answers through the client.
//! Fails — never skips — when the model is not installed: run `./scripts/setup --tests`.

use sayri_core::ports::{ChatEvent, FinishReason};
use sayri_llm::{ClientConfig, OpenAiClient};
use sayri_testkit::RealModelServer;

use super::common::{ask, run};

#[tokio::test]
async fn real_model_knows_the_capital_of_france() {
    let server = tokio::task::spawn_blocking(RealModelServer::start)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"));
    let c = OpenAiClient::new(ClientConfig::new(server.base_url())).unwrap();
    assert_eq!(c.list_models().await.unwrap(), [server.model_id()]);
    let mut request = ask("What is the capital of France?");
    request.model = server.model_id().into();
    request.max_tokens = Some(48);
    request.temperature = Some(0.0);
    let out = run(&c, request).await;
    assert_eq!(out.error, None);
    assert!(out.content.contains("Paris"), "answer: {:?}", out.content);
    assert!(matches!(
        out.finish,
        Some(FinishReason::Stop | FinishReason::Length)
    ));
    let usage = out.usage.expect("server reports usage when asked");
    assert!(
        usage.completion_tokens > 0 && usage.prompt_tokens > 0,
        "{usage:?}"
    );
    assert!(
        out.events
            .iter()
            .any(|e| matches!(e, ChatEvent::Content(_)))
    );
}
