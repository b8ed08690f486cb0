//! `attach_image` over the real socket: the image reaches the scripted model as an OpenAI
//! `image_url` content part of the next request only, is stored with that message, and is
//! refused when it is not an image, when the read rules forbid the path (also through a
//! symbolic link), or when the model does not read images.

use super::scripted_turns::{start_model, wait_event, write_config};
use super::support::*;
use base64::Engine as _;
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A 1×1 red PNG.
const DOT_PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90\x77\x53\xde\x00\x00\x00\x0cIDAT\x78\x9c\x63\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xae\x42\x60\x82";

/// `sayri.toml` for `model` with agent `viewer` active, whose rules deny reading
/// `<dir>/private/*`; returns the pictures directory and the private one.
fn viewer(env: &Env, model: &super::scripted_turns::Model) -> (PathBuf, PathBuf) {
    write_config(env, model, 30, "viewer");
    let (pics, private) = (env.dir.path().join("pics"), env.dir.path().join("private"));
    std::fs::create_dir_all(&pics).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    let profile = json!({
        "id": "viewer", "name": "Viewer",
        "sandbox": {"level": "LEVEL_3_HOST_USER", "ask_before_run": false,
                    "permission_rules": [
                        {"action": "read", "resource": format!("{}/*", private.display()),
                         "effect": "deny"}]},
    });
    std::fs::write(
        env.config_dir().join("agents/viewer.json"),
        profile.to_string(),
    )
    .unwrap();
    (pics, private)
}

fn attach(c: &mut RawClient, path: &Path, id: u64) -> Value {
    c.call("attach_image", json!({"path": path}), id)
}

/// The user message of the last chat request that was not a title request.
fn last_user_content(bodies: &[Value]) -> Value {
    let body = bodies
        .iter()
        .rev()
        .find(|b| b.get("max_tokens") != Some(&json!(15)))
        .unwrap();
    let messages = body["messages"].as_array().unwrap();
    messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone()
}

#[test]
fn an_attached_image_reaches_the_model_as_an_image_part_of_the_next_request_only() {
    let env = Env::new();
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&["A red dot."])),
        Reply::sse(sse::content_stream(&["Still a dot."])),
    ]);
    let (pics, _) = viewer(&env, &model);
    let dot = pics.join("dot.png");
    std::fs::write(&dot, DOT_PNG).unwrap();
    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();

    let r = attach(&mut c, &dot, 1);
    assert_eq!(
        r["result"],
        json!({"path": dot, "mime": "image/png", "bytes": DOT_PNG.len(), "waiting": 1}),
        "{r}"
    );
    let ev = wait_event(&mut watcher, "attach_image", Duration::from_secs(5)).unwrap();
    assert_eq!(ev, json!({"event": "attach_image", "path": dot}));
    // The legacy parameter name works too; the file was read once, so a change after attaching
    // does not reach the model.
    let r = c.call("attach_image", json!({"image_path": dot}), 2);
    assert_eq!(r["result"]["waiting"], 2, "{r}");
    std::fs::write(&dot, b"GIF89a changed after attaching").unwrap();

    let r = c.call("ask", json!({"text": "What is in these pictures?"}), 3);
    assert_eq!(r["result"]["text"], "A red dot.", "{r}");
    let content = last_user_content(&model.llm.chat_bodies());
    let url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(DOT_PNG)
    );
    assert_eq!(
        content,
        json!([
            {"type": "text", "text": "What is in these pictures?"},
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "image_url", "image_url": {"url": url}},
        ])
    );

    let r = c.call("ask", json!({"text": "And now?"}), 4);
    assert_eq!(r["result"]["text"], "Still a dot.", "{r}");
    assert_eq!(
        last_user_content(&model.llm.chat_bodies()),
        json!("And now?"),
        "an image goes with one request only"
    );

    let db = rusqlite::Connection::open(env.state_dir().join("sessions.db")).unwrap();
    let stored: Vec<(String, String, String)> = db
        .prepare(
            "SELECT m.content, i.mime, i.data_base64 FROM message_images i
             JOIN messages m ON m.id = i.message_id ORDER BY i.message_id, i.position",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(DOT_PNG);
    let row = (
        "What is in these pictures?".to_string(),
        "image/png".to_string(),
        b64,
    );
    assert_eq!(stored, vec![row.clone(), row]);
}

#[test]
fn attaching_is_refused_for_non_images_forbidden_paths_and_links_to_them() {
    let env = Env::new();
    let model = start_model(vec![]);
    let (pics, private) = viewer(&env, &model);
    let secret = private.join("secret.png");
    std::fs::write(&secret, DOT_PNG).unwrap();
    let link = pics.join("innocent.png");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let fake = pics.join("notes.png");
    std::fs::write(&fake, "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();

    for (path, code, words) in [
        (secret.clone(), "denied", "cannot attach"),
        (link.clone(), "denied", "private"),
        (
            fake.clone(),
            "invalid_params",
            "not a PNG, JPEG, GIF or WebP",
        ),
        (pics.clone(), "invalid_params", "not a regular file"),
        (pics.join("missing.png"), "not_found", "cannot open image"),
        (PathBuf::from("dot.png"), "invalid_params", "absolute path"),
    ] {
        let r = attach(&mut c, &path, 1);
        assert_eq!(r["code"], code, "{}: {r}", path.display());
        assert!(
            r["error"].as_str().unwrap().contains(words),
            "{}: {r}",
            path.display()
        );
    }
    let r = c.call(
        "config_set",
        json!({"key": "sandbox.deny_read", "value": [pics]}),
        2,
    );
    assert_eq!(r["ok"], true, "{r}");
    std::fs::write(pics.join("dot.png"), DOT_PNG).unwrap();
    let r = attach(&mut c, &pics.join("dot.png"), 3);
    assert_eq!(r["code"], "denied", "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("sandbox.deny_read"),
        "{r}"
    );
}

#[test]
fn a_model_that_does_not_read_images_gets_a_clear_error() {
    let env = Env::new();
    let refusal = json!({"error": {"code": 400, "type": "invalid_request_error",
        "message": "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"}});
    let model = start_model(vec![Reply::json(400, &refusal)]);
    let (pics, _) = viewer(&env, &model);
    std::fs::write(pics.join("dot.png"), DOT_PNG).unwrap();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    assert_eq!(attach(&mut c, &pics.join("dot.png"), 1)["ok"], true);
    let r = c.call("ask", json!({"text": "What is this?"}), 2);
    let error = r["result"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("did not accept the attached image")
            && error.contains("vision")
            && error.contains("image input is not supported"),
        "{r}"
    );
    // The daemon goes on.
    assert_eq!(c.call("ping", json!({}), 3)["result"], "pong");
}

/// The legacy socket's `attach PATH` and JSON `ATTACH_IMAGE` attach through the same checks:
/// the image reaches the next request as an image part, and a path the read rules forbid is
/// refused on both, with the reason.
#[test]
fn the_legacy_attach_requests_attach_through_the_same_checks() {
    use super::gateway_rig::Legacy;
    let env = Env::new();
    let model = start_model(vec![Reply::sse(sse::content_stream(&["Two dots."]))]);
    let (pics, private) = viewer(&env, &model);
    let dot = pics.join("dot.png");
    std::fs::write(&dot, DOT_PNG).unwrap();
    let secret = private.join("secret.png");
    std::fs::write(&secret, DOT_PNG).unwrap();
    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();

    let mut plain = Legacy::send(&env, &format!("attach {}", dot.display()));
    assert_eq!(plain.line().as_deref(), Some("OK"));
    let ev = wait_event(&mut watcher, "attach_image", Duration::from_secs(5)).unwrap();
    assert_eq!(ev, json!({"event": "attach_image", "path": dot}));
    // JSON `ATTACH_IMAGE` is answered `OK`, as the original answered it.
    let mut json_attach = Legacy::json(&env, &json!({"type": "ATTACH_IMAGE", "image_path": dot}));
    assert_eq!(json_attach.line().as_deref(), Some("OK"));
    assert_eq!(json_attach.line(), None, "one answer per connection");

    let mut refused = Legacy::send(&env, &format!("attach {}", secret.display()));
    let line = refused.line().unwrap();
    assert!(line.starts_with("ERROR cannot attach"), "{line}");
    let events = Legacy::json(&env, &json!({"type": "attach", "path": secret})).events();
    assert_eq!(events[0]["event"], "error", "{events:?}");
    assert_eq!(events[0]["ok"], false, "{events:?}");
    let events = Legacy::json(&env, &json!({"type": "attach", "path": "dot.png"})).events();
    assert!(
        events[0]["error"]
            .as_str()
            .unwrap()
            .contains("absolute path"),
        "{events:?}"
    );

    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    let r = c.call("ask", json!({"text": "What do you see?"}), 1);
    assert_eq!(r["result"]["text"], "Two dots.", "{r}");
    let url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(DOT_PNG)
    );
    assert_eq!(
        last_user_content(&model.llm.chat_bodies()),
        json!([
            {"type": "text", "text": "What do you see?"},
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "image_url", "image_url": {"url": url}},
        ]),
        "both legacy attachments went with the request; the refused ones did not"
    );
}
