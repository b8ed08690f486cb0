//! Randomness, behind a port: the core never draws it itself, and tests can fix it.

/// A source of random numbers that nothing outside the daemon's process can predict (command
/// output, a web page, a model).
pub trait Entropy: Send + Sync {
    /// 64 fresh random bits.
    fn nonce(&self) -> u64;
}
