//! What a setting's value means beyond its type, and the one check that enforces it.
//!
//! Every row of the key table names a [`Check`]. Setting a value over IPC, from the command
//! line, reading it from `sayri.toml` and `sayri doctor` all run that same check, so a key
//! cannot be declared without one, and a check that does not fit the key's type is a compile
//! error (see [`Check::fits`]). The check also carries what a settings form needs to offer the
//! value (range, choices), so a schema can be derived from the same table.

use super::{ConfigValue, ValueType};
use crate::domain::profile::valid_agent_id;
use crate::domain::strip::{PatternError, check_patterns};
use crate::domain::text::cut_chars;

/// Longest URL accepted, in characters.
pub const MAX_URL_LEN: usize = 2048;
/// Most entries a list setting may hold.
pub const MAX_LIST_LEN: usize = 64;
/// Longest path accepted in a path list, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;
/// Longest `strip_patterns` value, in bytes.
pub const MAX_PATTERNS_LEN: usize = 4096;
/// Longest credential accepted, in bytes.
pub const MAX_CREDENTIAL_LEN: usize = 4096;
/// Longest name (`Check::Name`, agent ids), in characters.
pub const MAX_NAME_LEN: usize = 64;

/// What is wrong with a value of the right type, in words that never repeat a secret (the
/// caller adds the key and [`Check::expected`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueProblem {
    /// A value of another type than the check's.
    #[error("a value of the wrong type")]
    WrongType,
    /// A number outside the check's range.
    #[error("out of range")]
    OutOfRange,
    /// A word not among the choices.
    #[error("not one of the choices")]
    NotAChoice,
    /// Plain `http://` to another machine where only `https://` (or this machine) is allowed.
    #[error(
        "plain http:// is allowed only to this machine (127.0.0.1, ::1, localhost); use https://"
    )]
    PlainHttpElsewhere,
    /// Longer than this many characters.
    #[error("longer than {0} characters")]
    LongerThanChars(usize),
    /// Longer than this many bytes.
    #[error("longer than {0} bytes")]
    LongerThanBytes(usize),
    /// A control character other than a line break or tab.
    #[error("contains a control character")]
    ControlCharacter,
    /// A control character or a line break in a one-line value.
    #[error("contains a control character or a line break")]
    ControlOrLineBreak,
    /// A space or a control character in a URL.
    #[error("contains a space or a control character")]
    SpaceOrControl,
    /// A URL of another scheme.
    #[error("does not start with http:// or https://")]
    NotHttp,
    /// Text the URL parser rejects.
    #[error("not a URL: {0}")]
    NotAUrl(url::ParseError),
    /// A URL without a host.
    #[error("no host")]
    NoHost,
    /// A URL with port 0.
    #[error("port 0 is not a usable port")]
    PortZero,
    /// A base URL with a query or a fragment.
    #[error("a base URL cannot have a query (?…) or a fragment (#…)")]
    QueryOrFragment,
    /// An empty line where one is needed.
    #[error("empty")]
    Empty,
    /// A line with a space at either end.
    #[error("starts or ends with a space")]
    EdgeSpace,
    /// Not a name of letters, digits, `-`, `_` and `.`.
    #[error("not a valid name")]
    NotAName,
    /// Not a language code.
    #[error("not a language code")]
    NotALanguage,
    /// Not a `language_REGION` code.
    #[error("not a language_REGION code")]
    NotALocale,
    /// Not a valid agent id.
    #[error("not a valid agent id")]
    NotAnAgentId,
    /// A local model that is neither an absolute path nor a model name.
    #[error("neither an absolute path nor a model name (letters, digits, '-', '_', '.')")]
    NotAModel,
    /// A local model path without `.gguf`.
    #[error("a model file path must end in .gguf")]
    NotGguf,
    /// A key shorter than the redactor can hide.
    #[error("shorter than {0} characters, too short to be hidden from command output")]
    CredentialTooShort(usize),
    /// A key with a space or a byte an HTTP header cannot carry.
    #[error("contains a space or a character that cannot be sent in an HTTP header")]
    NotHeaderSafe,
    /// A list with more than this many entries.
    #[error("more than {0} entries")]
    TooManyEntries(usize),
    /// A header line without `:`.
    #[error("entry {entry} has no ':' between name and value")]
    HeaderWithoutColon {
        /// 1-based entry number.
        entry: usize,
    },
    /// A header name with a character outside RFC 9110's `tchar`.
    #[error("entry {entry}: the header name must be letters, digits and !#$%&'*+-.^_`|~")]
    HeaderName {
        /// 1-based entry number.
        entry: usize,
    },
    /// A header value that is not printable ASCII (the value is never shown: header values
    /// often carry credentials).
    #[error(
        "entry {entry} ({name}): the value must be printable ASCII (no line breaks or control characters)"
    )]
    HeaderValue {
        /// 1-based entry number.
        entry: usize,
        /// The header's name.
        name: String,
    },
    /// A path longer than [`MAX_PATH_LEN`] bytes.
    #[error("entry {entry} is longer than {MAX_PATH_LEN} bytes")]
    EntryTooLong {
        /// 1-based entry number.
        entry: usize,
    },
    /// A path with a control character.
    #[error("entry {entry} contains a control character")]
    EntryControl {
        /// 1-based entry number.
        entry: usize,
    },
    /// A relative path.
    #[error("entry {entry} ({shown:?}) is not an absolute path: it must start with '/'")]
    NotAbsolute {
        /// 1-based entry number.
        entry: usize,
        /// The path's first 80 characters.
        shown: String,
    },
    /// A `strip_patterns` entry that does not compile.
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

/// The meaning of a setting's value: what [`Check::validate`] enforces on top of the type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// `true` or `false` (boolean keys).
    Flag,
    /// An integer within `min..=max` (both included), counted in `unit` (e.g. `"pixels"`).
    Int {
        /// Smallest value accepted.
        min: i64,
        /// Largest value accepted.
        max: i64,
        /// What the number counts, for messages and forms; empty for a bare number.
        unit: &'static str,
    },
    /// `0`, which stands for `zero` (e.g. "ask the server"), or an integer within `min..=max`
    /// (both included), counted in `unit`.
    IntOrZero {
        /// Smallest value accepted besides 0.
        min: i64,
        /// Largest value accepted.
        max: i64,
        /// What the number counts, for messages and forms.
        unit: &'static str,
        /// What 0 means, for messages and forms.
        zero: &'static str,
    },
    /// A finite number within `min..=max` (both included), in `unit`.
    Float {
        /// Smallest value accepted.
        min: f64,
        /// Largest value accepted.
        max: f64,
        /// What the number measures; empty for a bare number.
        unit: &'static str,
    },
    /// Exactly one of the listed words.
    Choice(&'static [&'static str]),
    /// An `http://` or `https://` URL with a host, a valid port, no spaces, no query or
    /// fragment, at most [`MAX_URL_LEN`] characters.
    HttpUrl,
    /// `""` (none), or a URL as [`Check::HttpUrl`] that is `https://`, or `http://` only to
    /// this machine (`127.0.0.0/8`, `::1`, `localhost`): what is downloaded from it is
    /// installed, so it must not travel unencrypted over a network.
    SecureUrl,
    /// One line of text: no control characters, no leading or trailing space, at most `max`
    /// characters; empty only when `empty` is true.
    Line {
        /// Most characters.
        max: usize,
        /// Whether `""` is accepted.
        empty: bool,
    },
    /// Text that may span lines: no control characters other than newline and tab, at most
    /// `max` bytes.
    Paragraph {
        /// Most bytes.
        max: usize,
    },
    /// A name: ASCII letters, digits, `-`, `_` and `.`, not starting with `.`, 1 to
    /// [`MAX_NAME_LEN`] characters (model sizes, voices, UI ids).
    Name,
    /// A two- or three-letter lowercase language code (`en`, `es`), or `auto`.
    Language,
    /// A `language_REGION` code such as `es_ES`.
    Locale,
    /// An agent id (see [`valid_agent_id`]), at most [`MAX_NAME_LEN`] characters.
    AgentId,
    /// Regular expressions separated by commas or newlines; each must compile (see
    /// [`check_patterns`]); at most [`MAX_PATTERNS_LEN`] bytes.
    Patterns,
    /// A list of `Name: value` HTTP header lines (at most [`MAX_LIST_LEN`]): the name is an
    /// HTTP token, the value printable ASCII.
    Headers,
    /// A credential sent in an HTTP header: `min` to [`MAX_CREDENTIAL_LEN`] printable ASCII
    /// characters without spaces, or empty for none. A shorter one could not be told apart from
    /// ordinary text when secrets are redacted from command output.
    Credential {
        /// Fewest characters of a key that is set.
        min: usize,
    },
    /// A local chat model: `""` for none, an absolute path to a `.gguf` file (at most
    /// [`MAX_PATH_LEN`] bytes, no control characters), or the name of an installed model
    /// ([`Check::Name`] rules; with or without `.gguf`).
    LocalModel,
    /// A list of absolute paths (at most [`MAX_LIST_LEN`], each at most [`MAX_PATH_LEN`]
    /// bytes, no control characters); `example` is shown in messages.
    AbsolutePaths {
        /// An example path for this key.
        example: &'static str,
    },
    /// A list of agent ids (at most [`MAX_LIST_LEN`]), each as [`Check::AgentId`].
    AgentIds,
}

impl Check {
    /// Whether this check applies to values of type `ty` (the key table asserts it for every
    /// row at compile time).
    pub const fn fits(&self, ty: ValueType) -> bool {
        matches!(
            (self, ty),
            (Check::Flag, ValueType::Bool)
                | (Check::Int { .. } | Check::IntOrZero { .. }, ValueType::Int)
                | (Check::Float { .. }, ValueType::Float)
                | (
                    Check::Choice(_)
                        | Check::HttpUrl
                        | Check::SecureUrl
                        | Check::Line { .. }
                        | Check::Paragraph { .. }
                        | Check::Name
                        | Check::Language
                        | Check::Locale
                        | Check::AgentId
                        | Check::Patterns
                        | Check::Credential { .. }
                        | Check::LocalModel,
                    ValueType::Str
                )
                | (
                    Check::Headers | Check::AbsolutePaths { .. } | Check::AgentIds,
                    ValueType::StrList
                )
        )
    }

    /// What a value must be, as a phrase after "expected", e.g. `an integer from 80 to 400
    /// (pixels)` or `an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434/v1`.
    pub fn expected(&self) -> String {
        let unit = |u: &str| {
            if u.is_empty() {
                String::new()
            } else {
                format!(" ({u})")
            }
        };
        match self {
            Check::Flag => "true or false".into(),
            Check::Int { min, max, unit: u } => {
                format!("an integer from {min} to {max}{}", unit(u))
            }
            Check::IntOrZero {
                min,
                max,
                unit: u,
                zero,
            } => {
                format!("0 ({zero}) or an integer from {min} to {max}{}", unit(u))
            }
            Check::Float { min, max, unit: u } => {
                format!("a number from {min} to {max}{}", unit(u))
            }
            Check::Choice(words) => format!("one of {}", words.join(", ")),
            Check::HttpUrl => {
                "an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434/v1".into()
            }
            Check::SecureUrl => "\"\" (none), or an https:// URL (http:// only to 127.0.0.1, ::1 \
                or localhost), e.g. https://skills.example.org/index.json"
                .into(),
            Check::Line { max, empty: true } => {
                format!("one line of text of at most {max} characters (may be empty)")
            }
            Check::Line { max, empty: false } => {
                format!("one non-empty line of text of at most {max} characters")
            }
            Check::Paragraph { max } => format!("text of at most {max} bytes"),
            Check::Name => format!(
                "a name of letters, digits, '-', '_' and '.' (at most {MAX_NAME_LEN} characters)"
            ),
            Check::Language => {
                "a two- or three-letter language code such as en or es, or auto".into()
            }
            Check::Locale => "a language_REGION code such as es_ES or en_US".into(),
            Check::AgentId => format!(
                "an agent id of letters, digits, '-' and '_' (at most {MAX_NAME_LEN} characters)"
            ),
            Check::Patterns => "regular expressions separated by commas or newlines, e.g. \
                <think>.*?</think> (a pattern cannot contain a comma)"
                .into(),
            Check::Headers => format!(
                "a list of at most {MAX_LIST_LEN} \"Name: value\" HTTP header lines, e.g. [\"X-Title: Sayri\"]"
            ),
            Check::Credential { min } => format!(
                "a key of {min} to {MAX_CREDENTIAL_LEN} printable ASCII characters without spaces, or \"\" for none"
            ),
            Check::LocalModel => "\"\" (none), an absolute path to a .gguf file, or the name of \
                a model listed by `sayri models list`"
                .into(),
            Check::AgentIds => format!(
                "a list of at most {MAX_LIST_LEN} agent ids (letters, digits, '-' and '_'), e.g. [\"default\"]"
            ),
            Check::AbsolutePaths { example } => {
                format!("a list of at most {MAX_LIST_LEN} absolute paths, e.g. [\"{example}\"]")
            }
        }
    }

    /// Checks `value` (already of the right type).
    ///
    /// # Errors
    /// [`ValueProblem`]: what is wrong with it, in words that never repeat a secret (e.g.
    /// `no host`, `pattern "((((" does not compile: unclosed group`); the caller adds the key
    /// and [`Check::expected`].
    pub fn validate(&self, value: &ConfigValue) -> Result<(), ValueProblem> {
        match (self, value) {
            (Check::Flag, ConfigValue::Bool(_)) => Ok(()),
            (Check::Int { min, max, .. }, ConfigValue::Int(v)) => {
                in_range((min..=max).contains(&v))
            }
            (Check::IntOrZero { min, max, .. }, ConfigValue::Int(v)) => {
                in_range(*v == 0 || (min..=max).contains(&v))
            }
            (Check::Float { min, max, .. }, ConfigValue::Float(v)) => {
                in_range(v.is_finite() && (min..=max).contains(&v))
            }
            (Check::Choice(words), ConfigValue::Str(s)) => {
                if words.contains(&s.as_str()) {
                    Ok(())
                } else {
                    Err(ValueProblem::NotAChoice)
                }
            }
            (Check::HttpUrl, ConfigValue::Str(s)) => http_url(s),
            (Check::SecureUrl, ConfigValue::Str(s)) => secure_url(s),
            (Check::Line { max, empty }, ConfigValue::Str(s)) => line(s, *max, *empty),
            (Check::Paragraph { max }, ConfigValue::Str(s)) => paragraph(s, *max),
            (Check::Name, ConfigValue::Str(s)) => name(s),
            (Check::Language, ConfigValue::Str(s)) => language(s),
            (Check::Locale, ConfigValue::Str(s)) => locale(s),
            (Check::AgentId, ConfigValue::Str(s)) => {
                if valid_agent_id(s) && s.chars().count() <= MAX_NAME_LEN {
                    Ok(())
                } else {
                    Err(ValueProblem::NotAnAgentId)
                }
            }
            (Check::Patterns, ConfigValue::Str(s)) => {
                if s.len() > MAX_PATTERNS_LEN {
                    return Err(ValueProblem::LongerThanBytes(MAX_PATTERNS_LEN));
                }
                if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
                    return Err(ValueProblem::ControlCharacter);
                }
                Ok(check_patterns(s)?)
            }
            (Check::Credential { min }, ConfigValue::Str(s)) => credential(s, *min),
            (Check::LocalModel, ConfigValue::Str(s)) => local_model(s),
            (Check::Headers, ConfigValue::StrList(items)) => headers(items),
            (Check::AbsolutePaths { .. }, ConfigValue::StrList(items)) => absolute_paths(items),
            (Check::AgentIds, ConfigValue::StrList(items)) => agent_ids(items),
            _ => Err(ValueProblem::WrongType),
        }
    }
}

fn in_range(ok: bool) -> Result<(), ValueProblem> {
    if ok {
        Ok(())
    } else {
        Err(ValueProblem::OutOfRange)
    }
}

fn http_url(s: &str) -> Result<(), ValueProblem> {
    if s.chars().count() > MAX_URL_LEN {
        return Err(ValueProblem::LongerThanChars(MAX_URL_LEN));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ValueProblem::SpaceOrControl);
    }
    let lower = s.to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        return Err(ValueProblem::NotHttp);
    }
    let url = url::Url::parse(s).map_err(ValueProblem::NotAUrl)?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ValueProblem::NoHost);
    }
    if url.port() == Some(0) {
        return Err(ValueProblem::PortZero);
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ValueProblem::QueryOrFragment);
    }
    Ok(())
}

fn secure_url(s: &str) -> Result<(), ValueProblem> {
    if s.is_empty() {
        return Ok(());
    }
    http_url(s)?;
    let url = url::Url::parse(s).map_err(ValueProblem::NotAUrl)?;
    if url.scheme() == "https" || is_loopback(&url) {
        Ok(())
    } else {
        Err(ValueProblem::PlainHttpElsewhere)
    }
}

/// Whether `url`'s host is this machine: `localhost`, an address of `127.0.0.0/8`, or `::1`.
///
/// ```
/// use sayri_core::domain::config::check::is_loopback;
/// let host = |s: &str| is_loopback(&url::Url::parse(s).unwrap());
/// assert!(host("http://127.0.0.2:8/x") && host("http://[::1]/") && host("http://LOCALHOST/"));
/// assert!(!host("http://127.0.0.1.example.org/") && !host("http://10.0.0.1/"));
/// ```
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn line(s: &str, max: usize, empty_ok: bool) -> Result<(), ValueProblem> {
    if s.is_empty() {
        return if empty_ok {
            Ok(())
        } else {
            Err(ValueProblem::Empty)
        };
    }
    if s.chars().count() > max {
        return Err(ValueProblem::LongerThanChars(max));
    }
    if s.chars().any(char::is_control) {
        return Err(ValueProblem::ControlOrLineBreak);
    }
    if s.trim() != s {
        return Err(ValueProblem::EdgeSpace);
    }
    Ok(())
}

fn paragraph(s: &str, max: usize) -> Result<(), ValueProblem> {
    if s.len() > max {
        return Err(ValueProblem::LongerThanBytes(max));
    }
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(ValueProblem::ControlCharacter);
    }
    Ok(())
}

fn name(s: &str) -> Result<(), ValueProblem> {
    let ok = !s.is_empty()
        && !s.starts_with('.')
        && s.chars().count() <= MAX_NAME_LEN
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ValueProblem::NotAName)
    }
}

fn language(s: &str) -> Result<(), ValueProblem> {
    let code = (2..=3).contains(&s.len()) && s.chars().all(|c| c.is_ascii_lowercase());
    if s == "auto" || code {
        Ok(())
    } else {
        Err(ValueProblem::NotALanguage)
    }
}

fn locale(s: &str) -> Result<(), ValueProblem> {
    let ok = s.split_once('_').is_some_and(|(lang, region)| {
        (2..=3).contains(&lang.len())
            && lang.chars().all(|c| c.is_ascii_lowercase())
            && region.len() == 2
            && region.chars().all(|c| c.is_ascii_uppercase())
    });
    if ok {
        Ok(())
    } else {
        Err(ValueProblem::NotALocale)
    }
}

fn local_model(s: &str) -> Result<(), ValueProblem> {
    if s.is_empty() {
        return Ok(());
    }
    if !s.starts_with('/') {
        return name(s).map_err(|_| ValueProblem::NotAModel);
    }
    if s.len() > MAX_PATH_LEN {
        return Err(ValueProblem::LongerThanBytes(MAX_PATH_LEN));
    }
    if s.chars().any(char::is_control) {
        return Err(ValueProblem::ControlCharacter);
    }
    if !s.ends_with(".gguf") {
        return Err(ValueProblem::NotGguf);
    }
    Ok(())
}

fn credential(s: &str, min: usize) -> Result<(), ValueProblem> {
    if !s.is_empty() && s.len() < min {
        return Err(ValueProblem::CredentialTooShort(min));
    }
    if s.len() > MAX_CREDENTIAL_LEN {
        return Err(ValueProblem::LongerThanBytes(MAX_CREDENTIAL_LEN));
    }
    if s.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(ValueProblem::NotHeaderSafe)
    }
}

/// An HTTP header name character (RFC 9110 `tchar`).
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn headers(items: &[String]) -> Result<(), ValueProblem> {
    if items.len() > MAX_LIST_LEN {
        return Err(ValueProblem::TooManyEntries(MAX_LIST_LEN));
    }
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let Some((name, value)) = item.split_once(':') else {
            return Err(ValueProblem::HeaderWithoutColon { entry: n });
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(is_tchar) {
            return Err(ValueProblem::HeaderName { entry: n });
        }
        if !value
            .trim()
            .chars()
            .all(|c| c == ' ' || c == '\t' || c.is_ascii_graphic())
        {
            // The value is never echoed: header values often carry credentials.
            return Err(ValueProblem::HeaderValue {
                entry: n,
                name: name.to_string(),
            });
        }
    }
    Ok(())
}

fn agent_ids(items: &[String]) -> Result<(), ValueProblem> {
    if items.len() > MAX_LIST_LEN {
        return Err(ValueProblem::TooManyEntries(MAX_LIST_LEN));
    }
    if items
        .iter()
        .all(|a| valid_agent_id(a) && a.chars().count() <= MAX_NAME_LEN)
    {
        Ok(())
    } else {
        Err(ValueProblem::NotAnAgentId)
    }
}

fn absolute_paths(items: &[String]) -> Result<(), ValueProblem> {
    if items.len() > MAX_LIST_LEN {
        return Err(ValueProblem::TooManyEntries(MAX_LIST_LEN));
    }
    for (i, p) in items.iter().enumerate() {
        let n = i + 1;
        if p.len() > MAX_PATH_LEN {
            return Err(ValueProblem::EntryTooLong { entry: n });
        }
        if p.chars().any(char::is_control) {
            return Err(ValueProblem::EntryControl { entry: n });
        }
        if !p.starts_with('/') {
            return Err(ValueProblem::NotAbsolute {
                entry: n,
                shown: cut_chars(p, 80),
            });
        }
    }
    Ok(())
}
