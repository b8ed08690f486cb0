//! Token accounting without a resident tokenizer.
//!
//! Budgets (history, observations, the model's context) use a [`TokenEstimator`]: a cheap
//! count of *weighted bytes* divided by a per-model bytes-per-token rate. Token-dense
//! characters count double (ASCII digits, punctuation and control characters — a BPE
//! tokenizer gives them far fewer bytes per token than letters), so one rate fits prose, logs
//! and code alike.
//!
//! * Before a model's first usage report the rate is [`TokenEstimator::CONSERVATIVE`], which
//!   over-counts every tokenizer measured (o200k, Llama, Qwen, SmolLM) on prose, logs and code.
//! * Every usage report (`usage.prompt_tokens`) of a request whose weighted size is known
//!   calibrates the rate ([`TokenEstimator::calibrated`]): a denser tokenizer lowers it at
//!   once, a sparser one raises it slowly, so an estimate errs on the side of more tokens.
//!   The engine keeps the rate per model in the store, so it survives restarts.
//!
//! The exact `o200k_base` tokenizer ([`exact`]) is for `sayri prompt show --tokens`, tests and
//! benchmarks only: it is built on demand (about 60 MB of tables) and freed when dropped. The
//! daemon never builds it; [`exact::loaded`] says whether one is alive in this process.

/// Weight of one byte of `text`: 2 for ASCII digits, punctuation and control characters
/// (token-dense), 1 for everything else (letters, spaces, each byte of a non-ASCII character).
fn byte_weight(b: u8) -> usize {
    if b.is_ascii_digit() || b.is_ascii_punctuation() || (b.is_ascii_control() && b != b'\n') {
        2
    } else {
        1
    }
}

/// The weighted size of `text` (see the module docs): the unit a bytes-per-token rate divides.
///
/// ```
/// use sayri_core::domain::tokens::weighted_bytes;
/// assert_eq!(weighted_bytes("ab c"), 4);
/// assert_eq!(weighted_bytes("a=1"), 5);
/// ```
pub fn weighted_bytes(text: &str) -> usize {
    text.bytes().map(byte_weight).sum()
}

/// Per-message overhead of the chat format (role and separators), in tokens.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Per-request overhead of the chat format (the assistant's reply header), in tokens.
pub const REQUEST_OVERHEAD: usize = 3;

/// Estimates token counts from weighted bytes and a bytes-per-token rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenEstimator {
    /// Weighted bytes per token (see [`weighted_bytes`]); always within
    /// [`TokenEstimator::MIN_RATE`]..=[`TokenEstimator::MAX_RATE`].
    pub bytes_per_token: f64,
}

impl Default for TokenEstimator {
    fn default() -> Self {
        TokenEstimator::conservative()
    }
}

impl TokenEstimator {
    /// The rate used before a model reported any usage: weighted bytes per token.
    pub const CONSERVATIVE: f64 = 3.0;
    /// Lowest rate a calibration may reach (a tokenizer that splits every character).
    pub const MIN_RATE: f64 = 1.0;
    /// Highest rate a calibration may reach; a report implying more is not believed (some
    /// servers count only the prompt tokens they did not have cached).
    pub const MAX_RATE: f64 = 6.0;
    /// Share of the distance to a higher observed rate that one report moves the estimate.
    const RELAX: f64 = 0.25;

    /// The estimator used before the first usage report.
    pub fn conservative() -> Self {
        TokenEstimator {
            bytes_per_token: Self::CONSERVATIVE,
        }
    }

    /// An estimator with `bytes_per_token`, clamped to the allowed range (a non-finite value
    /// gives the conservative rate).
    pub fn with_rate(bytes_per_token: f64) -> Self {
        let r = if bytes_per_token.is_finite() {
            bytes_per_token.clamp(Self::MIN_RATE, Self::MAX_RATE)
        } else {
            Self::CONSERVATIVE
        };
        TokenEstimator { bytes_per_token: r }
    }

    /// Estimated tokens of `text` (0 for empty text).
    pub fn count(&self, text: &str) -> usize {
        self.tokens_of_weight(weighted_bytes(text))
    }

    /// Estimated tokens of one chat message with `content`, overhead included.
    pub fn count_message(&self, content: &str) -> usize {
        self.count(content) + MESSAGE_OVERHEAD
    }

    /// Estimated prompt tokens of a whole request with these message contents.
    pub fn count_request<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> usize {
        REQUEST_OVERHEAD
            + contents
                .into_iter()
                .map(|c| self.count_message(c))
                .sum::<usize>()
    }

    /// Tokens of a weighted size, rounded up.
    pub fn tokens_of_weight(&self, weight: usize) -> usize {
        (weight as f64 / self.bytes_per_token).ceil() as usize
    }

    /// Weighted bytes that fit in `tokens` (rounded down).
    pub fn weight_of_tokens(&self, tokens: usize) -> usize {
        (tokens as f64 * self.bytes_per_token).floor() as usize
    }

    /// The estimator after a usage report: a request of `messages` chat messages whose contents
    /// weigh `weight` (see [`weighted_bytes`]) took `prompt_tokens` by the server's count.
    /// A lower observed rate is taken at once; a higher one moves the rate a quarter of the way.
    /// Reports too small to say anything (fewer than 16 content tokens) or implying more than
    /// [`TokenEstimator::MAX_RATE`] leave it unchanged.
    pub fn calibrated(&self, weight: usize, messages: usize, prompt_tokens: u32) -> Self {
        let overhead = REQUEST_OVERHEAD + messages * MESSAGE_OVERHEAD;
        let content_tokens = (prompt_tokens as usize).saturating_sub(overhead);
        if content_tokens < 16 || weight == 0 {
            return *self;
        }
        let observed = weight as f64 / content_tokens as f64;
        if observed > Self::MAX_RATE {
            return *self;
        }
        let next = if observed < self.bytes_per_token {
            observed
        } else {
            self.bytes_per_token + (observed - self.bytes_per_token) * Self::RELAX
        };
        TokenEstimator::with_rate(next)
    }
}

/// The exact `o200k_base` tokenizer, built on demand and freed when dropped.
pub mod exact {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static LIVE: AtomicUsize = AtomicUsize::new(0);

    /// Whether an exact tokenizer is alive in this process right now (its tables take about
    /// 60 MB). The daemon reports it in `status` so a test can prove it is not resident.
    pub fn loaded() -> bool {
        LIVE.load(Ordering::SeqCst) > 0
    }

    /// The embedded `o200k_base` tables cannot be decoded (a broken build: reinstall Sayri).
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[error("cannot build the o200k_base tokenizer: {0}")]
    pub struct TokenizerError(pub String);

    /// An `o200k_base` tokenizer. Building one takes about 0.3 s and 60 MB; drop it when done.
    pub struct ExactTokenizer {
        bpe: tiktoken_rs::CoreBPE,
    }

    impl ExactTokenizer {
        /// Builds the tokenizer from the tables embedded in the binary.
        ///
        /// # Errors
        /// [`TokenizerError`]: the embedded tables cannot be decoded (a broken build).
        pub fn load() -> Result<ExactTokenizer, TokenizerError> {
            let bpe = tiktoken_rs::o200k_base().map_err(|e| TokenizerError(e.to_string()))?;
            LIVE.fetch_add(1, Ordering::SeqCst);
            Ok(ExactTokenizer { bpe })
        }

        /// Number of `o200k_base` tokens in `text`.
        pub fn count(&self, text: &str) -> usize {
            self.bpe.encode_with_special_tokens(text).len()
        }

        /// Tokens of one chat message with `content`, overhead included.
        pub fn count_message(&self, content: &str) -> usize {
            self.count(content) + super::MESSAGE_OVERHEAD
        }
    }

    impl Drop for ExactTokenizer {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Counts `text` with a tokenizer built for this call and dropped right after.
    ///
    /// # Errors
    /// As [`ExactTokenizer::load`].
    pub fn count_once(text: &str) -> Result<usize, TokenizerError> {
        Ok(ExactTokenizer::load()?.count(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_round_up_and_weigh_digits_double() {
        let e = TokenEstimator::with_rate(4.0);
        assert_eq!(e.count(""), 0);
        assert_eq!(e.count("abcd"), 1);
        assert_eq!(e.count("abcde"), 2);
        assert_eq!(e.count("1234"), 2);
        assert_eq!(e.count_message("abcd"), 1 + MESSAGE_OVERHEAD);
    }

    #[test]
    fn calibration_tightens_at_once_and_relaxes_slowly() {
        let e = TokenEstimator::conservative();
        // 300 weighted bytes in 2 messages took 100 + overhead tokens: 3.0 → stays.
        let overhead = (REQUEST_OVERHEAD + 2 * MESSAGE_OVERHEAD) as u32;
        let denser = e.calibrated(300, 2, 150 + overhead);
        assert!((denser.bytes_per_token - 2.0).abs() < 1e-9, "{denser:?}");
        let sparser = denser.calibrated(600, 2, 100 + overhead);
        assert!((sparser.bytes_per_token - 3.0).abs() < 1e-9, "{sparser:?}");
        // Tiny reports say nothing.
        assert_eq!(e.calibrated(10, 1, 9), e);
        // Absurd reports are clamped or ignored.
        assert_eq!(
            e.calibrated(1_000, 1, 20_000).bytes_per_token,
            TokenEstimator::MIN_RATE
        );
        assert_eq!(e.calibrated(100_000, 1, 1_000), e);
    }

    #[test]
    fn exact_tokenizer_is_reported_loaded_while_alive() {
        let t = exact::ExactTokenizer::load().unwrap();
        assert!(exact::loaded());
        let n = t.count("What is the capital of France?");
        assert!((5..=10).contains(&n), "{n}");
    }
}
