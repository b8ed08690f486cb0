//! Model text cannot drive the terminal: control sequences in the answer or in a command are
//! neutralised before `sayri ask` prints them.

use super::support::*;

/// A hostile model answer: terminal control sequences in the prose (clipboard write via OSC 52,
/// clear screen, cursor up + erase line) and in a command (`\r` and erase-line hiding what runs).
fn hostile_replies() -> Vec<sayri_testkit::Reply> {
    use sayri_testkit::{Reply, sse};
    let first = [
        "Sure.\u{1b}]52;c;cm0gLXJmIH4K\u{7}\u{1b}[2J",
        "\n```bash\nprintf 'x\\033[2K' ; echo shown\r\u{1b}[2Kecho innocent\n```\n",
    ];
    let second = ["Done.\u{1b}[1A\u{1b}[2K\u{9b}31m all good\r"];
    vec![
        Reply::sse(sse::content_stream(&first)),
        Reply::sse(sse::content_stream(&second)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_cannot_drive_the_terminal_of_sayri_ask() {
    let server = sayri_testkit::FakeLlm::start(sayri_testkit::Script::queue(hostile_replies()))
        .await
        .unwrap();
    let env = Env::new();
    let _d = env.start_daemon();
    for (k, v) in [
        ("provider.base_url", server.base_url()),
        ("provider.model", "fake-model".to_string()),
    ] {
        let o = env.run(&["config", "set", k, &v, "--no-start"]);
        assert!(o.status.success(), "config set {k}: {}", stderr(&o));
    }
    let out = tokio::task::spawn_blocking(move || {
        let o = env.run(&["ask", "hello", "--no-start", "--timeout", "20"]);
        (o, env)
    })
    .await
    .unwrap();
    let (out, env) = out;
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    let text = String::from_utf8_lossy(&all);
    assert!(
        text.contains("all good"),
        "the answer was printed: {text:?}"
    );
    assert!(
        text.contains("echo innocent"),
        "the command was shown: {text:?}"
    );
    for (bad, what) in [
        ('\u{1b}', "ESC"),
        ('\u{7}', "BEL"),
        ('\u{9b}', "CSI"),
        ('\r', "carriage return"),
    ] {
        assert!(
            !text.contains(bad),
            "a raw {what} from the model reached the terminal: {text:?}"
        );
    }
    // The daemon stops before its directories go.
    drop(_d);
    drop(env);
}
