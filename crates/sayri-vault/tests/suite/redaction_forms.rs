//! Every encoded form of a secret is redacted: plain, base64 (both alphabets, padded or not, at each
//! byte offset inside a longer encoding, line-wrapped), hex (both cases), percent-encoded (any subset,
//! either digit case, `+` for space), JSON-escaped, and split across lines.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use sayri_vault::SecretRedactor;
use zeroize::Zeroizing;

use super::common::{TOKEN, assert_no_8char_piece, lower_escapes};

fn r() -> SecretRedactor {
    SecretRedactor::new(vec![("API_TOKEN".into(), Zeroizing::new(TOKEN.into()))])
}

/// Redacts `text` and checks no 8-byte window of `encoded` (the form the text carries) survives.
fn check(text: &str, encoded: &str) -> String {
    let red = r().redact(text);
    assert!(
        red.contains("$SECRET:API_TOKEN"),
        "no marker in {red:?} (from {text:?})"
    );
    let flat: String = red.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    let bytes = encoded.as_bytes();
    for w in bytes.windows(8.min(bytes.len())) {
        let piece = String::from_utf8_lossy(w);
        assert!(
            !flat.contains(&*piece),
            "{piece:?} of {encoded:?} leaked in {red:?}"
        );
    }
    assert_no_8char_piece(&red, TOKEN);
    red
}

#[test]
fn plain_and_surrounding_text_is_kept() {
    assert_eq!(
        r().redact(&format!("a {TOKEN} b {TOKEN}")),
        "a $SECRET:API_TOKEN b $SECRET:API_TOKEN"
    );
    assert_eq!(r().redact("nothing here"), "nothing here");
}

#[test]
fn base64_every_alphabet_padding_and_offset() {
    let engines = [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD];
    for engine in engines {
        // Alone, with a trailing newline (as `echo $X | base64`), and at offsets 0..3 inside a stream.
        let alone = engine.encode(TOKEN);
        assert_eq!(r().redact(&alone), "$SECRET:API_TOKEN", "{alone}");
        let nl = engine.encode(format!("{TOKEN}\n"));
        check(&nl, &alone[..alone.len() - 4]);
        for prefix in ["", "x", "xy", "xyz", "Bearer "] {
            for suffix in ["", "!", "!!", " trailing text"] {
                let enc = engine.encode(format!("{prefix}{TOKEN}{suffix}"));
                check(&format!("data: {enc}\n"), &engine.encode(TOKEN)[4..28]);
            }
        }
    }
}

#[test]
fn base64_wrapped_at_76_columns_like_base64_1() {
    let long = format!("{TOKEN}{TOKEN}{TOKEN}{}", "z".repeat(40));
    let enc = STANDARD.encode(&long);
    let wrapped: Vec<&str> = enc
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let text = wrapped.join("\n");
    let red = r().redact(&text);
    assert!(red.matches("$SECRET:API_TOKEN").count() >= 3, "{red}");
}

#[test]
fn hex_lower_and_upper() {
    let lower = hex::encode(TOKEN);
    let upper = hex::encode_upper(TOKEN);
    assert_eq!(r().redact(&lower), "$SECRET:API_TOKEN");
    assert_eq!(r().redact(&format!("0x{upper};")), "0x$SECRET:API_TOKEN;");
    // xxd -p style: hex folded at 60 columns.
    let folded: Vec<String> = lower
        .as_bytes()
        .chunks(60)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    check(&folded.join("\n"), &lower);
}

#[test]
fn percent_encoding_any_subset_either_case() {
    // Every character encoded; only reserved ones; form encoding; lower-case hex digits.
    const RESERVED: &AsciiSet = &CONTROLS.add(b'~').add(b'+').add(b'/').add(b' ');
    let all = utf8_percent_encode(TOKEN, NON_ALPHANUMERIC).to_string();
    let some = utf8_percent_encode(TOKEN, RESERVED).to_string();
    assert!(all.contains("%2B") && some.contains("%7E"));
    for enc in [
        all.clone(),
        some.clone(),
        lower_escapes(&all),
        lower_escapes(&some),
    ] {
        let url = format!("https://ci:{enc}@127.0.0.1:9/x.git?token={enc}&x=1");
        let red = check(&url, &enc);
        assert_eq!(
            red,
            "https://ci:$SECRET:API_TOKEN@127.0.0.1:9/x.git?token=$SECRET:API_TOKEN&x=1"
        );
    }
    // One character at a time, each alone encoded.
    for i in 0..TOKEN.len() {
        let one = format!(
            "{}{}{}",
            &TOKEN[..i],
            utf8_percent_encode(&TOKEN[i..=i], NON_ALPHANUMERIC),
            &TOKEN[i + 1..]
        );
        assert_eq!(r().redact(&one), "$SECRET:API_TOKEN", "{one}");
    }
}

#[test]
fn form_encoding_plus_for_space() {
    let pass = "correct horse battery+staple";
    let r = SecretRedactor::new(vec![("PASS".into(), Zeroizing::new(pass.into()))]);
    let form = "user=a&pass=correct+horse+battery%2Bstaple&x=1";
    assert_eq!(r.redact(form), "user=a&pass=$SECRET:PASS&x=1");
}

#[test]
fn json_escaped_forms() {
    let as_json = serde_json::to_string(TOKEN).unwrap();
    assert_eq!(
        r().redact(&format!("{{\"t\":{as_json}}}")),
        "{\"t\":\"$SECRET:API_TOKEN\"}"
    );
    // `/` escaped as `\/` and characters as \uXXXX, in any mix.
    let slashed = TOKEN.replace('/', "\\/");
    check(&format!("{{\"t\":\"{slashed}\"}}"), &slashed);
    let unicode: String = TOKEN
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    check(&format!("{{\"t\":\"{unicode}\"}}"), &unicode);
    let mixed: String = TOKEN
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 3 == 0 {
                format!("\\u{:04X}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    check(&mixed, &mixed);
    // A multi-line secret escaped into JSON (and a non-BMP character as a surrogate pair).
    let pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END KEY----- \u{1F511}";
    let r = SecretRedactor::new(vec![("PEM".into(), Zeroizing::new(pem.into()))]);
    let json = serde_json::to_string(pem).unwrap();
    assert_eq!(r.redact(&json), "\"$SECRET:PEM\"");
    let ascii_json = json.replace('\u{1F511}', "\\ud83d\\udd11");
    assert_eq!(r.redact(&ascii_json), "\"$SECRET:PEM\"");
}

#[test]
fn split_across_lines_and_crlf() {
    for width in [4usize, 5, 8, 13] {
        for eol in ["\n", "\r\n", "\r"] {
            let lines: Vec<String> = TOKEN
                .as_bytes()
                .chunks(width)
                .map(|c| String::from_utf8(c.to_vec()).unwrap())
                .collect();
            let text = format!("before\n{}{eol}after", lines.join(eol));
            let red = r().redact(&text);
            assert_no_8char_piece(&red, TOKEN);
            assert_eq!(red, format!("before\n$SECRET:API_TOKEN{eol}after"));
        }
    }
}

#[test]
fn several_secrets_and_extra_values() {
    let r = SecretRedactor::new(vec![
        ("A_KEY".into(), Zeroizing::new("alpha-secret-1".into())),
        ("B_KEY".into(), Zeroizing::new("bravo-secret-2".into())),
        ("TINY".into(), Zeroizing::new("abc".into())),
    ])
    .with_extra("PROVIDER_API_KEY", "sk-local-7Hq2Zr9Wm4Xa1Pb6");
    assert_eq!(r.keys(), ["A_KEY", "B_KEY", "PROVIDER_API_KEY"]);
    let red = r.redact("alpha-secret-1 bravo-secret-2 abc sk-local-7Hq2Zr9Wm4Xa1Pb6");
    assert_eq!(
        red,
        "$SECRET:A_KEY $SECRET:B_KEY abc $SECRET:PROVIDER_API_KEY"
    );
    assert!(SecretRedactor::default().is_empty());
    assert_eq!(SecretRedactor::default().redact("x y"), "x y");
}

#[test]
fn a_text_cut_inside_a_secret_loses_the_cut_start_too() {
    // A title or intent cut to a fixed length may end inside a secret: the start that is left
    // (4 characters or more) cannot be told by `redact`, so `redact_cut` replaces it.
    let cut = format!("deploy with {}", &TOKEN[..10]);
    assert_eq!(r().redact(&cut), cut, "redact alone cannot know");
    assert_eq!(r().redact_cut(&cut), "deploy with $SECRET:API_TOKEN");
    // Whole secrets are redacted as usual; a start shorter than 4 characters stays.
    assert_eq!(
        r().redact_cut(&format!("{TOKEN} and {}", &TOKEN[..3])),
        format!("$SECRET:API_TOKEN and {}", &TOKEN[..3])
    );
    assert_eq!(r().redact_cut("nothing here"), "nothing here");
}

#[test]
fn a_text_whose_start_was_cut_inside_a_secret_loses_the_cut_end_too() {
    // The tail of a long output may start inside a secret: the end that is left (4 characters
    // or more) is replaced by `redact_cut_start`; a shorter end stays.
    let cut = format!("{} was printed", &TOKEN[6..]);
    assert_eq!(r().redact(&cut), cut, "redact alone cannot know");
    assert_eq!(r().redact_cut_start(&cut), "$SECRET:API_TOKEN was printed");
    let short = &TOKEN[TOKEN.len() - 3..];
    assert_eq!(
        r().redact_cut_start(&format!("{short} and {TOKEN}")),
        format!("{short} and $SECRET:API_TOKEN")
    );
    assert_eq!(r().redact_cut_start("nothing here"), "nothing here");
}
