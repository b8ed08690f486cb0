//! Random values for settings (proptest strategies): what a careless or hostile client could
//! send as `config_set`'s `value`, or type after `sayri config set KEY`.
//!
//! The mix is weighted toward the edges of what each key accepts, so both refusals and
//! acceptances are common: JSON of every type (null, booleans, integers and fractions of any
//! size, strings, lists, objects), empty and huge strings (up to 300 000 characters), control
//! characters and unusual Unicode, near-URLs (wrong scheme, no host, port 0 or 99999, spaces,
//! queries), relative and absolute paths, regular expressions that do and do not compile,
//! header lines, language codes, and every choice word of the key table.

use proptest::prelude::*;
use sayri_core::domain::config::{Check, KEYS};
use serde_json::{Map, Value as Json};

/// Every word a `Check::Choice` of the key table accepts (so choices are hit, not only missed).
fn choice_words() -> Vec<&'static str> {
    let mut words = vec!["auto", "default", "desktop", "es", "es_ES", "base"];
    for spec in KEYS {
        if let Check::Choice(list) = spec.check {
            words.extend_from_slice(list);
        }
    }
    words
}

/// A string from one of the families in the module doc.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just(String::new()),
        3 => any::<String>(),
        3 => proptest::sample::select(choice_words()).prop_map(str::to_string),
        4 => "(https?|HTTP|ftp|file)://([a-z0-9.-]{0,12}|\\[::1\\])(:[0-9]{1,6})?(/[a-z0-9 ./]{0,8})?(\\?x=1|#f)?",
        3 => "/?[a-zA-Z0-9_./ -]{0,24}",
        2 => "[a-z0-9._-]{1,12}",
        1 => "[a-z]{2,3}(_[A-Z]{2})?",
        3 => "[()\\[\\]*.?+a-z<>/\\\\{},|^$]{0,14}",
        2 => "[A-Za-z -]{1,10}:[ -~]{0,16}",
        2 => "[a-z]{0,4}[\\x00-\\x1f\\x7f\\x{85}\\x{2028}][a-z]{0,4}",
        1 => (1_000usize..300_000).prop_map(|n| "a".repeat(n)),
        1 => (-100i64..2_000_000).prop_map(|n| n.to_string()),
    ]
}

/// A JSON number: integers around the table's ranges and beyond, fractions, huge values.
fn number() -> impl Strategy<Value = Json> {
    prop_oneof![
        3 => (-1_000i64..70_000).prop_map(Json::from),
        1 => any::<i64>().prop_map(Json::from),
        1 => any::<u64>().prop_map(Json::from),
        2 => (-5.0f64..5.0).prop_map(Json::from),
        1 => any::<f64>().prop_map(Json::from),
    ]
}

/// A JSON value that is not a container.
fn leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        1 => Just(Json::Null),
        2 => any::<bool>().prop_map(Json::Bool),
        4 => number(),
        8 => text().prop_map(Json::String),
    ]
}

/// Any JSON value, weighted as described in the module doc.
pub fn json_value() -> impl Strategy<Value = Json> {
    prop_oneof![
        10 => leaf(),
        5 => proptest::collection::vec(text().prop_map(Json::String), 0..6).prop_map(Json::Array),
        1 => proptest::collection::vec("/[a-z]{1,8}", 65..70)
            .prop_map(|v| Json::Array(v.into_iter().map(Json::String).collect())),
        2 => proptest::collection::vec(leaf(), 0..4).prop_map(Json::Array),
        1 => proptest::collection::btree_map("[a-z]{1,6}", leaf(), 0..3)
            .prop_map(|m| Json::Object(m.into_iter().collect::<Map<_, _>>())),
    ]
}

/// Values near what `check` accepts, taken from the check's own parameters (a range and a
/// little beyond, the choice words, URL-, path-, header- and pattern-like text), so that every
/// key is often stored and not only refused.
pub fn near(check: Check) -> BoxedStrategy<Json> {
    let strings = |s: BoxedStrategy<String>| s.prop_map(Json::String).boxed();
    let lists = |s: BoxedStrategy<String>| {
        proptest::collection::vec(s, 0..5)
            .prop_map(|v| Json::Array(v.into_iter().map(Json::String).collect()))
            .boxed()
    };
    match check {
        Check::Flag => any::<bool>().prop_map(Json::Bool).boxed(),
        Check::Int { min, max, .. } => (min.saturating_sub(2)..=max.saturating_add(2))
            .prop_map(Json::from)
            .boxed(),
        Check::IntOrZero { min, max, .. } => prop_oneof![
            1 => (-2i64..=2).prop_map(Json::from),
            3 => (min.saturating_sub(2)..=max.saturating_add(2)).prop_map(Json::from),
        ]
        .boxed(),
        Check::Float { min, max, .. } => (min - 0.5..=max + 0.5).prop_map(Json::from).boxed(),
        Check::Choice(words) => strings(
            proptest::sample::select(words)
                .prop_map(str::to_string)
                .boxed(),
        ),
        Check::HttpUrl => strings(
            "https?://[a-z0-9-]{1,10}(\\.[a-z]{2,4})?(:[0-9]{1,5})?(/[a-z0-9]{0,6}){0,2}".boxed(),
        ),
        Check::SecureUrl => strings(
            "|https?://(127\\.0\\.0\\.1|localhost|[a-z0-9-]{1,10}\\.[a-z]{2,4})(:[0-9]{1,5})?(/[a-z0-9.]{0,10}){0,2}"
                .boxed(),
        ),
        Check::Line { .. } | Check::Paragraph { .. } | Check::Credential { .. } => {
            strings("[A-Za-z0-9 ._:-]{0,20}".boxed())
        }
        Check::Name | Check::AgentId => strings("[a-z0-9._-]{1,12}".boxed()),
        Check::LocalModel => strings("|/[a-z]{1,8}\\.gguf|[A-Za-z0-9._-]{1,12}".boxed()),
        Check::Language => strings("auto|[a-z]{2,3}|[A-Z]{2}".boxed()),
        Check::Locale => strings("[a-z]{2}_[A-Z]{2}|[a-z]{2}-[a-z]{2}".boxed()),
        Check::Patterns => strings("[()\\[\\]*.?+a-z<>/]{0,10}(, ?[a-z<>/.*?]{1,8}){0,2}".boxed()),
        Check::Headers => lists("[A-Za-z-]{1,10}: [ -~]{0,16}".boxed()),
        Check::AbsolutePaths { .. } => lists("/?[a-z0-9_.-]{1,8}(/[a-z0-9_.-]{1,8}){0,2}".boxed()),
        Check::AgentIds => lists("[a-z0-9._/-]{0,10}".boxed()),
    }
}

/// The index of a key of [`KEYS`] together with a value for it: half the time [`near`] what
/// the key accepts, half the time [`json_value`].
pub fn key_and_value() -> impl Strategy<Value = (usize, Json)> {
    (0..KEYS.len()).prop_flat_map(|i| (Just(i), prop_oneof![near(KEYS[i].check), json_value()]))
}
