//! Text from outside — the model's answer while it streams, a command and its output, a
//! permission card, another client's words, a session title — is shown as text in the web
//! bubble and never becomes markup, script, a request or a live `javascript:`/`file:`/`data:`
//! link; also after a reload, when everything is drawn again from the stored session.
//!
//! In headless Chromium, with an observer installed before the page's own script: every added
//! element is recorded (no `script`, `img`, `iframe`, `svg`, `object`, `embed`, no `on…`
//! attribute may appear), every Content-Security-Policy violation is recorded (none may fire:
//! the policy is the second line of defence, not the first), and every network request is
//! recorded over the DevTools protocol (none may leave the bubble's own origin).
//! The hostile strings are the byte-exact fixture `fixtures/web/hostile-output.json`.

use super::permission_rig::{AGENT, is_title_request, last_message};
use super::scripted_turns::Model;
use super::support::{Env, RawClient};
use super::web_rig::*;
use chromiumoxide::Page;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

fn fixture() -> Value {
    serde_json::from_str(include_str!("../fixtures/web/hostile-output.json")).unwrap()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap().to_string()
}

/// What the scripted model says: the hostile answer (one SSE event per delta, 40 ms apart), a
/// bash block with the hostile tool step or the hostile file write, and the hostile title.
fn model(write_target: String) -> Model {
    let f = fixture();
    let deltas: Vec<String> = f["answer_deltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(text)
        .collect();
    let tool = text(&f["tool_step"]["command"]);
    let write = text(&f["permission_command"]).replace("/tmp/sy-test-48.txt", &write_target);
    let title = text(&f["session_title"]);
    Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title_request(&body) {
            return Reply::sse(sse::content_stream(&[&title]));
        }
        let last = last_message(&body);
        let bash = |c: &str| {
            Reply::sse(sse::content_stream(&[
                "Running it.\n```bash\n",
                c,
                "\n```\n",
            ]))
        };
        if last.contains("[Command") {
            Reply::sse(sse::content_stream(&["Finished."]))
        } else if last.contains("summarise my notes") {
            let parts: Vec<&str> = deltas.iter().map(String::as_str).collect();
            Reply::sse(sse::content_stream(&parts))
                .with_event_writes()
                .with_write_delay(Duration::from_millis(40))
        } else if last.contains("show the tool step") {
            bash(&tool)
        } else if last.contains("write the file") {
            bash(&write)
        } else {
            Reply::sse(sse::content_stream(&["Noted."]))
        }
    }))
}

/// `sayri.toml` for the model and agent `perm` at level 3 asking before every command.
fn setup(env: &Env, model: &Model) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
             [permissions]\nask_timeout = 120\npolicy_files = []\n\n\
             [agent]\ndefault_agent = \"{AGENT}\"\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    let profile = json!({
        "id": AGENT,
        "name": "Hostile output tester",
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "ask_before_run": true,
            "timeout_seconds": 10,
            "blocked_binaries": [],
            "permission_rules": [{"action": "shell", "resource": "*", "effect": "ask"}]
        }
    });
    std::fs::write(
        config.join("agents").join(format!("{AGENT}.json")),
        serde_json::to_string_pretty(&profile).unwrap(),
    )
    .unwrap();
}

/// Installed in every document before the page's script: records added elements of the kinds
/// markup would create, `on…` attributes, and Content-Security-Policy violations.
const OBSERVER: &str = r#"
(() => {
  window.__sy_added = [];
  window.__sy_csp = [];
  const kinds = new Set(['SCRIPT', 'IMG', 'IFRAME', 'SVG', 'OBJECT', 'EMBED']);
  const note = (n) => {
    if (n.nodeType !== 1) return;
    const tag = n.tagName.toUpperCase();
    const pageScript = tag === 'SCRIPT' && n.getAttribute('src') === '/app.js' && n.parentNode === document.head;
    if (kinds.has(tag) && !pageScript) window.__sy_added.push(n.outerHTML.slice(0, 200));
    for (const a of Array.from(n.attributes)) {
      if (a.name.toLowerCase().startsWith('on')) window.__sy_added.push('attribute ' + a.name + ' on ' + tag);
    }
    for (const c of Array.from(n.children)) note(c);
  };
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of Array.from(r.addedNodes)) note(n);
      if (r.type === 'attributes' && r.attributeName.toLowerCase().startsWith('on')) {
        window.__sy_added.push('attribute ' + r.attributeName + ' set');
      }
    }
  }).observe(document, { childList: true, subtree: true, attributes: true });
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__sy_csp.push(e.violatedDirective + ' ' + e.blockedURI);
  });
})();
"#;

/// Hovers, focuses and clicks every element inside `selector` (links to http(s) are only
/// looked at: following them would leave the page).
async fn poke_everything(page: &Page, selector: &str) {
    let script = format!(
        "(() => {{ let n = 0; for (const e of document.querySelectorAll({sel})) {{ \
            e.dispatchEvent(new MouseEvent('mouseover', {{ bubbles: true }})); \
            e.dispatchEvent(new MouseEvent('mouseenter')); \
            if (typeof e.focus === 'function') e.focus(); \
            const live = e.tagName === 'A' && /^https?:/i.test(e.getAttribute('href') || ''); \
            if (!live && typeof e.click === 'function') e.click(); \
            n++; }} return n; }})()",
        sel = js_str(&format!("{selector}, {selector} *"))
    );
    let n = js(page, &script).await;
    assert!(n.as_u64().unwrap_or(0) > 0, "nothing to poke in {selector}");
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Nothing ran, nothing was created from markup, the policy was never hit, and no request left
/// the bubble's origin.
async fn assert_inert(page: &Page, requests: &RequestLog, origin: &str, after: &str) {
    assert_eq!(
        js(page, "typeof window.__sy_pwned").await,
        json!("undefined"),
        "script ran ({after})"
    );
    assert_eq!(
        js(page, "window.__sy_added").await,
        json!([]),
        "markup became elements ({after})"
    );
    assert_eq!(
        js(page, "window.__sy_csp").await,
        json!([]),
        "the CSP had to stop something ({after})"
    );
    assert_eq!(
        requests.foreign(origin),
        Vec::<String>::new(),
        "requests left the bubble ({after})"
    );
}

/// The answer of part A, checked as the page shows it.
async fn assert_answer_is_text(page: &Page) {
    let answer = "document.querySelector('#transcript .msg-assistant')";
    let content = js(page, &format!("{answer}.textContent")).await;
    let content = content.as_str().unwrap_or_default().to_string();
    for literal in [
        "<img src=x onerror=",
        "<script>window.__sy_pwned",
        "<iframe srcdoc=",
        "<a href=\"https://docs.invalid/help\" onclick=",
        "javascript:window.__sy_pwned='jslink'",
        "file:///home/sy-test/.ssh/id_rsa",
        "data:text/html;base64,",
    ] {
        assert!(
            content.contains(literal),
            "{literal:?} not shown as text in {content:?}"
        );
    }
    let code = js(page, &format!("Array.from({answer}.querySelectorAll('code')).map(c => [c.parentElement.tagName, c.textContent])")).await;
    let code: Vec<(String, String)> = serde_json::from_value(code).unwrap();
    assert!(
        code.contains(&("P".into(), "<b>code</b>".into())),
        "{code:?}"
    );
    assert!(
        code.iter().any(|(parent, t)| parent == "PRE"
            && t.contains("<svg onload=\"window.__sy_pwned='svg'\"></svg>")),
        "{code:?}"
    );
    let links = js(page, &format!("Array.from({answer}.querySelectorAll('a')).map(a => [a.getAttribute('href'), a.textContent, a.rel])")).await;
    let links: Vec<(String, String, String)> = serde_json::from_value(links).unwrap();
    let targets: Vec<&str> = links.iter().map(|(h, _, _)| h.as_str()).collect();
    assert_eq!(
        targets,
        [
            "http://192.0.2.10/pixel.png?leak=1",
            "https://docs.invalid/guide"
        ],
        "{links:?}"
    );
    assert_eq!(
        links[0].1, "chart",
        "the image is a link labelled with its alt text"
    );
    for (_, _, rel) in &links {
        assert!(
            rel.contains("noopener") && rel.contains("noreferrer"),
            "{rel}"
        );
    }
}

/// Waits until `needle` is visible in an element matching `selector`.
async fn wait_text(page: &Page, selector: &str, needle: &str, what: &str) {
    wait_for(
        page,
        &format!(
            "Array.from(document.querySelectorAll({})).some(e => e.textContent.includes({}))",
            js_str(selector),
            js_str(needle)
        ),
        LONG,
        what,
    )
    .await;
}

async fn click_allow(page: &Page) {
    page.find_element("#cards .card button.allow")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(
        page,
        "document.querySelector('#cards .card') === null",
        LONG,
        "the card to close",
    )
    .await;
}

#[test]
fn hostile_text_from_the_model_commands_clients_and_titles_stays_text_in_the_browser() {
    let env = Env::new();
    let f = fixture();
    let written = env.dir.path().join("sy-test-48.txt");
    let model = model(written.display().to_string());
    setup(&env, &model);
    let _daemon = env.start_daemon();
    let web = env.start_web();
    let origin = format!("http://127.0.0.1:{}", web.port);
    let rt = runtime();
    let chrome = rt.run(Chrome::launch(&env, "hostile_output"));
    let (page, requests) = rt.run(chrome.tab(Some(OBSERVER)));
    rt.run(async {
        log_in(&page, &web).await;
        // The page's own headers: the second line of defence.
        let headers = js(&page, "fetch('/').then(r => [r.headers.get('content-security-policy'), r.headers.get('x-content-type-options'), r.headers.get('access-control-allow-origin')])").await;
        let csp = headers[0].as_str().unwrap_or_default();
        for part in ["default-src 'self'", "script-src 'self';", "img-src 'self'", "frame-src 'none'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"] {
            assert!(csp.contains(part), "{part} missing from {csp}");
        }
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");
        assert_eq!(headers[1], "nosniff");
        assert_eq!(headers[2], Value::Null, "no CORS header");

        // Part A: the streamed answer.
        type_message(&page, "summarise my notes").await;
        wait_text(&page, "#transcript .msg-assistant", "Inline ", "the whole answer").await;
        wait_for(&page, "document.getElementById('stop').hidden", LONG, "the turn to end").await;
        assert_inert(&page, &requests, &origin, "part A, while streaming").await;
        assert_answer_is_text(&page).await;
        poke_everything(&page, "#transcript .msg-assistant").await;
        assert_inert(&page, &requests, &origin, "part A").await;
        chrome.screenshot(&page, "a-answer").await;
    });

    rt.run(async {
        // B1: a command and its output.
        type_message(&page, "show the tool step").await;
        wait_for(&page, "document.querySelector('#cards .card') !== null", LONG, "the tool step's card").await;
        click_allow(&page).await;
        let hostile = "<img src=x onerror=window.__sy_pwned=\"tool\">";
        wait_text(&page, "#transcript .msg-tool .tool-output", hostile, "the tool output").await;
        wait_text(&page, "#transcript .msg-tool summary code", hostile, "the tool command").await;
        poke_everything(&page, "#transcript .msg-tool").await;
        assert_inert(&page, &requests, &origin, "B1").await;

        // B2: the permission card; nothing is written before Allow.
        type_message(&page, "write the file").await;
        wait_for(&page, "document.querySelector('#cards .card') !== null", LONG, "the write's card").await;
        let resource = js(&page, "document.querySelector('#cards .card .resource').textContent").await;
        let expected = text(&f["permission_command"]).replace("/tmp/sy-test-48.txt", &written.display().to_string());
        assert_eq!(resource, Value::from(expected), "the card shows the command as text");
        chrome.screenshot(&page, "b2-card").await;
        poke_everything(&page, "#cards .card .resource").await;
        assert!(!written.exists(), "nothing is written before the user allows it");
        assert_inert(&page, &requests, &origin, "B2").await;
        click_allow(&page).await;
        wait_for(&page, "document.getElementById('stop').hidden && document.querySelectorAll('#transcript .msg-tool').length === 2", LONG, "the write to finish").await;
    });
    assert!(written.exists(), "the allowed command ran");

    // B3: what another client said (a transcript line).
    let user_text = text(&f["user_text"]);
    let mut other = RawClient::connect(&env.socket());
    let sent = other.call("talk", json!({"text": user_text}), 1);
    assert_eq!(sent["ok"], true, "{sent}");
    rt.run(async {
        wait_text(
            &page,
            "#transcript .msg-user",
            &user_text,
            "the other client's words",
        )
        .await;
        wait_for(
            &page,
            "document.getElementById('stop').hidden",
            LONG,
            "the turn to end",
        )
        .await;
    });
    // B4: the session title the model chose, as the daemon stored it (titles are shortened and
    // lose markdown emphasis such as `__`, but the HTML stays in them as text).
    let listed = other.call("sessions_list", json!({}), 2);
    let title = text(&listed["result"][0]["title"]);
    assert!(
        title.starts_with("<img src=x onerror=window."),
        "the stored title is the model's: {title:?}"
    );
    rt.run(async {
        wait_text(
            &page,
            "#sessions button",
            &title,
            "the hostile title in the session list",
        )
        .await;
        poke_everything(&page, "#transcript .msg-user").await;
        assert_inert(&page, &requests, &origin, "B3 and B4").await;
        chrome.screenshot(&page, "b-all").await;

        // Part C: reload; the page draws everything again from the stored session.
        page.reload().await.unwrap();
        wait_for(
            &page,
            "document.getElementById('conn').textContent.startsWith('Connected')",
            LONG,
            "the reloaded page to connect",
        )
        .await;
        wait_text(
            &page,
            "#transcript .msg-assistant",
            "Inline ",
            "the stored answer",
        )
        .await;
        wait_text(
            &page,
            "#transcript .msg-user",
            &user_text,
            "the stored user line",
        )
        .await;
        wait_text(&page, "#sessions button", &title, "the stored title").await;
        assert_answer_is_text(&page).await;
        for part in ["#transcript", "#sessions"] {
            poke_everything(&page, part).await;
        }
        assert_inert(&page, &requests, &origin, "part C").await;
        chrome.screenshot(&page, "c-reloaded").await;
    });
    rt.run(chrome.close());
}
