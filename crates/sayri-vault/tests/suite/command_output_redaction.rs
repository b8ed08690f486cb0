//! Secrets in real commands' output, at the redactor level: echoed in error messages (a Python
//! exception, `git`, a provider's HTTP error) and split across lines or chunks (`fold`, CRLF, two
//! writes a second apart).

use super::common::{TOKEN, assert_no_8char_piece};
use sayri_vault::SecretRedactor;
use zeroize::Zeroizing;

const PROVIDER_KEY: &str = "sk-local-7Hq2Zr9Wm4Xa1Pb6";

fn redactor(name: &str) -> SecretRedactor {
    SecretRedactor::new(vec![(name.to_string(), Zeroizing::new(TOKEN.to_string()))])
}

fn run_sh(script: &str, token: &str) -> (String, String, i32) {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("DEPLOY_TOKEN", token)
        .env("API_TOKEN", token)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn command_errors_are_redacted_in_stdout_and_stderr() {
    let r = redactor("DEPLOY_TOKEN");
    let scripts = [
        r#"python3 -c 'import os; raise RuntimeError("auth failed for token " + os.environ["DEPLOY_TOKEN"])'"#,
        r#"echo "using $DEPLOY_TOKEN" ; echo "error: bad token $DEPLOY_TOKEN" >&2 ; exit 3"#,
        r#"git ls-remote "https://ci:${DEPLOY_TOKEN}@127.0.0.1:9/x.git" 2>&1 | head -3 ; echo "url was https://ci:${DEPLOY_TOKEN}@127.0.0.1:9/x.git""#,
    ];
    let mut codes = Vec::new();
    for s in scripts {
        let (out, err, code) = run_sh(s, TOKEN);
        codes.push(code);
        let both = format!("{out}{err}");
        assert!(
            both.contains(TOKEN),
            "the command must really print the token: {both:?}"
        );
        let red_out = r.redact(&out);
        let red_err = r.redact(&err);
        for red in [&red_out, &red_err] {
            assert!(!red.contains(TOKEN));
            assert_no_8char_piece(red, TOKEN);
        }
        assert!(
            format!("{red_out}{red_err}").contains("$SECRET:DEPLOY_TOKEN"),
            "{red_out:?} {red_err:?}"
        );
    }
    assert_eq!(codes[0], 1);
    assert_eq!(codes[1], 3);
}

#[test]
fn provider_key_in_an_http_error_is_redacted_via_with_extra() {
    let r = redactor("DEPLOY_TOKEN").with_extra("PROVIDER_API_KEY", PROVIDER_KEY);
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-local-7Hq2Zr9Wm4Xa1Pb6","type":"invalid_request_error"}}"#;
    let error_text = format!("HTTP 401: {body}");
    let red = r.redact(&error_text);
    assert!(red.contains("$SECRET:PROVIDER_API_KEY"), "{red}");
    assert_no_8char_piece(&red, PROVIDER_KEY);
    // An HTTP client that serialised the Authorization header into an exception.
    let header = format!("headers={{'Authorization': 'Bearer {PROVIDER_KEY}'}}");
    assert_eq!(
        r.redact(&header),
        "headers={'Authorization': 'Bearer $SECRET:PROVIDER_API_KEY'}"
    );
    // Through the core port, as the engine and store will call it.
    let port: &dyn sayri_core::ports::Redactor = &r;
    assert!(!port.redact(&error_text).contains(PROVIDER_KEY));
}

#[test]
fn fold_and_crlf_outputs_collapse_into_one_marker() {
    let r = redactor("API_TOKEN");
    let (b, _, _) = run_sh(r#"printf '%s' "$API_TOKEN" | fold -w 8; echo"#, TOKEN);
    assert_eq!(b, "sy-cS~ke\n4R1J+dBi\n2ewQr8t4\n/lC4\n");
    assert_eq!(r.redact(&b), "$SECRET:API_TOKEN\n");
    let (c, _, _) = run_sh(
        r#"printf '%s' "$API_TOKEN" | fold -w 8 | sed 's/$/\r/'"#,
        TOKEN,
    );
    assert!(c.contains("\r\n"));
    let red = r.redact(&c);
    assert_no_8char_piece(&red, TOKEN);
    assert!(red.starts_with("$SECRET:API_TOKEN"), "{red:?}");
    // Through a stream, one line per chunk, as `fold` output arrives.
    let mut s = r.stream();
    let mut streamed = String::new();
    for line in b.split_inclusive('\n') {
        streamed.push_str(&s.push(line));
    }
    streamed.push_str(&s.finish());
    assert_eq!(streamed, "$SECRET:API_TOKEN\n");
}

#[test]
fn two_writes_a_second_apart_hold_back_only_the_secret_prefix() {
    let r = redactor("API_TOKEN");
    let mut s = r.stream();
    // Command A's two writes: first 10 characters, then the rest and a newline.
    let first = s.push(&TOKEN[..10]);
    assert!(!first.contains("sy-cS~ke4R"));
    assert_eq!(first, "");
    let second = s.push(&format!("{}\n", &TOKEN[10..]));
    let rest = s.finish();
    assert_eq!(format!("{first}{second}{rest}"), "$SECRET:API_TOKEN\n");
    // Output whose end is not the start of any secret form is not delayed.
    let mut s = r.stream();
    assert_eq!(s.push("building 3 targets\n"), "building 3 targets\n");
    assert_eq!(s.push("done: 100\n"), "done: 100\n");
    assert_eq!(s.pending_len(), 0);
    assert_eq!(s.finish(), "");
}
