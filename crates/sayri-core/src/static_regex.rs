//! Regular expressions written in this crate's source.
//!
//! Every pattern compiled here is a constant of `sayri-core` (or assembled from constants), so
//! whether it compiles is settled when the crate is written, not by what a user, a file or the
//! network sends: the tests of the module that writes a pattern compile it (each module keeps its
//! patterns in a `LazyLock`/`OnceLock` forced by the first match), and a pattern that does not
//! compile fails those tests. Text from outside is never a pattern here; a pattern built from
//! outside text would need its own error path.

use regex::{Regex, RegexSet};

/// Compiles `pattern`, a pattern written in this crate.
///
/// # Panics
/// When `pattern` does not compile, which is a bug in this crate that the tests of the module
/// writing it catch (see the module's documentation).
pub(crate) fn static_regex(pattern: &str) -> Regex {
    // A constant pattern either always compiles or never does; the module's tests run it.
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("a regular expression written in sayri-core compiles")
}

/// Compiles `patterns`, each written in this crate, into one set.
///
/// # Panics
/// As [`static_regex`]: only when a pattern written in this crate does not compile.
pub(crate) fn static_regex_set<S: AsRef<str>>(patterns: &[S]) -> RegexSet {
    // A constant pattern either always compiles or never does; the module's tests run it.
    #[allow(clippy::expect_used)]
    RegexSet::new(patterns).expect("a set of regular expressions written in sayri-core compiles")
}
