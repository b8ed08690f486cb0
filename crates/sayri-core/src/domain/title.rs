//! Session titles: a session starts titled with the first words of its first request
//! ([`from_request`]); a model-written title ([`clean_model_title`]) replaces it only when it
//! is a real title — markup and quotes removed, at most [`MAX_TITLE_WORDS`] words — and not an
//! answer, a greeting or a question. Every title is cut at a word boundary, never mid-word.

/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 40;
/// Most words a model-written title may have (it is asked for 3–4).
pub const MAX_TITLE_WORDS: usize = 6;

/// How a model's reply begins when it answers or chats instead of writing a title.
const ANSWER_OPENERS: &[&str] = &[
    "i'm ",
    "i am ",
    "i can",
    "i will",
    "i'd ",
    "i would",
    "sure",
    "hello",
    "hi ",
    "hi,",
    "hey",
    "as an",
    "here is",
    "here's",
    "certainly",
    "of course",
    "okay",
    "ok,",
    "yes",
    "no,",
    "sorry",
    "the title",
    "what can",
    "how can",
];

/// `text` cut to at most `max` characters at a word boundary (a single word longer than
/// `max` is cut at `max`, with nothing added: a stored title that ends inside a secret must
/// still end with the secret's prefix, which the vault's rewrite of stored rows recognises).
pub fn cut_at_word(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max + 1).collect();
    match head.rfind(char::is_whitespace) {
        Some(i) if i > 0 => head[..i].trim_end().to_string(),
        _ => text.chars().take(max).collect(),
    }
}

/// `text`'s first line without Markdown markup and quotes at its ends (a heading's `#`, a
/// quote's `>`, emphasis around it), blanks collapsed. The words inside are kept as they are:
/// a request may hold a value that only later becomes a secret, and the vault must still find
/// it in the stored title.
pub fn trim_markup_ends(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .join(" ")
        .trim_matches(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '"' | '\'' | '“' | '”' | '‘' | '’' | '«' | '»' | '*' | '`' | '#' | '>' | '_'
                )
        })
        .to_string()
}

/// `text` without Markdown markup and surrounding quotes: one line, no `#`, `*`, `_`,
/// backticks or `>` quoting, no quotes around it, no trailing `.`/`:`, blanks collapsed.
pub fn strip_markup(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let no_marks: String = line
        .chars()
        .filter(|c| !matches!(c, '*' | '`' | '#' | '>' | '_'))
        .collect();
    let words: Vec<&str> = no_marks.split_whitespace().collect();
    words
        .join(" ")
        .trim_matches(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '"' | '\'' | '“' | '”' | '‘' | '’' | '«' | '»' | '.' | ':' | '-'
                )
        })
        .to_string()
}

/// The title a session starts with: the first words of `request` (markup removed), cut at a
/// word boundary to [`MAX_TITLE_CHARS`].
pub fn from_request(request: &str) -> String {
    cut_at_word(&trim_markup_ends(request), MAX_TITLE_CHARS)
}

/// The model's reply as a title, or `None` when it is not one: empty or under 3 characters,
/// more than [`MAX_TITLE_WORDS`] words, a question, several sentences, an answer or a
/// greeting, or an HTTP error text.
pub fn clean_model_title(reply: &str) -> Option<String> {
    let t = strip_markup(reply);
    let t = match t.get(..6) {
        Some(head) if head.eq_ignore_ascii_case("title:") => strip_markup(&t[6..]),
        _ => t,
    };
    let lower = t.to_lowercase();
    let is_answer = ANSWER_OPENERS.iter().any(|o| lower.starts_with(o))
        || t.contains(['?', '!'])
        || t.contains(". ")
        || lower.starts_with("http");
    let words = t.split_whitespace().count();
    if t.chars().count() < 3 || words > MAX_TITLE_WORDS || is_answer {
        return None;
    }
    Some(cut_at_word(&t, MAX_TITLE_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_title_loses_markup_and_quotes() {
        assert_eq!(
            clean_model_title("**\"Disk Space Check\"**").as_deref(),
            Some("Disk Space Check")
        );
        assert_eq!(
            clean_model_title("# Paris Capital Question.\nmore").as_deref(),
            Some("Paris Capital Question")
        );
        assert_eq!(
            clean_model_title("Title: `Weather Today`").as_deref(),
            Some("Weather Today")
        );
    }

    #[test]
    fn an_answer_a_greeting_or_a_long_reply_is_not_a_title() {
        for junk in [
            "I'm ready to help. What can I help y",
            "Sure! Here is a title",
            "What is the capital of France?",
            "The capital of France is Paris and it is a big city",
            "",
            "ok",
            "HTTP 500 Internal Server Error",
        ] {
            assert_eq!(clean_model_title(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn titles_are_cut_at_a_word_boundary() {
        assert_eq!(
            from_request("Could you please tell me how much free disk space is left on my laptop?"),
            "Could you please tell me how much free"
        );
        assert_eq!(
            from_request("What is the capital of France?"),
            "What is the capital of France?"
        );
        assert_eq!(
            cut_at_word("Supercalifragilisticexpialidocious", 10),
            "Supercalif"
        );
        assert_eq!(
            from_request("## \"keep a_b*c#d safe\""),
            "keep a_b*c#d safe"
        );
        assert!(from_request(&"word ".repeat(30)).chars().count() <= MAX_TITLE_CHARS);
    }
}
