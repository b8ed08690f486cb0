//! `GET /v1/models` for `sayri models list --remote` and `sayri doctor`.

use sayri_core::ports::ChatError;
use sayri_testkit::{FakeLlm, Reply, Script};
use serde_json::json;

use super::common::client;

#[tokio::test]
async fn lists_openai_and_ollama_shapes() {
    let server = FakeLlm::start(Script::queue([])).await.unwrap();
    let c = client(&server.base_url());
    assert_eq!(c.list_models().await.unwrap(), ["fake-model"]);
    server.set_models_reply(Reply::json(
        200,
        &json!({"models": [{"name": "llama3.2:latest"}, {"model": "qwen3:4b"}]}),
    ));
    assert_eq!(
        c.list_models().await.unwrap(),
        ["llama3.2:latest", "qwen3:4b"]
    );
    let reqs = server.requests();
    assert!(
        reqs.iter()
            .all(|r| r.method == "GET" && r.path == "/v1/models")
    );
}

#[tokio::test]
async fn model_list_errors() {
    let server = FakeLlm::start(Script::queue([])).await.unwrap();
    server.set_models_reply(Reply::text(200, "<html>not an API</html>"));
    let err = client(&server.base_url()).list_models().await.unwrap_err();
    assert!(
        matches!(err, ChatError::Other(ref m) if m.contains("not JSON")),
        "{err}"
    );
    server.set_models_reply(Reply::json(401, &json!({"error": {"message": "no key"}})));
    let err = client(&server.base_url()).list_models().await.unwrap_err();
    assert!(matches!(err, ChatError::Http { status: 401, .. }));
}
