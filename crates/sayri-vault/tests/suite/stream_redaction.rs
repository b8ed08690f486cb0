//! The streaming redactor: any chunking gives the one-shot result and never leaks 8 characters.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use proptest::prelude::*;
use sayri_vault::SecretRedactor;
use zeroize::Zeroizing;

use super::common::{TOKEN, assert_no_8char_piece, lower_escapes};

const OTHER: &str = "pw-Ωmega-Zx81 kq";

fn redactor() -> SecretRedactor {
    SecretRedactor::new(vec![
        ("API_TOKEN".into(), Zeroizing::new(TOKEN.into())),
        ("OTHER".into(), Zeroizing::new(OTHER.into())),
    ])
}

/// Multi-line dumps of the secrets printed by the real tools (`xxd`, `hexdump -C`, `od -c`,
/// `od -x`), run once.
fn dumps() -> &'static [String] {
    static DUMPS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    DUMPS.get_or_init(|| {
        let mut out = Vec::new();
        for (tool, text) in [
            ("xxd", format!("x={TOKEN}")),
            ("hexdump -C", TOKEN.to_string()),
            ("od -c", format!("ab {OTHER}")),
            ("od -x", format!("k{TOKEN}")),
        ] {
            let o = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s \"$T\" | {tool}"))
                .env("T", text)
                .output()
                .unwrap();
            // A dump starts at the start of a line.
            out.push(format!("\n{}", String::from_utf8(o.stdout).unwrap()));
        }
        out
    })
}

/// Text pieces: noise, and the secrets in the forms the redactor covers.
fn piece() -> impl Strategy<Value = String> {
    let folded = |w: usize, eol: &str| {
        TOKEN
            .as_bytes()
            .chunks(w)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect::<Vec<_>>()
            .join(eol)
    };
    prop_oneof![
        "[a-z0-9 %\\\\+/=s\\n\\r-]{0,12}",
        Just(TOKEN.to_string()),
        Just(OTHER.to_string()),
        Just(STANDARD.encode(TOKEN)),
        Just(STANDARD.encode(format!("ab{TOKEN}\n"))),
        Just(hex::encode(TOKEN)),
        Just(hex::encode_upper(OTHER)),
        Just(utf8_percent_encode(TOKEN, NON_ALPHANUMERIC).to_string()),
        Just(lower_escapes(
            &utf8_percent_encode(OTHER, NON_ALPHANUMERIC).to_string()
        )),
        Just(serde_json::to_string(TOKEN).unwrap().replace('/', "\\/")),
        Just(folded(8, "\n")),
        Just(folded(5, "\r\n")),
        // A line break after fewer than 4 bytes of a secret: the stream must not hold the line,
        // and must still catch the rest through its look-behind.
        Just(format!("s\n{}", &TOKEN[1..])),
        Just(format!("sy-\r\n{}", &TOKEN[3..])),
        (0..dumps().len()).prop_map(|i| dumps()[i].clone()),
    ]
}

fn chunked(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| c % (text.len() + 1))
        .filter(|c| text.is_char_boundary(*c))
        .collect();
    points.sort();
    points.dedup();
    let mut out = Vec::new();
    let mut last = 0;
    for p in points {
        out.push(text[last..p].to_string());
        last = p;
    }
    out.push(text[last..].to_string());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_equals_one_shot_and_leaks_nothing(
        pieces in prop::collection::vec(piece(), 1..8),
        cuts in prop::collection::vec(0usize..4096, 0..12),
    ) {
        let text: String = pieces.concat();
        let r = redactor();
        let one_shot = r.redact(&text);
        let mut s = r.stream();
        let mut streamed = String::new();
        for c in chunked(&text, &cuts) {
            let out = s.push(&c);
            // Nothing emitted so far may carry a piece of a secret.
            streamed.push_str(&out);
            assert_no_8char_piece(&streamed, TOKEN);
        }
        streamed.push_str(&s.finish());
        prop_assert_eq!(&streamed, &one_shot);
        assert_no_8char_piece(&one_shot, TOKEN);
        assert_no_8char_piece(&one_shot, OTHER);
    }

    #[test]
    fn text_without_secrets_is_delayed_by_at_most_one_line(
        lines in prop::collection::vec("[a-z ]{0,20}\n", 1..10),
    ) {
        // A whole line that could be a line of a hex dump (` aa  p`: a byte and a text column)
        // may be held until the next line shows whether the dump goes on; nothing else is held,
        // and nothing is changed.
        let r = redactor();
        let mut s = r.stream();
        let mut emitted = String::new();
        for (i, l) in lines.iter().enumerate() {
            emitted.push_str(&s.push(l));
            let before_this_line: String = lines[..i].concat();
            prop_assert!(
                emitted.starts_with(&before_this_line) && emitted.len() >= before_this_line.len(),
                "more than one line held: {:?} after {:?}", emitted, &lines[..=i]
            );
        }
        emitted.push_str(&s.finish());
        prop_assert_eq!(emitted, lines.concat());
    }

    #[test]
    fn prose_lines_are_not_delayed(
        lines in prop::collection::vec("[a-z]{2,12}( [a-z]{2,12}){0,4}\n", 1..10),
    ) {
        // Lines that start with a letter outside a-f cannot be dump lines.
        let r = redactor();
        let mut s = r.stream();
        for l in &lines {
            let l = format!("x{l}");
            prop_assert_eq!(s.push(&l), l.clone());
        }
        prop_assert_eq!(s.finish(), "");
    }
}

#[test]
fn a_short_start_before_a_line_break_goes_out_at_once_and_the_rest_is_caught() {
    let r = redactor();
    let mut s = r.stream();
    assert_eq!(s.push("value: sy\n"), "value: sy\n");
    let rest = s.push(&TOKEN[2..]);
    let tail = s.finish();
    assert_eq!(
        format!("value: sy\n{rest}{tail}"),
        r.redact(&format!("value: sy\n{}", &TOKEN[2..]))
    );
    assert_eq!(format!("{rest}{tail}"), "$SECRET:API_TOKEN");
}

#[test]
fn byte_by_byte_stream_of_every_form() {
    let r = redactor();
    let forms = [
        TOKEN.to_string(),
        STANDARD.encode(TOKEN),
        hex::encode(TOKEN),
        utf8_percent_encode(TOKEN, NON_ALPHANUMERIC).to_string(),
        serde_json::to_string(TOKEN).unwrap(),
    ];
    for f in forms {
        let text = format!("out: {f}\nend\n");
        let mut s = r.stream();
        let mut out = String::new();
        for ch in text.chars() {
            out.push_str(&s.push(&ch.to_string()));
            assert_no_8char_piece(&out, TOKEN);
        }
        out.push_str(&s.finish());
        assert_eq!(out, r.redact(&text));
        assert!(out.contains("$SECRET:API_TOKEN"), "{out}");
    }
}

#[test]
fn shared_redactor_swaps_secrets_for_every_holder() {
    let shared = sayri_vault::SharedRedactor::default();
    let port: std::sync::Arc<dyn sayri_core::ports::Redactor> = std::sync::Arc::new(shared.clone());
    assert_eq!(port.redact(TOKEN), TOKEN);
    shared.replace(redactor());
    assert_eq!(port.redact(TOKEN), "$SECRET:API_TOKEN");
}
