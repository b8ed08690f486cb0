//! What of a model's streamed answer reaches clients as `assistant_delta`.
//!
//! Policy: prose streams live, token by token, in every step (so a person sees "Let me check
//! the disk…" at once). Fenced code is held back from the line that opens a fence until the
//! fence closes: a closed `bash`/`sh` block is **never** streamed — clients see it as
//! `tool_start` with the command instead — while any other closed block (an example in
//! Python, say) is released whole. A fence still open at the end of the step is dropped.
//! Reasoning never passes through here (it is `reasoning_delta`). The final `assistant_done`
//! carries the cleaned final answer and is authoritative.

/// Incremental filter for one model step.
#[derive(Debug, Default)]
pub struct DeltaFilter {
    /// The current line, not yet newline-terminated.
    line: String,
    /// How many bytes of `line` were already emitted (prose streamed live).
    emitted: usize,
    /// Inside a fence: (fence char, length, lang, held text).
    fence: Option<(char, usize, String, String)>,
}

fn fence_open(line: &str) -> Option<(char, usize, String)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.chars().take_while(|c| *c == ch).count();
    (len >= 3).then(|| {
        let lang = t[len..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        (ch, len, lang)
    })
}

/// Whether `partial` (a line start without newline) could still become a fence line.
fn maybe_fence(partial: &str) -> bool {
    let t = partial.trim_start_matches(' ');
    if partial.len() - t.len() > 3 {
        return false;
    }
    let run = t.chars().take_while(|c| *c == '`' || *c == '~').count();
    run == t.chars().count() || run >= 3
}

impl DeltaFilter {
    /// Feeds a delta; returns the text to stream now (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        let mut out = String::new();
        for piece in delta.split_inclusive('\n') {
            self.line.push_str(piece);
            if self.line.ends_with('\n') {
                self.end_line(&mut out);
            } else if self.fence.is_none() && (self.emitted > 0 || !maybe_fence(&self.line)) {
                out.push_str(&self.line[self.emitted..]);
                self.emitted = self.line.len();
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut String) {
        let line = std::mem::take(&mut self.line);
        let emitted = std::mem::take(&mut self.emitted);
        let content = line.trim_end_matches(['\n', '\r']);
        if let Some((ch, len, lang, held)) = &mut self.fence {
            held.push_str(&line);
            let t = content.trim();
            if !t.is_empty() && t.chars().all(|c| c == *ch) && t.chars().count() >= *len {
                if !matches!(lang.as_str(), "bash" | "sh") {
                    out.push_str(held);
                }
                self.fence = None;
            }
            return;
        }
        if emitted == 0
            && let Some((ch, len, lang)) = fence_open(content)
        {
            self.fence = Some((ch, len, lang, line));
            return;
        }
        out.push_str(&line[emitted..]);
    }

    /// Ends the step; returns any releasable remainder (an unterminated prose line).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if self.fence.is_none() && !self.line.is_empty() && fence_open(&self.line).is_none() {
            out.push_str(&self.line[self.emitted..]);
        }
        *self = DeltaFilter::default();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::DeltaFilter;

    fn run(chunks: &[&str]) -> String {
        let mut f = DeltaFilter::default();
        let mut s: String = chunks.iter().map(|c| f.push(c)).collect();
        s.push_str(&f.finish());
        s
    }

    #[test]
    fn bash_blocks_are_held_back_prose_streams() {
        assert_eq!(
            run(&["Let me ", "check.\n``", "`bash\ndf", " -h\n``", "`\nDone"]),
            "Let me check.\nDone"
        );
    }

    #[test]
    fn other_blocks_are_released_whole_and_prose_is_live() {
        let mut f = DeltaFilter::default();
        assert_eq!(f.push("Hel"), "Hel");
        assert_eq!(f.push("lo\n```py"), "lo\n");
        assert_eq!(f.push("thon\nx=1\n"), "");
        assert_eq!(f.push("```\n"), "```python\nx=1\n```\n");
        assert_eq!(f.push("`inline` code"), "`inline` code");
    }

    #[test]
    fn unclosed_fence_is_dropped() {
        assert_eq!(run(&["ok\n```bash\nrm -rf /tmp/x"]), "ok\n");
    }
}
