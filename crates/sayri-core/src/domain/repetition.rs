//! The repetition guard: a model that keeps proposing the same command with the same result is
//! stopped instead of running it again and again.
//!
//! Rule, per turn: a command is *identical* to an earlier run when its text is the same after
//! whitespace normalisation and that earlier run ended with the same exit code and
//! byte-identical (redacted) output. After two identical runs in a row the command is not run
//! a third time: the model is told why and asked for another approach or a final answer. If it
//! proposes that command again, the turn ends with an answer saying so. A successful command
//! counts too — success is not progress. A command whose output changes between runs (a
//! counter, a log that grows) is never refused.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// `command` with every run of whitespace turned into one space, trimmed.
///
/// ```
/// use sayri_core::domain::repetition::normalize;
/// assert_eq!(normalize("  tail  -n 5\tx.log \n"), "tail -n 5 x.log");
/// ```
pub fn normalize(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How many identical runs in a row a command may have; the next proposal is refused.
pub const MAX_IDENTICAL_RUNS: u32 = 2;

/// What the guard says about a proposed command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Run,
    /// Do not run it: it already ran [`MAX_IDENTICAL_RUNS`] times with the same result.
    Refuse,
    /// It was refused before in this turn and the model proposes it again: end the turn.
    Stop,
}

#[derive(Debug)]
struct Seen {
    command: String,
    /// Exit code and a hash of the output of the latest run.
    last: (Option<i32>, u64, usize),
    /// Runs in a row with that same result.
    streak: u32,
    refused: bool,
}

/// Remembers the commands of one turn and their results.
#[derive(Debug, Default)]
pub struct RepetitionGuard {
    seen: Vec<Seen>,
}

fn fingerprint(exit_code: Option<i32>, output: &str) -> (Option<i32>, u64, usize) {
    let mut h = DefaultHasher::new();
    output.hash(&mut h);
    (exit_code, h.finish(), output.len())
}

impl RepetitionGuard {
    /// What to do with `command`, proposed now.
    pub fn check(&self, command: &str) -> Verdict {
        let key = normalize(command);
        match self.seen.iter().find(|s| s.command == key) {
            Some(s) if s.refused => Verdict::Stop,
            Some(s) if s.streak >= MAX_IDENTICAL_RUNS => Verdict::Refuse,
            _ => Verdict::Run,
        }
    }

    /// Records that `command` ran and ended with `exit_code` and (redacted) `output`.
    pub fn record_run(&mut self, command: &str, exit_code: Option<i32>, output: &str) {
        let key = normalize(command);
        let fp = fingerprint(exit_code, output);
        match self.seen.iter_mut().find(|s| s.command == key) {
            Some(s) if s.last == fp => s.streak += 1,
            Some(s) => {
                s.last = fp;
                s.streak = 1;
            }
            None => self.seen.push(Seen {
                command: key,
                last: fp,
                streak: 1,
                refused: false,
            }),
        }
    }

    /// Records that `command` was refused (so proposing it again ends the turn).
    pub fn record_refusal(&mut self, command: &str) {
        let key = normalize(command);
        if let Some(s) = self.seen.iter_mut().find(|s| s.command == key) {
            s.refused = true;
        }
    }
}

/// The observation sent instead of running a refused repeat.
pub fn refusal_observation(command: &str) -> String {
    format!(
        "[Command NOT RUN: repeated]\n`{}` already ran {MAX_IDENTICAL_RUNS} times in this request with the same exit code and the same output, so it was not run again. Running it again will not change the result. Try a different approach, or give your final answer from what you have.",
        normalize(command)
    )
}

/// The note that ends a turn whose model insisted on a refused repeat.
pub fn stop_note(command: &str) -> String {
    format!(
        "(I stopped: the model kept repeating `{}`, which already ran {MAX_IDENTICAL_RUNS} times with the same result, so it was not run again. Ask again with more detail, or try another approach.)",
        normalize(command)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_identical_run_is_refused_and_a_fourth_proposal_stops() {
        let mut g = RepetitionGuard::default();
        let cmd = "tail -n 5 /tmp/x.log";
        assert_eq!(g.check(cmd), Verdict::Run);
        g.record_run(cmd, Some(0), "a\nb\n");
        assert_eq!(g.check(cmd), Verdict::Run);
        g.record_run("tail  -n 5   /tmp/x.log", Some(0), "a\nb\n");
        assert_eq!(g.check(" tail -n 5 /tmp/x.log\n"), Verdict::Refuse);
        g.record_refusal(cmd);
        assert_eq!(g.check(cmd), Verdict::Stop);
        assert_eq!(g.check("tail -n 6 /tmp/x.log"), Verdict::Run);
    }

    #[test]
    fn changing_output_or_exit_code_is_progress() {
        let mut g = RepetitionGuard::default();
        for i in 0..5 {
            assert_eq!(g.check("cat counter"), Verdict::Run);
            g.record_run("cat counter", Some(0), &i.to_string());
        }
        let mut g = RepetitionGuard::default();
        g.record_run("make", Some(2), "error");
        g.record_run("make", Some(0), "error");
        assert_eq!(g.check("make"), Verdict::Run);
        g.record_run("make", Some(0), "error");
        assert_eq!(g.check("make"), Verdict::Refuse);
    }
}
