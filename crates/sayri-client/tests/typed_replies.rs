//! The typed face of the client over a real Unix socket: a daemon stand-in greets, then answers
//! each request with the lines a test gives it. A reply or event that is not its type is an
//! error naming the command or event and saying to update both sides; one that is its type
//! arrives as the type.

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sayri_client::client::{Client, ClientError};
use sayri_protocol::event::AnyEvent;
use sayri_protocol::params::{InterruptParams, StatusParams};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

/// Serves one connection: the `ready` greeting, then for the first request the `lines`, each
/// with `ID` replaced by the request's id.
fn stand_in(lines: Vec<String>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("daemon.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (rd, mut wr) = stream.into_split();
        wr.write_all(
            b"{\"event\":\"ready\",\"info\":{\"state\":\"idle\",\"agent\":\"default\"}}\n",
        )
        .await
        .unwrap();
        let mut request = String::new();
        BufReader::new(rd).read_line(&mut request).await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&request).unwrap();
        let id = v["id"].to_string();
        for line in lines {
            wr.write_all((line.replace("ID", &id) + "\n").as_bytes())
                .await
                .unwrap();
        }
        // Keep the connection open until the client is done.
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    (dir, socket)
}

#[tokio::test]
async fn a_reply_and_its_events_arrive_as_their_types() {
    let (_dir, socket) = stand_in(vec![
        r#"{"event":"busy","active":true}"#.into(),
        r#"{"event":"from_a_newer_daemon","x":1}"#.into(),
        r#"{"ok":true,"result":{"interrupted":true},"id":ID}"#.into(),
    ]);
    let mut c = Client::connect(&socket, Duration::from_secs(5))
        .await
        .unwrap();
    let status = c.ready_status().unwrap();
    assert_eq!(
        (status.state.as_str(), status.agent.as_str()),
        ("idle", "default")
    );
    let mut seen = Vec::new();
    let reply = c
        .call_with(&InterruptParams {}, Duration::from_secs(5), |e| {
            seen.push(e.clone())
        })
        .await
        .unwrap();
    assert!(reply.interrupted);
    assert!(matches!(seen[0], AnyEvent::Busy(b) if b.active), "{seen:?}");
    assert!(matches!(&seen[1], AnyEvent::Unknown(f) if f.event == "from_a_newer_daemon"));
}

#[tokio::test]
async fn a_reply_that_is_not_its_type_names_the_command_and_the_member() {
    let (_dir, socket) = stand_in(vec![
        r#"{"ok":true,"result":{"interrupted":"yes"},"id":ID}"#.into(),
    ]);
    let mut c = Client::connect(&socket, Duration::from_secs(5))
        .await
        .unwrap();
    let e = c.request_with(&InterruptParams {}).await.unwrap_err();
    let ClientError::Reply(r) = &e else {
        panic!("{e}")
    };
    assert_eq!(r.cmd, "interrupt");
    let text = e.to_string();
    assert!(
        text.contains("interrupted") && text.contains("update both"),
        "{text}"
    );
}

#[tokio::test]
async fn an_event_that_is_not_its_type_gives_the_call_up() {
    let (_dir, socket) = stand_in(vec![
        r#"{"event":"busy","active":"very"}"#.into(),
        r#"{"ok":true,"result":{"interrupted":false},"id":ID}"#.into(),
    ]);
    let mut c = Client::connect(&socket, Duration::from_secs(5))
        .await
        .unwrap();
    let e = c.request_with(&InterruptParams {}).await.unwrap_err();
    let ClientError::Event(ev) = &e else {
        panic!("{e}")
    };
    assert_eq!(ev.event, "busy");
    assert!(e.to_string().contains("update both"), "{e}");
}

#[tokio::test]
async fn a_greeting_that_is_not_a_status_is_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("daemon.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        stream
            .write_all(b"{\"event\":\"ready\",\"info\":{\"busy\":\"no\"}}\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let c = Client::connect(&socket, Duration::from_secs(5))
        .await
        .unwrap();
    let e = c.ready_status().unwrap_err();
    assert_eq!(e.cmd, <StatusParams as sayri_protocol::Params>::CMD);
    assert!(e.to_string().contains("busy"), "{e}");
}
