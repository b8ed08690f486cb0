//! Token counting with `tiktoken-rs`'s `o200k_base` encoding (an estimate for non-OpenAI
//! models; exact enough for budgets).
//!
//! The encoder costs about 0.4 s to build, so it is built lazily, once per process, on the
//! first count — never on the daemon's start-up path. Call [`warm_up`] from a background task
//! to pay that cost before the first turn.

use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

fn bpe() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// Builds the encoder now (idempotent).
pub fn warm_up() {
    let _ = bpe();
}

/// Number of `o200k_base` tokens in `text`. If the embedded encoder cannot be built (it
/// ships inside the crate, so this does not happen in practice) falls back to ⌈bytes / 4⌉.
pub fn count(text: &str) -> usize {
    match bpe() {
        Some(b) => b.encode_with_special_tokens(text).len(),
        None => text.len().div_ceil(4),
    }
}

/// Per-message overhead of the chat format (role and separators), in tokens.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Tokens of one chat message including [`MESSAGE_OVERHEAD`].
pub fn count_message(content: &str) -> usize {
    count(content) + MESSAGE_OVERHEAD
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_plausible() {
        assert_eq!(super::count(""), 0);
        let n = super::count("What is the capital of France?");
        assert!((5..=10).contains(&n), "{n}");
    }
}
