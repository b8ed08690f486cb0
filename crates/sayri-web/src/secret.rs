//! The per-launch secret: 32 random bytes from the OS, written as 64 hex characters, compared
//! in constant time.

use subtle::ConstantTimeEq;

/// A random bearer secret. `Debug` never prints it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// 32 bytes from the OS random source, hex-encoded.
    ///
    /// # Panics
    /// When the OS has no random source (the kernel's `getrandom` fails): serving without a
    /// secret would be worse than not serving.
    pub fn random() -> Secret {
        let mut bytes = [0u8; 32];
        if let Err(e) = getrandom::fill(&mut bytes) {
            panic!("no random source for the web bubble's secret: {e}");
        }
        Secret(hex::encode(bytes))
    }

    /// The secret's text, for the login address and the cookie.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` is this secret; the time taken does not depend on where they differ.
    pub fn matches(&self, candidate: &str) -> bool {
        self.0.len() == candidate.len() && bool::from(self.0.as_bytes().ct_eq(candidate.as_bytes()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_64_hex_characters_and_differ_per_launch() {
        let a = Secret::random();
        let b = Secret::random();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose());
    }

    #[test]
    fn only_the_exact_secret_matches() {
        let a = Secret::random();
        assert!(a.matches(a.expose()));
        assert!(!a.matches(&a.expose()[..63]));
        assert!(!a.matches(""));
        assert!(!a.matches(&a.expose().to_uppercase()));
        assert!(!format!("{a:?}").contains(a.expose()));
    }
}
