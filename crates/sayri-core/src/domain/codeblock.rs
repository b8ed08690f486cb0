//! Fenced code blocks in a model's answer: which ones are commands.
//!
//! Rules:
//! * Only the **answer** text is scanned; reasoning arrives separately and is never passed here.
//!   As a second line of defence, `<think>…</think>` / `<thought>…</thought>` regions written
//!   inline in the answer (outside fences) are skipped too.
//! * A block is a CommonMark-style fence: a line of ≥ 3 backticks or tildes (indented ≤ 3
//!   spaces) with an info string, closed by a line of the same character, at least as long,
//!   with nothing else on it. Parsing is line by line, so prose between two blocks can never be
//!   captured as a command.
//! * Only blocks tagged `bash` or `sh` (first word of the info string, any case) are commands.
//!   Untagged fences and other languages are never executed.
//! * A fence still open when the text ends is returned with `closed: false` (models often stop
//!   right before the closing fence); the engine decides what to do with it.

/// One fenced block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    /// Lowercased first word of the info string (`""` when untagged).
    pub lang: String,
    /// The lines between the fences, joined with `\n`, without a trailing newline.
    pub body: String,
    /// Whether a closing fence was found.
    pub closed: bool,
}

impl CodeBlock {
    /// Whether this block is a shell command to run (`bash` or `sh`).
    pub fn is_command(&self) -> bool {
        matches!(self.lang.as_str(), "bash" | "sh")
    }

    /// Whether this block asks for a history search (```` ```search_history ````).
    pub fn is_history_search(&self) -> bool {
        matches!(
            self.lang.as_str(),
            "search_history" | "search_chat_history" | "recall_history"
        )
    }
}

/// Parses an opening fence: returns (fence char, length, info string).
fn opening(line: &str) -> Option<(char, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.chars().take_while(|c| *c == ch).count();
    if len < 3 {
        return None;
    }
    let info = rest[len..].trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch, len, info))
}

fn is_closing(line: &str, ch: char, len: usize) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return false;
    }
    let t = line.trim();
    t.chars().all(|c| c == ch) && t.chars().count() >= len
}

/// Every fenced block of `answer`, in order (see the module rules).
pub fn extract_blocks(answer: &str) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut open: Option<(char, usize, String, Vec<&str>)> = None;
    let mut in_think = false;
    for line in answer.lines() {
        if let Some((ch, len, lang, body)) = &mut open {
            if is_closing(line, *ch, *len) {
                blocks.push(CodeBlock {
                    lang: std::mem::take(lang),
                    body: body.join("\n"),
                    closed: true,
                });
                open = None;
            } else {
                body.push(line);
            }
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if in_think {
            if lower.contains("</think>") || lower.contains("</thought>") {
                in_think = false;
            }
            continue;
        }
        if let Some((ch, len, info)) = opening(line) {
            let lang = info
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            open = Some((ch, len, lang, Vec::new()));
            continue;
        }
        if let Some(pos) = lower.find("<think>").or_else(|| lower.find("<thought>")) {
            let after = &lower[pos..];
            if !(after.contains("</think>") || after.contains("</thought>")) {
                in_think = true;
            }
        }
    }
    if let Some((_, _, lang, body)) = open {
        blocks.push(CodeBlock {
            lang,
            body: body.join("\n"),
            closed: false,
        });
    }
    blocks
}

/// The `bash`/`sh` blocks of `answer` with a non-blank body, in order.
pub fn command_blocks(answer: &str) -> Vec<CodeBlock> {
    extract_blocks(answer)
        .into_iter()
        .filter(|b| b.is_command() && !b.body.trim().is_empty())
        .collect()
}

/// The body of the first ```` ```mcp ```` block of `answer`, when it comes before every
/// command block (only the first actionable block of a reply is acted on).
///
/// ```
/// use sayri_core::domain::codeblock::mcp_request;
/// assert_eq!(mcp_request("```mcp\ntime.now {}\n```").as_deref(), Some("time.now {}"));
/// assert_eq!(mcp_request("```bash\nls\n```\n```mcp\ntime.now\n```"), None);
/// ```
pub fn mcp_request(answer: &str) -> Option<String> {
    extract_blocks(answer)
        .into_iter()
        .find(|b| (b.is_command() || b.lang == "mcp") && !b.body.trim().is_empty())
        .filter(|b| b.lang == "mcp")
        .map(|b| b.body)
}

/// The skill named by the first ```` ```read_skill ```` block of `answer` (first line, trimmed).
///
/// ```
/// use sayri_core::domain::codeblock::skill_read;
/// assert_eq!(skill_read("```read_skill\nweather\n```").as_deref(), Some("weather"));
/// assert_eq!(skill_read("```bash\nls\n```"), None);
/// ```
pub fn skill_read(answer: &str) -> Option<String> {
    extract_blocks(answer)
        .into_iter()
        .find(|b| b.lang == "read_skill")
        .and_then(|b| {
            b.body
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string)
        })
}

/// The query of the first history-search request in `answer`: a fenced
/// ```` ```search_history ```` block, or the tag form `<search_history>q</search_history>`.
pub fn history_search(answer: &str) -> Option<String> {
    if let Some(b) = extract_blocks(answer)
        .into_iter()
        .find(|b| b.is_history_search() && !b.body.trim().is_empty())
    {
        return Some(b.body.trim().to_string());
    }
    for tag in ["search_history", "recall_history"] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        if let Some(start) = answer.find(&open) {
            let rest = &answer[start + open.len()..];
            if let Some(end) = rest.find(&close) {
                let q = rest[..end].trim();
                if !q.is_empty() {
                    return Some(q.to_string());
                }
            }
        }
    }
    None
}

/// The words of the first memory search in `answer`: a ```` ```recall ```` block (also written
/// ```` ```recall_memory ```` or ```` ```search_memory ````), its lines joined with spaces.
///
/// ```
/// use sayri_core::domain::codeblock::memory_recall;
/// assert_eq!(memory_recall("```recall\nbackup disk\n```").as_deref(), Some("backup disk"));
/// assert_eq!(memory_recall("```recall\n \n```"), None);
/// ```
pub fn memory_recall(answer: &str) -> Option<String> {
    first_body(answer, &["recall", "recall_memory", "search_memory"])
}

/// The fact proposed by the first ```` ```remember ```` block of `answer` (its lines joined with
/// spaces); the engine decides whether it is stored.
///
/// ```
/// use sayri_core::domain::codeblock::memory_proposal;
/// assert_eq!(
///     memory_proposal("Sure.\n```remember\nMy backup disk is /mnt/tank\n```").as_deref(),
///     Some("My backup disk is /mnt/tank")
/// );
/// ```
pub fn memory_proposal(answer: &str) -> Option<String> {
    first_body(answer, &["remember", "remember_fact"])
}

/// The body of the first closed, non-blank block tagged one of `langs`, its non-blank lines
/// trimmed and joined with single spaces.
fn first_body(answer: &str, langs: &[&str]) -> Option<String> {
    extract_blocks(answer)
        .into_iter()
        .filter(|b| b.closed && langs.contains(&b.lang.as_str()))
        .map(|b| {
            b.body
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .find(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(s: &str) -> Vec<String> {
        command_blocks(s).into_iter().map(|b| b.body).collect()
    }

    #[test]
    fn only_bash_and_sh_tagged_fences_are_commands() {
        let t = "A\n```\nrm -rf /\n```\n```python\nprint(1)\n```\n```Bash\nls -la\n```\n```sh title\npwd\n```";
        assert_eq!(cmds(t), ["ls -la", "pwd"]);
    }

    #[test]
    fn prose_between_blocks_is_never_captured() {
        // A non-bash block followed by prose and a bash block: only the bash block's body is a
        // command, never the prose between the blocks.
        let t = "```python\nx = 1\n```\nThen I will run rm -rf ~ maybe\n```bash\necho ok\n```\n";
        assert_eq!(cmds(t), ["echo ok"]);
    }

    #[test]
    fn multi_line_blocks_keep_their_lines_and_longer_fences_work() {
        let t = "````bash\necho a\n```\necho b\n````\n~~~sh\nls\n~~~";
        assert_eq!(cmds(t), ["echo a\n```\necho b", "ls"]);
    }

    #[test]
    fn think_regions_inside_the_answer_are_skipped() {
        let t = "<think>Old habit:\n```bash\nrm -rf ~/sayri-cache\n```\nno.</think>\n\nHere is the listing:\n```bash\nls -la\n```\n";
        assert_eq!(cmds(t), ["ls -la"]);
        // A literal <think> inside a fenced block of the answer is just code.
        let t = "```bash\necho '<think>'\n```\n```sh\npwd\n```";
        assert_eq!(cmds(t), ["echo '<think>'", "pwd"]);
    }

    #[test]
    fn unclosed_final_fence_is_reported_as_such() {
        let b = extract_blocks("Sure:\n```bash\ndf -h");
        assert_eq!(b.len(), 1);
        assert!(!b[0].closed);
        assert_eq!(b[0].body, "df -h");
    }

    #[test]
    fn indented_four_spaces_is_not_a_fence_and_empty_blocks_are_ignored() {
        assert!(cmds("    ```bash\n    ls\n    ```").is_empty());
        assert!(cmds("```bash\n   \n```").is_empty());
    }

    #[test]
    fn history_search_forms() {
        assert_eq!(
            history_search("```search_history\nprinter\n```").as_deref(),
            Some("printer")
        );
        assert_eq!(
            history_search("x <recall_history> wifi </recall_history>").as_deref(),
            Some("wifi")
        );
        assert_eq!(history_search("```bash\nls\n```"), None);
    }

    #[test]
    fn memory_blocks_are_found_only_when_closed_and_not_blank() {
        assert_eq!(
            memory_recall("x\n```search_memory\n backup\n  disk \n```").as_deref(),
            Some("backup disk")
        );
        assert_eq!(memory_recall("```recall\nbackup disk"), None);
        assert_eq!(
            memory_proposal("```remember\n\n```\n```remember\nI use zsh\n```").as_deref(),
            Some("I use zsh")
        );
        assert_eq!(memory_proposal("```bash\necho remember\n```"), None);
    }
}
