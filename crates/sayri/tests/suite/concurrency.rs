//! Requests on one connection run concurrently: a long task-mode command (a custom handler
//! standing in for `ask`) does not block `ping` or `permission_answer` behind it.
//! Uses an embedded daemon with the real socket, dispatcher and client.

use sayri_client::client::Client;
use sayri_client::paths::Paths;
use sayri_daemon::daemon::dispatch::{Access, Mode};
use sayri_daemon::daemon::{Daemon, default_dispatcher};
use sayri_protocol::event::permissions::PermissionRequested;
use sayri_protocol::names::{cmd, event};
use sayri_protocol::params::{AskParams, PermissionAnswerParams};
use sayri_protocol::reply::permissions::{PermissionAnswerReply, PermissionRequest};
use sayri_protocol::reply::sessions::AskReply;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_request_does_not_block_later_ones_on_the_same_connection() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let paths = Paths {
        config_dir: dir.path().join("c"),
        state_dir: dir.path().join("s"),
        runtime_dir: dir.path().join("s"),
    };
    let answered = Arc::new(Notify::new());
    let mut d = default_dispatcher();
    let wait = answered.clone();
    d.register(Access::Assistant, Mode::Task, move |_: AskParams, ctx| {
        let wait = wait.clone();
        async move {
            ctx.broadcaster().emit(&PermissionRequested {
                request: PermissionRequest {
                    id: "abc123".into(),
                    action: "shell".into(),
                    resource: "true".into(),
                    reason: "a test".into(),
                    agent_id: "default".into(),
                    agent_name: "Default".into(),
                    session_id: "s".into(),
                    policy: false,
                    expires_in: 60.0,
                    segments: Vec::new(),
                    from_step: None,
                },
            });
            wait.notified().await;
            Ok(AskReply {
                text: "done".into(),
                error: None,
                session_id: "s".into(),
            })
        }
    });
    let notify = answered.clone();
    d.register(
        Access::Management,
        Mode::Inline,
        move |p: PermissionAnswerParams, _| {
            let notify = notify.clone();
            async move {
                notify.notify_one();
                Ok(PermissionAnswerReply {
                    delivered: true,
                    request_id: p.request_id,
                    allow: p.allow,
                })
            }
        },
    );
    let daemon = Daemon::bind_with_config(paths.clone(), Default::default(), d).unwrap();
    let state = daemon.state();
    let server = tokio::spawn(daemon.run());

    let mut c = Client::connect(&paths.socket(), Duration::from_secs(5))
        .await
        .unwrap();
    let mut ask = Map::new();
    ask.insert("text".into(), json!("wait for the answer"));
    let ask_id = c.send(cmd::ASK, ask).await.unwrap();
    // The ask is pending; ping on the same connection is answered.
    let mut saw_request = false;
    let pong = c
        .call(cmd::PING, Map::new(), Duration::from_secs(5), |ev| {
            saw_request |= ev.event == event::PERMISSION_REQUEST;
        })
        .await
        .unwrap();
    assert_eq!(pong, "pong");
    let mut params = Map::new();
    params.insert("request_id".into(), json!("abc123"));
    // The answer frees the ask, whose reply may then come before or after the answer's own:
    // both are read off the connection, in whatever order they arrive.
    let answer_id = c.send(cmd::PERMISSION_ANSWER, params).await.unwrap();
    let (mut answer, mut ask) = (None, None);
    tokio::time::timeout(Duration::from_secs(30), async {
        while answer.is_none() || ask.is_none() {
            match c.next_message().await.unwrap() {
                sayri_protocol::ServerMessage::Event(ev) => {
                    saw_request |= ev.event == event::PERMISSION_REQUEST;
                }
                sayri_protocol::ServerMessage::Response(r) if r.id() == &Value::from(answer_id) => {
                    answer = Some((r, saw_request));
                }
                sayri_protocol::ServerMessage::Response(r) if r.id() == &Value::from(ask_id) => {
                    ask = Some(r);
                }
                sayri_protocol::ServerMessage::Response(_) => {}
            }
        }
    })
    .await
    .expect("the answer's and the ask's replies arrive within 30 s");
    let (r, seen_before_answer) = answer.unwrap();
    assert_eq!(r.into_result().unwrap()["delivered"], true);
    assert!(
        seen_before_answer,
        "the permission_request event arrived before the answer's reply"
    );
    let ask = ask.unwrap();
    assert_eq!(ask.into_result().unwrap()["text"], "done");

    state.request_shutdown();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
    assert!(!paths.socket().exists());
}
