//! `awk` (`gawk`, `mawk`, `nawk`, BusyBox `awk`): the parts of its program that run commands or
//! touch files.
//!
//! An awk program runs shell commands with `system(CMD)`, `CMD | getline` and `print … | CMD`
//! (gawk's `|&` coprocesses too), writes files with `print … > FILE` / `>> FILE`, and reads them
//! with `getline < FILE`. The program text is tokenised (strings, regex literals, comments) and
//! each of those forms is reported: a command or file written as string literals (or a
//! concatenation of them) is known and judged; anything computed (`system(cmd)`,
//! `print > $1 ".txt"`) is not analysable. Output piped into a shell or interpreter
//! (`print | "sh"`) runs data as a program and is not analysable either. A program read from a
//! file (`-f`), gawk's `@load`/`@include`, and gawk's network files (`/inet/…`) are not
//! analysable; `--sandbox` turns all of these off.

use super::options::{Order, Parsed, Spec, parse};
use super::rule::Action;
use super::shell::Word;
use super::wrappers::{ArgTarget, Script, Unwrapped};

/// Options of the awk family that take an argument. gawk's `-d`, `-D`, `-o`, `-p` and `-L` take
/// an optional attached one.
const OPTIONS: Spec<'static> = Spec {
    short_with_arg: "fFvWeEil",
    long_with_arg: &[
        "file",
        "field-separator",
        "assign",
        "source",
        "include",
        "load",
        "exec",
    ],
    short_optional_arg: "dDopL",
};

/// What an awk program does besides printing to standard output.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AwkEffects {
    /// Commands run whose output or status awk uses (`system`, `| getline`).
    pub commands: Vec<String>,
    /// Commands that receive awk's output on standard input (`print | CMD`).
    pub fed: Vec<String>,
    /// Files written.
    pub writes: Vec<String>,
    /// Files read with `getline <`.
    pub reads: Vec<String>,
    /// What runs or is touched but is known only at run time, described.
    pub unknown: Vec<String>,
}

/// Analyses an awk invocation (`args` after the program name) into `out`.
pub fn analyse(name: &str, args: &[Word], out: &mut Unwrapped) {
    let p = parse(args, OPTIONS, Order::InOrder);
    let sandbox = p.has(&["-S", "--sandbox"]);
    let (mut sources, from_option) = option_effects(name, &p, args, sandbox, out);
    let mut operands = p.operand_words(args).into_iter();
    if !from_option {
        match operands.next() {
            Some(w) if w.dynamic => out.opaque.push(format!(
                "the `{name}` program `{}` is computed at run time",
                w.raw
            )),
            Some(w) => sources.push(w.text.clone()),
            None => return,
        }
    }
    for w in operands {
        let assignment = w.text.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        if !assignment && w.text != "-" {
            out.targets
                .push(ArgTarget::from_word(Action::Read, w, name));
        }
    }
    if sandbox || sources.is_empty() {
        return;
    }
    report_program(name, program_effects(&sources.join("\n")), out);
}

/// Reports what awk's options do (a program read from a file, a loaded extension, the debugger,
/// dump and profile files written) and collects the program texts given with `-e`; `true` with
/// them when the program comes from an option rather than the first operand.
fn option_effects(
    name: &str,
    p: &Parsed,
    args: &[Word],
    sandbox: bool,
    out: &mut Unwrapped,
) -> (Vec<String>, bool) {
    let mut sources = Vec::new();
    let mut from_option = false;
    for o in &p.options {
        let value = o.value.clone().unwrap_or_default();
        match o.name.as_str() {
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" => {
                from_option = true;
                out.opaque.push(format!(
                    "`{name} {} {value}` reads its program from a file whose contents are not known here",
                    o.name
                ));
                if !value.is_empty() && value != "-" {
                    out.targets
                        .push(ArgTarget::new(Action::Read, &value, &format!("{name} -f")));
                }
            }
            "-W" if !value.is_empty() && "exec".starts_with(value.as_str()) => {
                from_option = true;
                out.opaque.push(format!(
                    "`{name} -W {value}` reads its program from a file whose contents are not known here"
                ));
            }
            "-l" | "--load" if !sandbox => out.opaque.push(format!(
                "`{name} {} {value}` loads a compiled extension",
                o.name
            )),
            "-D" | "--debug" => out.opaque.push(format!(
                "`{name} {}` runs the awk debugger, which takes commands at run time",
                o.name
            )),
            "-e" | "--source" => {
                from_option = true;
                match Parsed::carrier(o, args) {
                    Some(w) if w.dynamic => out.opaque.push(format!(
                        "the `{name}` program `{}` is computed at run time",
                        w.raw
                    )),
                    Some(w) => sources.push(w.text),
                    None => {}
                }
            }
            "-d" | "--dump-variables" | "-o" | "--pretty-print" | "-p" | "--profile" => {
                let default = if matches!(o.name.as_str(), "-d" | "--dump-variables") {
                    "awkvars.out"
                } else {
                    "awkprof.out"
                };
                let file = o.value.as_deref().unwrap_or(default);
                if file != "/dev/stdout" && file != "/dev/stderr" && file != "-" {
                    out.targets.push(ArgTarget::new(
                        Action::Write,
                        file,
                        &format!("{name} {}", o.name),
                    ));
                }
            }
            _ => {}
        }
    }
    (sources, from_option)
}

/// Reports the commands, piped-into programs, written and read files of an awk program.
fn report_program(name: &str, effects: AwkEffects, out: &mut Unwrapped) {
    for c in effects.commands {
        out.scripts
            .push(Script::literal(&c, &format!("{name} system")));
    }
    for c in effects.fed {
        if let Some(reason) = super::arg_programs::runs_its_input(&c) {
            out.opaque
                .push(format!("`{name}` pipes its output into {reason}"));
        }
        out.scripts
            .push(Script::literal(&c, &format!("{name} print |")));
    }
    for w in effects.writes {
        out.targets.push(ArgTarget::new(
            Action::Write,
            &w,
            &format!("{name} print >"),
        ));
    }
    for r in effects.reads {
        out.targets.push(ArgTarget::new(
            Action::Read,
            &r,
            &format!("{name} getline <"),
        ));
    }
    out.opaque.extend(effects.unknown);
}

/// Lists what an awk program runs, writes and reads.
///
/// ```
/// use sayri_permissions::awk::program_effects;
/// let e = program_effects(r#"BEGIN { system("rm -f x"); "id" | getline u; print u > "out" }"#);
/// assert_eq!(e.commands, ["rm -f x", "id"]);
/// assert_eq!(e.writes, ["out"]);
/// assert!(program_effects(r#"{ print $1 > 2 ? "a" : "b" }"#).unknown.len() == 1);
/// assert!(program_effects(r#"$1 > 5 { print ($2 > 1) }"#) == Default::default());
/// ```
pub fn program_effects(program: &str) -> AwkEffects {
    let mut effects = AwkEffects::default();
    let tokens = match tokenize(program) {
        Ok(t) => t,
        Err(problem) => {
            effects
                .unknown
                .push(format!("the awk program cannot be analysed ({problem})"));
            return effects;
        }
    };
    Analysis {
        tokens: &tokens,
        effects: &mut effects,
    }
    .run();
    effects
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Str(String),
    Regex,
    Num,
    Ident(String),
    Op(&'static str),
    Newline,
}

/// Operators, longest first.
const OPS: &[&str] = &[
    "**=", "|&", "||", "&&", ">>", ">=", "<=", "==", "!=", "!~", "++", "--", "+=", "-=", "*=",
    "/=", "%=", "^=", "**", "|", ">", "<", "!", "~", "+", "-", "*", "/", "%", "^", "?", ":", ",",
    ";", "{", "}", "(", ")", "[", "]", "$", "=", "@",
];

const KEYWORDS: &[&str] = &[
    "BEGIN",
    "END",
    "BEGINFILE",
    "ENDFILE",
    "print",
    "printf",
    "getline",
    "if",
    "else",
    "while",
    "for",
    "do",
    "in",
    "return",
    "delete",
    "exit",
    "next",
    "nextfile",
    "function",
    "func",
    "break",
    "continue",
    "switch",
    "case",
    "default",
];

/// Whether a `/` after `prev` starts a regex (it follows no operand).
fn regex_may_follow(prev: Option<&Tok>) -> bool {
    match prev {
        None | Some(Tok::Newline) => true,
        Some(Tok::Str(_) | Tok::Num | Tok::Regex) => false,
        Some(Tok::Ident(name)) => KEYWORDS.contains(&name.as_str()) && name != "getline",
        Some(Tok::Op(op)) => !matches!(*op, ")" | "]" | "$" | "++" | "--"),
    }
}

/// Where an awk program cannot be split into tokens.
#[derive(Debug, thiserror::Error)]
enum TokenError {
    /// A character that starts no token.
    #[error("unexpected `{0}`")]
    Unexpected(char),
    /// A `string` or `regex` literal with a line break inside.
    #[error("a {0} broken by a newline")]
    Broken(&'static str),
    /// A `string` or `regex` literal that never closes.
    #[error("an unterminated {0}")]
    Unterminated(&'static str),
}

fn tokenize(src: &str) -> Result<Vec<Tok>, TokenError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                toks.push(Tok::Newline);
                i += 1;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                let (s, next) = string(&chars, i + 1)?;
                toks.push(Tok::Str(s));
                i = next;
            }
            '/' if regex_may_follow(toks.last()) => {
                i = regex_end(&chars, i + 1)?;
                toks.push(Tok::Regex);
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                toks.push(Tok::Num);
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                toks.push(Tok::Ident(chars[start..i].iter().collect()));
            }
            _ => {
                let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
                let op = OPS
                    .iter()
                    .find(|op| rest.starts_with(**op))
                    .ok_or(TokenError::Unexpected(c))?;
                toks.push(Tok::Op(op));
                i += op.chars().count();
            }
        }
    }
    Ok(toks)
}

/// A string literal's value (escapes resolved) and the index after its closing quote.
fn string(chars: &[char], mut i: usize) -> Result<(String, usize), TokenError> {
    let mut s = String::new();
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok((s, i + 1)),
            '\\' => {
                i += 1;
                let Some(&e) = chars.get(i) else { break };
                match e {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    'a' => s.push('\u{7}'),
                    'b' => s.push('\u{8}'),
                    'f' => s.push('\u{c}'),
                    'v' => s.push('\u{b}'),
                    '\n' => {}
                    '0'..='7' => {
                        let mut v = 0u32;
                        let mut k = 0;
                        while k < 3 && chars.get(i).is_some_and(|d| ('0'..='7').contains(d)) {
                            v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                            i += 1;
                            k += 1;
                        }
                        s.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                        continue;
                    }
                    other => s.push(other),
                }
                i += 1;
            }
            '\n' => return Err(TokenError::Broken("string")),
            c => {
                s.push(c);
                i += 1;
            }
        }
    }
    Err(TokenError::Unterminated("string"))
}

/// The index after a regex literal's closing `/` (brackets may hold `/`).
fn regex_end(chars: &[char], mut i: usize) -> Result<usize, TokenError> {
    let mut bracket = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' if !bracket => {
                bracket = true;
                // `[]…]` and `[^]…]`: a leading `]` is literal.
                if chars.get(i + 1) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    i += 1;
                }
            }
            ']' if bracket => bracket = false,
            '/' if !bracket => return Ok(i + 1),
            '\n' => return Err(TokenError::Broken("regex")),
            _ => {}
        }
        i += 1;
    }
    Err(TokenError::Unterminated("regex"))
}

/// Tokens that end an expression (where a command string or file name stops).
fn ends_expression(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Newline | Tok::Op(";" | "}" | "{" | "," | "||" | "&&" | "?" | ":" | "=")
    ) || matches!(t, Tok::Ident(k) if KEYWORDS.contains(&k.as_str()) && k != "getline")
}

struct Analysis<'a> {
    tokens: &'a [Tok],
    effects: &'a mut AwkEffects,
}

impl Analysis<'_> {
    fn run(&mut self) {
        let t = self.tokens;
        let mut depth = 0usize;
        // Paren depth of the `print`/`printf` statement being read, if any.
        let mut print_depth: Option<usize> = None;
        for i in 0..t.len() {
            match &t[i] {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") => depth = depth.saturating_sub(1),
                _ => {}
            }
            if print_depth.is_some_and(|d| depth < d || (depth == d && ends_statement(&t[i]))) {
                print_depth = None;
            }
            match &t[i] {
                Tok::Ident(k) if k == "print" || k == "printf" => print_depth = Some(depth),
                Tok::Ident(k) if k == "system" && t.get(i + 1) == Some(&Tok::Op("(")) => {
                    self.system(i + 1);
                }
                Tok::Ident(k) if k == "getline" => self.getline_input(i),
                Tok::Op("|" | "|&") => {
                    if matches!(t.get(i + 1), Some(Tok::Ident(k)) if k == "getline") {
                        self.command_before(i);
                    } else {
                        self.command_after(i);
                    }
                }
                Tok::Op(">" | ">>") if print_depth == Some(depth) => self.write_after(i),
                Tok::Op("@") => {
                    if let Some(Tok::Ident(k)) = t.get(i + 1)
                        && (k == "load" || k == "include")
                    {
                        self.effects
                            .unknown
                            .push(format!("gawk's `@{k}` loads code that is not known here"));
                    }
                }
                _ => {}
            }
        }
    }

    /// gawk's special files `/inet/…` are network connections.
    fn network(&mut self, file: &str) {
        self.effects
            .unknown
            .push(format!("gawk opens the network connection `{file}`"));
    }

    /// `system(ARGS)` with the `(` at `open`.
    fn system(&mut self, open: usize) {
        let mut depth = 0;
        let mut close = None;
        for (j, tok) in self.tokens.iter().enumerate().skip(open) {
            match tok {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(j);
                        break;
                    }
                }
                _ => {}
            }
        }
        match close.and_then(|c| literal(&self.tokens[open + 1..c])) {
            Some(cmd) => self.effects.commands.push(cmd),
            None => self
                .effects
                .unknown
                .push("awk's `system()` runs a command computed at run time".into()),
        }
    }

    /// `EXPR | getline`: the command is the string expression just before the `|` at `bar`.
    fn command_before(&mut self, bar: usize) {
        let mut depth = 0usize;
        let mut start = bar;
        let mut computed = false;
        while start > 0 {
            match &self.tokens[start - 1] {
                Tok::Str(_) => {}
                Tok::Op(")") => depth += 1,
                Tok::Op("(") if depth > 0 => depth -= 1,
                t if depth == 0 && (*t == Tok::Op("(") || ends_expression(t)) => break,
                _ => {
                    computed = true;
                    break;
                }
            }
            start -= 1;
        }
        let cmd = if computed || depth != 0 {
            None
        } else {
            literal(&self.tokens[start..bar])
        };
        match cmd {
            Some(c) if c.starts_with("/inet") => self.network(&c),
            Some(c) => self.effects.commands.push(c),
            None => self
                .effects
                .unknown
                .push("awk's `| getline` runs a command computed at run time".into()),
        }
    }

    /// `print … | EXPR`: the command is the expression after the `|` at `bar`.
    fn command_after(&mut self, bar: usize) {
        match self.expression_after(bar) {
            Some(c) if c.starts_with("/inet") => self.network(&c),
            Some(c) => self.effects.fed.push(c),
            None => self
                .effects
                .unknown
                .push("awk pipes its output into a command computed at run time".into()),
        }
    }

    /// `print … > EXPR` / `>> EXPR`.
    fn write_after(&mut self, at: usize) {
        match self.expression_after(at) {
            Some(f) if f.starts_with("/inet") => self.network(&f),
            Some(f) if matches!(f.as_str(), "/dev/stdout" | "/dev/stderr" | "-") => {}
            Some(f) => self.effects.writes.push(f),
            None => self
                .effects
                .unknown
                .push("awk writes to a file named at run time".into()),
        }
    }

    /// `getline [VAR] < FILE`: the file read.
    fn getline_input(&mut self, at: usize) {
        let t = self.tokens;
        let mut j = at + 1;
        // An optional variable: NAME, NAME[…] or $EXPR.
        match t.get(j) {
            Some(Tok::Ident(k)) if !KEYWORDS.contains(&k.as_str()) => {
                j += 1;
                if t.get(j) == Some(&Tok::Op("[")) {
                    while j < t.len() && t[j] != Tok::Op("]") {
                        j += 1;
                    }
                    j += 1;
                }
            }
            Some(Tok::Op("$")) => j += 2,
            _ => {}
        }
        if t.get(j) != Some(&Tok::Op("<")) {
            return;
        }
        match t.get(j + 1) {
            Some(Tok::Str(f)) if f.starts_with("/inet") => self.network(f),
            Some(Tok::Str(f)) if f != "-" && f != "/dev/stdin" => {
                self.effects.reads.push(f.clone())
            }
            Some(Tok::Str(_)) => {}
            _ => self
                .effects
                .unknown
                .push("awk reads a file named at run time".into()),
        }
    }

    /// The string value of the expression after index `at`, up to where the statement or
    /// enclosing parentheses end; `None` unless it is made only of string literals.
    fn expression_after(&self, at: usize) -> Option<String> {
        let mut depth = 0usize;
        let mut end = at + 1;
        while let Some(tok) = self.tokens.get(end) {
            match tok {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") if depth == 0 => break,
                Tok::Op(")") => depth -= 1,
                t if depth == 0 && (ends_expression(t) || matches!(t, Tok::Op("|" | "|&"))) => {
                    break;
                }
                _ => {}
            }
            end += 1;
        }
        literal(&self.tokens[at + 1..end])
    }
}

fn ends_statement(t: &Tok) -> bool {
    matches!(t, Tok::Newline | Tok::Op(";" | "}" | "{"))
}

/// The concatenated value of `tokens` when they are only string literals and parentheses.
fn literal(tokens: &[Tok]) -> Option<String> {
    let mut out = String::new();
    let mut any = false;
    for t in tokens {
        match t {
            Tok::Str(s) => {
                out.push_str(s);
                any = true;
            }
            Tok::Op("(" | ")") => {}
            _ => return None,
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_pipes_and_files() {
        let e = program_effects(r#"BEGIN{system("rm -f victim.txt")}"#);
        assert_eq!(e.commands, ["rm -f victim.txt"]);
        let e = program_effects(r#"BEGIN{"id" | getline u; print u}"#);
        assert_eq!(e.commands, ["id"]);
        let e = program_effects(r#"{print | "sh"}"#);
        assert_eq!(e.fed, ["sh"]);
        let e = program_effects(r#"{print > "/home/u/.config/sayri/routines.json"}"#);
        assert_eq!(e.writes, ["/home/u/.config/sayri/routines.json"]);
        let e = program_effects(r#"{ printf("%s\n", $0) >> ("out" ".txt") }"#);
        assert_eq!(e.writes, ["out.txt"]);
        let e = program_effects(r#"BEGIN { while ((getline line < "/etc/shadow") > 0) n++ }"#);
        assert_eq!(e.reads, ["/etc/shadow"]);
        let e = program_effects(r#"BEGIN { ("date +%s") | getline t; close("date +%s") }"#);
        assert_eq!(e.commands, ["date +%s"]);
    }

    #[test]
    fn computed_commands_and_files_are_unknown() {
        for p in [
            "{ system($0) }",
            r#"{ cmd = "rm " $1; system(cmd) }"#,
            r#"{ "ls " dir | getline x }"#,
            "{ print | cmd }",
            r#"{ print > $1 ".txt" }"#,
            "{ getline x < f }",
            r#"BEGIN { print "x" |& "/inet/tcp/0/example.org/80" }"#,
            r#"@load "filefuncs""#,
            "BEGIN { system(",
        ] {
            let e = program_effects(p);
            assert!(!e.unknown.is_empty(), "{p}: {e:?}");
        }
    }

    #[test]
    fn comparisons_regexes_and_strings_are_not_redirections() {
        for p in [
            "{print $1}",
            "$3 > 100 { print $1 }",
            "{ if ($1 > 2) print ($1 > 3) }",
            "/a|b/ { n++ } END { print n }",
            r#"{ gsub(/[|>]/, "x"); print }"#,
            r#"{ print "a > b | c" }"#,
            "# system(\"rm x\")\n{ print }",
            "{ x = a / b / c; print x }",
            "{ print a || b }",
        ] {
            assert_eq!(program_effects(p), AwkEffects::default(), "{p}");
        }
    }
}
