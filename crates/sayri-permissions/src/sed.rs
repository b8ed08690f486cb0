//! GNU `sed`: the commands of its script that run programs or touch files.
//!
//! `sed` is a reader only while its script says so. GNU `sed` runs a shell command with the `e`
//! command (`1e rm -f x`) and with the `e` flag of `s///` (the pattern space after the
//! substitution is run), writes files with `w`/`W` and the `w` flag of `s///`, reads files with
//! `r`/`R`, and rewrites its input files with `-i`. The script is read the way GNU `sed` reads it
//! (the `-e` parts joined by newlines, so `-e 'a\' -e 'e x'` appends the text `e x`), and every
//! such command is reported: a literal command as a script to judge, files as targets, and what
//! depends on the input (`e` without a command, a substitution whose result is not fully known)
//! or on a file (`-f script`) as not analysable. A script this reader cannot follow is not
//! analysable either; `--sandbox` makes `sed` refuse `e`, `r` and `w`.

use super::options::{Order, Parsed, Spec, parse};
use super::rule::Action;
use super::shell::Word;
use super::wrappers::{ArgTarget, Script, Unwrapped};

/// `sed`'s options that take an argument; `-i` and `--in-place` take an optional suffix.
const OPTIONS: Spec<'static> = Spec {
    short_with_arg: "efl",
    long_with_arg: &["expression", "file", "line-length"],
    short_optional_arg: "i",
};

/// What a `sed` script does besides editing its output.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SedEffects {
    /// Shell commands written literally in the script (`e CMD`, or `s/.*/CMD/e`).
    pub commands: Vec<String>,
    /// Files written (`w`, `W`, `s///w`).
    pub writes: Vec<String>,
    /// Files read (`r`, `R`).
    pub reads: Vec<String>,
    /// What runs but is known only at run time, described.
    pub unknown: Vec<String>,
}

/// Analyses a `sed` invocation (`args` after the program name) into `out`.
pub fn analyse(args: &[Word], out: &mut Unwrapped) {
    let p = parse(args, OPTIONS, Order::Permute);
    let sandbox = p.has(&["--sandbox"]);
    let in_place = p.has(&["-i", "--in-place"]);
    let mut parts = Vec::new();
    let mut explicit = false;
    for o in &p.options {
        match o.name.as_str() {
            "-e" | "--expression" => {
                explicit = true;
                match Parsed::carrier(o, args) {
                    Some(w) if w.dynamic => out.opaque.push(format!(
                        "the `sed` script `{}` is computed at run time",
                        w.raw
                    )),
                    Some(w) => parts.push(w.text),
                    None => {}
                }
            }
            "-f" | "--file" => {
                explicit = true;
                let file = o.value.clone().unwrap_or_default();
                out.opaque.push(format!(
                    "`sed -f {file}` reads its script from a file whose commands are not known here"
                ));
                if !file.is_empty() && file != "-" {
                    out.targets
                        .push(ArgTarget::new(Action::Read, &file, "sed -f"));
                }
            }
            _ => {}
        }
    }
    let operands = p.operand_words(args);
    let mut files = operands.as_slice();
    if !explicit {
        match files.split_first() {
            Some((script, rest)) => {
                if script.dynamic {
                    out.opaque.push(format!(
                        "the `sed` script `{}` is computed at run time",
                        script.raw
                    ));
                } else {
                    parts.push(script.text.clone());
                }
                files = rest;
            }
            None => return,
        }
    }
    let action = if in_place {
        Action::Write
    } else {
        Action::Read
    };
    for f in files {
        out.targets.push(ArgTarget::from_word(action, f, "sed"));
    }
    if parts.is_empty() {
        return;
    }
    let effects = match script_effects(&parts.join("\n")) {
        Ok(e) => e,
        Err(problem) => {
            out.opaque
                .push(format!("the `sed` script cannot be analysed ({problem})"));
            return;
        }
    };
    if sandbox {
        // `sed --sandbox` refuses scripts with `e`, `r` or `w`: nothing of them runs.
        return;
    }
    for c in effects.commands {
        out.scripts.push(Script::literal(&c, "sed e"));
    }
    for w in effects.writes {
        out.targets.push(ArgTarget::new(Action::Write, &w, "sed w"));
    }
    for r in effects.reads {
        out.targets.push(ArgTarget::new(Action::Read, &r, "sed r"));
    }
    out.opaque.extend(effects.unknown);
}

/// Where a `sed` script cannot be read; the message names the place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SedError {
    /// An address with no command after it.
    #[error("an address without a command")]
    AddressWithoutCommand,
    /// A `\c…c` address with nothing after the backslash.
    #[error("a `\\` address without a delimiter")]
    AddressWithoutDelimiter,
    /// A regex or replacement whose closing delimiter never comes.
    #[error("an unterminated `{0}` expression")]
    Unterminated(char),
    /// The script ends in a backslash.
    #[error("a script ending in `\\`")]
    TrailingBackslash,
    /// A line break inside a delimited expression.
    #[error("a newline inside a `{0}` expression")]
    NewlineInExpression(char),
    /// Text after a command that takes none.
    #[error("unexpected `{0}` after a command")]
    AfterCommand(char),
    /// `r`, `R`, `w` or `W` with no file name.
    #[error("`{0}` without a file name")]
    NoFileName(char),
    /// `s` or `y` with nothing after it.
    #[error("`{0}` without a delimiter")]
    NoDelimiter(char),
    /// A command letter GNU `sed` does not have.
    #[error("unknown command `{0}`")]
    UnknownCommand(char),
    /// `s` followed by a backslash or a line break.
    #[error("`s` with an invalid delimiter")]
    InvalidDelimiter,
    /// `s///w` with no file name.
    #[error("`s///w` without a file name")]
    SubstituteWithoutFileName,
}

/// Reads a GNU `sed` script and lists what it runs, writes and reads.
///
/// ```
/// use sayri_permissions::sed::script_effects;
/// let e = script_effects("1e rm -f x\n/a/w out.txt").unwrap();
/// assert_eq!(e.commands, ["rm -f x"]);
/// assert_eq!(e.writes, ["out.txt"]);
/// assert!(script_effects("1a\\\ne rm -rf x").unwrap().commands.is_empty());
/// ```
///
/// # Errors
/// The first place the script cannot be read (GNU `sed` would refuse it, or it uses a form this
/// reader does not follow), as a [`SedError`].
pub fn script_effects(script: &str) -> Result<SedEffects, SedError> {
    let mut r = Reader {
        chars: script.chars().collect(),
        pos: 0,
        effects: SedEffects::default(),
    };
    r.script()?;
    Ok(r.effects)
}

struct Reader {
    chars: Vec<char>,
    pos: usize,
    effects: SedEffects,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    /// The rest of the line (the newline is consumed, not returned).
    fn rest_of_line(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
            s.push(c);
        }
        s
    }

    fn script(&mut self) -> Result<(), SedError> {
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.pos += 1;
            }
            if self.peek().is_none() {
                return Ok(());
            }
            self.address()?;
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.pos += 1;
                self.skip_blanks();
                self.address()?;
            }
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.pos += 1;
                self.skip_blanks();
            }
            let Some(cmd) = self.next() else {
                return Err(SedError::AddressWithoutCommand);
            };
            self.command(cmd)?;
        }
    }

    /// One address: a line number (with `~step`), `$`, `+N`/`~N`, or a regex (`/re/`, `\cREc`)
    /// with its `I`/`M` flags. Nothing when none is written.
    fn address(&mut self) -> Result<(), SedError> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == '+' || c == '~' => {
                self.pos += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '~') {
                    self.pos += 1;
                }
            }
            Some('$') => self.pos += 1,
            Some('/') => {
                self.pos += 1;
                self.delimited('/')?;
                self.regex_flags();
            }
            Some('\\') => {
                self.pos += 1;
                let delim = self.next().ok_or(SedError::AddressWithoutDelimiter)?;
                self.delimited(delim)?;
                self.regex_flags();
            }
            _ => {}
        }
        Ok(())
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.pos += 1;
        }
    }

    /// Text up to the unescaped `delim` (consumed). A backslash escapes the next character;
    /// `\n` is a newline. Returns the text with escapes of the delimiter resolved.
    fn delimited(&mut self, delim: char) -> Result<String, SedError> {
        let mut s = String::new();
        loop {
            match self.next() {
                None => return Err(SedError::Unterminated(delim)),
                Some(c) if c == delim => return Ok(s),
                Some('\\') => match self.next() {
                    None => return Err(SedError::TrailingBackslash),
                    Some(c) if c == delim => s.push(c),
                    Some('\n') => s.push('\n'),
                    Some(c) => {
                        s.push('\\');
                        s.push(c);
                    }
                },
                Some('\n') if delim != '\n' => {
                    return Err(SedError::NewlineInExpression(delim));
                }
                Some(c) => s.push(c),
            }
        }
    }

    /// After a command: blanks, then `;`, a newline, `}`, `#` or the end.
    fn end_of_command(&mut self) -> Result<(), SedError> {
        self.skip_blanks();
        match self.peek() {
            None | Some(';' | '\n' | '}' | '#') => Ok(()),
            Some(c) => Err(SedError::AfterCommand(c)),
        }
    }

    fn command(&mut self, cmd: char) -> Result<(), SedError> {
        match cmd {
            '{' | '}' => Ok(()),
            '#' => {
                self.rest_of_line();
                Ok(())
            }
            // Labels end at a blank, `;` or newline; a command may follow.
            ':' | 'b' | 't' | 'T' | 'v' => {
                self.skip_blanks();
                while self
                    .peek()
                    .is_some_and(|c| !matches!(c, ';' | '\n' | ' ' | '\t'))
                {
                    self.pos += 1;
                }
                Ok(())
            }
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {
                self.end_of_command()
            }
            'l' | 'L' | 'q' | 'Q' => {
                self.skip_blanks();
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                self.end_of_command()
            }
            'a' | 'i' | 'c' => {
                self.text();
                Ok(())
            }
            'r' | 'R' | 'w' | 'W' => {
                self.skip_blanks();
                let file = self.rest_of_line();
                if file.is_empty() {
                    return Err(SedError::NoFileName(cmd));
                }
                if matches!(cmd, 'w' | 'W') {
                    self.write(file);
                } else {
                    self.effects.reads.push(file);
                }
                Ok(())
            }
            'e' => {
                self.skip_blanks();
                let command = if matches!(self.peek(), None | Some('\n')) {
                    String::new()
                } else {
                    self.text()
                };
                if command.trim().is_empty() {
                    self.effects.unknown.push(
                        "`sed e` runs the pattern space, which is known only at run time".into(),
                    );
                } else {
                    self.effects.commands.push(command);
                }
                Ok(())
            }
            's' => self.substitute(),
            'y' => {
                let delim = self.next().ok_or(SedError::NoDelimiter('y'))?;
                self.delimited(delim)?;
                self.delimited(delim)?;
                self.end_of_command()
            }
            c => Err(SedError::UnknownCommand(c)),
        }
    }

    fn write(&mut self, file: String) {
        if file != "/dev/stdout" && file != "/dev/stderr" {
            self.effects.writes.push(file);
        }
    }

    /// The text of `a`, `i`, `c` (and the command of `e`): one line, continued while a line
    /// ends in a backslash, with `\x` read as `x`; the classic form puts it on the lines after
    /// `a\`.
    fn text(&mut self) -> String {
        self.skip_blanks();
        if self.peek() == Some('\\') {
            self.pos += 1;
            self.skip_blanks();
            if self.peek() == Some('\n') {
                self.pos += 1;
            }
        }
        let mut text = String::new();
        loop {
            match self.next() {
                None | Some('\n') => return text,
                Some('\\') => {
                    if let Some(c) = self.next() {
                        text.push(c);
                    }
                }
                Some(c) => text.push(c),
            }
        }
    }

    /// `s/REGEX/REPLACEMENT/FLAGS`. With the `e` flag the pattern space after the substitution
    /// is run: it is the replacement itself only when the regex takes the whole pattern space
    /// and the replacement holds no reference to the match.
    fn substitute(&mut self) -> Result<(), SedError> {
        let delim = self.next().ok_or(SedError::NoDelimiter('s'))?;
        if delim == '\n' || delim == '\\' {
            return Err(SedError::InvalidDelimiter);
        }
        let regex = self.delimited(delim)?;
        let replacement = self.delimited(delim)?;
        let mut exec = false;
        let mut multiline = false;
        loop {
            match self.peek() {
                Some('g' | 'p' | 'i' | 'I') => self.pos += 1,
                Some('m' | 'M') => {
                    multiline = true;
                    self.pos += 1;
                }
                Some('e') => {
                    exec = true;
                    self.pos += 1;
                }
                Some(c) if c.is_ascii_digit() => self.pos += 1,
                Some('w') => {
                    self.pos += 1;
                    self.skip_blanks();
                    let file = self.rest_of_line();
                    if file.is_empty() {
                        return Err(SedError::SubstituteWithoutFileName);
                    }
                    self.write(file);
                    break;
                }
                _ => {
                    self.end_of_command()?;
                    break;
                }
            }
        }
        if exec {
            let whole = matches!(regex.as_str(), ".*" | "^.*" | ".*$" | "^.*$") && !multiline;
            match literal_replacement(&replacement) {
                Some(command) if whole => self.effects.commands.push(command),
                _ => self.effects.unknown.push(format!(
                    "`s/{regex}/{replacement}/e` runs the pattern space after the substitution, which depends on the input"
                )),
            }
        }
        Ok(())
    }
}

/// The replacement text when it is literal: `\x` escapes resolved (`\n` is a newline), no `&`,
/// `\1`…`\9` or case conversion (`\U`, `\L`, `\u`, `\l`, `\E`).
fn literal_replacement(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '&' => return None,
            '\\' => match chars.next()? {
                d if d.is_ascii_digit() => return None,
                'U' | 'L' | 'u' | 'l' | 'E' => return None,
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_run_write_or_read() {
        let e = script_effects("1e rm -f victim.txt").unwrap();
        assert_eq!(e.commands, ["rm -f victim.txt"]);
        let e = script_effects("s/.*/touch \\/tmp\\/x/e").unwrap();
        assert_eq!(e.commands, ["touch /tmp/x"]);
        let e = script_effects("s/a/b/e").unwrap();
        assert!(e.commands.is_empty() && e.unknown.len() == 1, "{e:?}");
        let e = script_effects("$!N;s/x/y/gw out\nr in.txt").unwrap();
        assert_eq!(
            (e.writes, e.reads),
            (vec!["out".into()], vec!["in.txt".into()])
        );
        let e = script_effects("/x/{p;e\n}").unwrap();
        assert_eq!(e.unknown.len(), 1);
    }

    #[test]
    fn harmless_scripts_and_text() {
        for s in [
            "1,20p",
            "s/a/b/g;s|c|d|2",
            "/^#/d",
            "$a\\\nlast line",
            "1i hello; e rm x",
            "y/abc/xyz/",
            "\\,x,d",
            "0~3{n;p}",
            ":a;N;$!ba;s/\\n/ /g",
            "ba p",
        ] {
            let e = script_effects(s).unwrap_or_else(|err| panic!("{s}: {err}"));
            assert_eq!(e, SedEffects::default(), "{s}");
        }
        // A label ends at `;`: the `e` after it runs.
        assert_eq!(script_effects(":a;e rm x").unwrap().commands, ["rm x"]);
        // GNU sed ends `s/[/` at the `/` inside the brackets, leaving `/` where a flag belongs.
        assert!(script_effects("1~2 s/[/]//").is_err());
    }
}
