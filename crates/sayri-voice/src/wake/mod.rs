//! Wake-word adapters.

#[cfg(feature = "onnx")]
pub mod oww;

#[cfg(feature = "onnx")]
pub use oww::OpenWakeWord;

/// The phrase a model listens for, from its name: underscores are spaces and a version suffix
/// (`_v0.1`) is dropped — `hey_jarvis_v0.1` → `hey jarvis`, `hey_victor` → `hey victor`.
pub fn phrase_of_model(name: &str) -> String {
    let base = match name.rfind("_v") {
        Some(i) if name[i + 2..].starts_with(|c: char| c.is_ascii_digit()) => &name[..i],
        _ => name,
    };
    base.replace('_', " ")
}

/// The installed wake-word model (name) for `phrase` (case and spacing ignored), if any.
pub fn model_for_phrase<'a>(
    phrase: &str,
    installed: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let want = phrase
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    installed
        .into_iter()
        .find(|m| phrase_of_model(m).to_lowercase() == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_give_their_phrase() {
        assert_eq!(phrase_of_model("hey_jarvis_v0.1"), "hey jarvis");
        assert_eq!(phrase_of_model("hey_victor"), "hey victor");
        assert_eq!(phrase_of_model("alexa_v0.1"), "alexa");
        let installed = ["alexa_v0.1", "hey_jarvis_v0.1"];
        assert_eq!(
            model_for_phrase(" Hey  Jarvis", installed),
            Some("hey_jarvis_v0.1")
        );
        assert_eq!(model_for_phrase("hey sayri", installed), None);
    }
}
