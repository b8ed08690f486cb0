//! Bash analysis: turns a command string into the simple commands bash would run.
//!
//! The text is parsed with the `tree-sitter-bash` grammar and walked completely: pipelines,
//! `;`/`&&`/`||`/`&`/newline lists, subshells, `{ }` groups, `if`/`for`/`while`/`case`, function
//! bodies, `$(…)`, backticks, `<(…)`/`>(…)`, expansions and heredoc bodies. Every simple command
//! found anywhere becomes a [`SimpleCommand`] whose words are taken **as bash sees them**: quotes
//! removed, backslash escapes resolved, `$'…'` decoded, brace expansion and `$IFS` splitting done
//! ([`super::expansion`]). A word whose value is only known at run time (expansions,
//! substitutions) or decided by the file system (unquoted globs) is marked `dynamic`.
//!
//! After the walk, each command is unwrapped (see [`super::wrappers`]): `sudo`, `env`, `xargs`,
//! … yield the inner command as another layer; literal scripts given to `bash -c`, `sh -c`,
//! `eval`, `su -c`, `watch`, here-strings fed to a shell, … and the commands that programs such
//! as `sed`, `awk`, `find` and `git` run from their arguments ([`super::arg_programs`]) are
//! analysed recursively (up to [`MAX_DEPTH`] levels), and so are the values of variables that
//! name programs (`GIT_SSH_COMMAND`, `PAGER`, …). What cannot be analysed is recorded in
//! [`Analysis::opaque`]; the evaluator turns that into at least `ask`.
//!
//! One parser is kept per thread and reused.

use super::assignments;
use super::expansion::{self, Atom};
use super::git;
use super::wrappers::{self, Unwrapped};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

/// Nesting limit for scripts inside scripts (`bash -c "sh -c '…'"`); deeper is not analysed.
pub const MAX_DEPTH: usize = 8;

/// Limit on the number of simple commands analysed for one input; more is not analysed.
pub const MAX_COMMANDS: usize = 2000;

/// Limit on the depth of the syntax tree (nested substitutions, groups, expansions) analysed;
/// deeper text is not analysed. Keeps the recursive walk well inside a 2 MiB thread stack.
pub const MAX_TREE_DEPTH: usize = 256;

/// One word (command name or argument) after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The value bash would pass, as far as it is known statically. Dynamic parts keep their
    /// source text (e.g. `$HOME`).
    pub text: String,
    /// The source text of the word.
    pub raw: String,
    /// Part of the value is computed at run time (expansion, substitution) or decided by the
    /// file system (an unquoted glob).
    pub dynamic: bool,
    /// An unquoted glob character (`*`, `?`, `[`) is present.
    pub glob: bool,
    /// The whole word is a process substitution `<(…)` / `>(…)`.
    pub process_substitution: bool,
    /// Indices (into [`Analysis::commands`]) of the commands inside substitutions of this word.
    pub inner: Vec<usize>,
    /// When part of the value is known only at run time: the word as a glob in which each such
    /// part is `*` (`/etc/sha$X` → `/etc/sha*`), to test which protected paths it might name.
    pub shape: Option<String>,
}

impl Word {
    /// A literal word (used by wrappers that split strings, and by tests).
    pub fn literal(text: &str) -> Self {
        Word {
            text: text.to_string(),
            raw: text.to_string(),
            ..Word::default()
        }
    }
}

/// `NAME=value` before a command (or on its own, or after `export`/`env`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Variable name.
    pub name: String,
    /// Value after quote removal.
    pub value: Word,
}

/// A redirection such as `> file`, `2>> log`, `< in`, `<<< word`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// Operator text: `>`, `>>`, `<`, `&>`, `>|`, `<>`, `>&`, `<&`, `<<<`, `<<`, `<<-`.
    pub op: String,
    /// Explicit file descriptor, if any (`2` in `2>`).
    pub fd: Option<String>,
    /// Target word (file, descriptor number, here-string, or the heredoc delimiter).
    pub target: Word,
}

/// Where a command's standard input comes from, as far as the text says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stdin {
    /// Inherited (or from a pipe — see [`SimpleCommand::pipes`]).
    #[default]
    Inherited,
    /// A heredoc; `literal` when the delimiter was quoted (no expansion in the body).
    Heredoc {
        /// Body text.
        body: String,
        /// Whether the body is taken literally.
        literal: bool,
    },
    /// A here-string.
    HereString(Word),
    /// A file or process substitution via `<`.
    File(Word),
}

/// One simple command as bash would run it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// Source text of the command.
    pub text: String,
    /// Leading `NAME=value` assignments (not part of the matched text).
    pub assignments: Vec<Assignment>,
    /// Command word and arguments.
    pub words: Vec<Word>,
    /// Redirections written on this command.
    pub redirects: Vec<Redirect>,
    /// Standard input source.
    pub stdin: Stdin,
    /// Pipeline membership, outermost first: `(pipeline id, stage index)`.
    pub pipes: Vec<(usize, usize)>,
    /// Script nesting depth (0 = the text given; 1 = inside `bash -c '…'`, …).
    pub depth: usize,
    /// Runs in the background (`cmd &`, or inside a backgrounded list, group or subshell).
    pub background: bool,
    /// The command and the commands it wraps (see [`super::wrappers`]); `layers[0]` is `words`.
    pub unwrapped: Unwrapped,
}

impl SimpleCommand {
    /// The programs this command runs: the base name of each layer's command word.
    pub fn programs(&self) -> Vec<String> {
        self.unwrapped
            .layers
            .iter()
            .filter_map(|l| l.first())
            .map(|w| base_name(&w.text).to_string())
            .collect()
    }

    /// The innermost layer (the command that finally runs).
    pub fn innermost(&self) -> &[Word] {
        self.unwrapped
            .layers
            .last()
            .map(Vec::as_slice)
            .unwrap_or(&self.words)
    }
}

/// The last `/`-separated part of a command word or path: `/usr/bin/rm` → `rm`, `rm` → `rm`,
/// `dir/` → `` (callers trim a trailing `/` first when they want the directory's name).
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Result of analysing one command string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    /// Every simple command found, in discovery order (inner substitutions before their parent).
    pub commands: Vec<SimpleCommand>,
    /// Assignments that stand alone or follow `export`/`declare`/`local`/`readonly`
    /// (they change the environment of every later command).
    pub standalone_assignments: Vec<Assignment>,
    /// Every redirection in the text (also those on `{ }` groups, loops and subshells).
    pub redirects: Vec<Redirect>,
    /// Reasons why part of the text cannot be analysed statically.
    pub opaque: Vec<String>,
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse(src: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(src, None)
    })
}

/// Analyses `command` (bash syntax). Never fails: what cannot be analysed is listed in
/// [`Analysis::opaque`].
///
/// ```
/// use sayri_permissions::shell::analyse;
/// let a = analyse(r#"cd /tmp && sudo \rm -rf "x" | tee log"#);
/// let programs: Vec<Vec<String>> = a.commands.iter().map(|c| c.programs()).collect();
/// assert_eq!(programs, [vec!["cd"], vec!["sudo", "rm"], vec!["tee"]]);
/// assert!(a.opaque.is_empty());
/// ```
pub fn analyse(command: &str) -> Analysis {
    let mut walker = Walker::default();
    walker.walk_source(command, 0);
    let mut i = 0;
    let mut standalone = 0;
    loop {
        // Exported or standalone variables that name a program (`export GIT_PAGER=…`).
        while standalone < walker.out.standalone_assignments.len() {
            let earlier = walker.out.standalone_assignments[..standalone].to_vec();
            let a = walker.out.standalone_assignments[standalone].clone();
            standalone += 1;
            walker.walk_program_variable(&a, &earlier, 0);
        }
        if i >= walker.out.commands.len() {
            break;
        }
        if walker.out.commands.len() > MAX_COMMANDS {
            walker
                .out
                .opaque
                .push(format!("more than {MAX_COMMANDS} commands"));
            break;
        }
        let cmd = &walker.out.commands[i];
        let unwrapped = wrappers::unwrap(&cmd.words, &cmd.stdin);
        let (depth, background) = (cmd.depth, cmd.background);
        let assignments: Vec<Assignment> = cmd
            .assignments
            .iter()
            .chain(unwrapped.assignments.iter())
            .cloned()
            .collect();
        for (k, a) in assignments.iter().enumerate() {
            walker.walk_program_variable(a, &assignments[..k], depth);
        }
        for script in &unwrapped.scripts {
            walker.walk_script(script, depth);
        }
        for nested in &unwrapped.commands {
            walker.push_nested(nested, depth, background);
        }
        walker.out.opaque.extend(unwrapped.opaque.iter().cloned());
        walker.out.commands[i].unwrapped = unwrapped;
        i += 1;
    }
    walker.out
}

#[derive(Default)]
struct Walker {
    out: Analysis,
    next_pipeline: usize,
}

#[derive(Clone)]
struct Ctx<'s> {
    src: &'s str,
    depth: usize,
    pipes: Vec<(usize, usize)>,
    /// The command runs in the background (`cmd &`, or inside a backgrounded list or group).
    background: bool,
    /// `$IFS` is bash's default here (the script never changes `IFS`).
    ifs_known: bool,
}

impl Walker {
    /// Walks a script found in a command at `depth` (or records why it cannot be). Words
    /// holding one of the script's placeholders are run-time values.
    fn walk_script(&mut self, script: &wrappers::Script, depth: usize) {
        match &script.text {
            Some(text) if depth < MAX_DEPTH => {
                let before = self.out.commands.len();
                self.walk_source(text, depth + 1);
                if !script.placeholders.is_empty() {
                    for cmd in &mut self.out.commands[before..] {
                        for w in &mut cmd.words {
                            mark_placeholders(w, &script.placeholders);
                        }
                    }
                }
            }
            Some(_) => self.out.opaque.push(format!(
                "scripts nested more than {MAX_DEPTH} levels deep ({})",
                script.via
            )),
            None => self.out.opaque.push(format!(
                "the script run by `{}` is computed at run time",
                script.via
            )),
        }
    }

    /// A command given as words in another command's arguments becomes a simple command.
    fn push_nested(&mut self, nested: &wrappers::NestedCommand, depth: usize, background: bool) {
        if depth >= MAX_DEPTH {
            self.opaque_once(&format!(
                "commands nested more than {MAX_DEPTH} levels deep ({})",
                nested.via
            ));
            return;
        }
        let text = nested
            .words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        self.out.commands.push(SimpleCommand {
            text,
            words: nested.words.clone(),
            depth: depth + 1,
            background,
            ..SimpleCommand::default()
        });
    }

    /// The value of a variable that names a program (`GIT_SSH_COMMAND`, `PAGER`, …) is a
    /// command of its own, and so is the value of a git setting given in the environment
    /// (`GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=CMD`) once both halves (`a` and one of
    /// `earlier`) are seen.
    fn walk_program_variable(&mut self, a: &Assignment, earlier: &[Assignment], depth: usize) {
        if let Some(command) = assignments::program_in(a) {
            self.walk_script(&wrappers::Script::literal(&command, &a.name), depth);
        }
        if let Some((key, value)) = assignments::git_config_pair(a, earlier) {
            match git::command_of_setting(&key, &value) {
                Ok(Some(command)) => self.walk_script(
                    &wrappers::Script::literal(&command, &format!("GIT_CONFIG {key}")),
                    depth,
                ),
                Ok(None) => {}
                Err(reason) => self.opaque_once(&reason.to_string()),
            }
        }
    }

    fn walk_source(&mut self, src: &str, depth: usize) {
        let Some(mut tree) = parse(src) else {
            self.out
                .opaque
                .push("the shell parser is unavailable".into());
            return;
        };
        if tree_depth(tree.root_node()) > MAX_TREE_DEPTH {
            self.opaque_once(&format!(
                "constructs nested more than {MAX_TREE_DEPTH} levels deep"
            ));
            return;
        }
        // tree-sitter-bash treats a newline followed by a word starting with `\` as part of the
        // previous command (`ls\n\rm x` becomes `ls \rm x`); bash ends the command at the
        // newline. Such newlines are replaced by `;` (same length, so offsets hold) and the text
        // is parsed again.
        let mut fixed = src.to_string();
        // Bash removes backslash-newline before splitting words (`r\<newline>m` is `rm`), while
        // tree-sitter keeps two words. Remove those outside comments, single quotes and heredocs.
        let joins = line_continuations(tree.root_node(), &fixed);
        if !joins.is_empty() {
            let mut out = String::with_capacity(fixed.len());
            let mut last = 0;
            for j in joins {
                out.push_str(&fixed[last..j]);
                last = j + 2;
            }
            out.push_str(&fixed[last..]);
            fixed = out;
            match parse(&fixed) {
                Some(t) => tree = t,
                None => return,
            }
        }
        for _ in 0..4 {
            let mut gaps = Vec::new();
            command_gap_newlines(tree.root_node(), &fixed, &mut gaps);
            if gaps.is_empty() {
                break;
            }
            let mut bytes = std::mem::take(&mut fixed).into_bytes();
            for g in gaps {
                bytes[g] = b';';
            }
            fixed = String::from_utf8(bytes).unwrap_or_default();
            match parse(&fixed) {
                Some(t) => tree = t,
                None => break,
            }
        }
        let src = fixed.as_str();
        let root = tree.root_node();
        if root.has_error() {
            self.out
                .opaque
                .push("the command is not valid bash (parse error)".into());
        }
        let ctx = Ctx {
            src,
            depth,
            pipes: Vec::new(),
            background: false,
            ifs_known: !may_change_ifs(src),
        };
        self.visit(root, &ctx);
        // The grammar does not see every backquote substitution bash runs (inside `${…}`, in
        // array subscripts, in unquoted heredoc bodies). Find the ones left in plain text and
        // analyse their scripts as bash would run them.
        let mut stray = StrayBackquotes::default();
        stray_backquotes(root, src, &mut stray);
        if stray.unmatched {
            self.opaque_once("a backquote substitution whose end cannot be found");
        }
        if stray.subscript_substitution {
            self.opaque_once(
                "quoted text like `a[$(…)]` that bash runs as a command substitution when it \
                 evaluates it as an array subscript (read, printf -v, test -v, let, unset, …)",
            );
        }
        for script in stray.scripts {
            if depth < MAX_DEPTH {
                self.walk_source(&script, depth + 1);
            } else {
                self.opaque_once("backquote substitutions nested too deeply");
            }
        }
    }

    fn visit(&mut self, node: Node, ctx: &Ctx) {
        match node.kind() {
            "comment" => {}
            "command" => self.command(node, ctx, Vec::new(), Stdin::Inherited),
            "redirected_statement" => self.redirected(node, ctx),
            "pipeline" => {
                let id = self.new_pipeline();
                let mut stage = 0;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() == "comment" {
                        continue;
                    }
                    let mut inner = ctx.clone();
                    inner.pipes.push((id, stage));
                    self.visit(child, &inner);
                    stage += 1;
                }
            }
            "variable_assignment" => {
                if let Some(a) = self.assignment(node, ctx) {
                    self.out.standalone_assignments.push(a);
                }
            }
            "declaration_command" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() == "variable_assignment" {
                        if let Some(a) = self.assignment(child, ctx) {
                            self.out.standalone_assignments.push(a);
                        }
                    } else {
                        self.visit(child, ctx);
                    }
                }
            }
            "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                let (r, _) = self.redirect(node, ctx);
                if let Some(r) = r {
                    self.out.redirects.push(r);
                }
            }
            "command_substitution" | "process_substitution" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.visit(child, ctx);
                }
            }
            _ => {
                if node.is_error() || node.is_missing() {
                    self.opaque_once("the command is not valid bash (parse error)");
                }
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                let mut k = 0;
                while k < children.len() {
                    let child = children[k];
                    k += 1;
                    // The grammar rejects a command word that starts with a brace expansion
                    // (`{rm,-rf,x}`), leaving a bare command name; bash runs it, so its words
                    // are judged as a command.
                    if node.is_error() && child.kind() == "command_name" {
                        let mut parts = vec![child];
                        while k < children.len() && is_word_node(children[k]) {
                            parts.push(children[k]);
                            k += 1;
                        }
                        let prev = (k > parts.len()).then(|| children[k - parts.len() - 1]);
                        let lead = prev
                            .filter(|p| !p.is_named() && p.end_byte() == child.start_byte())
                            .map_or(child.start_byte(), |p| p.start_byte());
                        self.loose_command(lead, &parts, ctx);
                        continue;
                    }
                    let backgrounded =
                        child.is_named() && child.next_sibling().is_some_and(|n| n.kind() == "&");
                    if backgrounded && !ctx.background {
                        let inner = Ctx {
                            background: true,
                            ..ctx.clone()
                        };
                        self.visit(child, &inner);
                    } else {
                        self.visit(child, ctx);
                    }
                }
            }
        }
    }

    /// A command the grammar did not build: a command name (with the rejected text from
    /// `lead` on) and the words after it.
    fn loose_command(&mut self, lead: usize, parts: &[Node], ctx: &Ctx) {
        let Some((name, rest)) = parts.split_first() else {
            return;
        };
        let inner = name.named_child(0).unwrap_or(*name);
        let mut words = self.words_after(&ctx.src[lead..inner.start_byte()], inner, ctx);
        for part in rest {
            words.extend(self.words(*part, ctx));
        }
        let end = parts.last().map_or(lead, |p| p.end_byte());
        self.out.commands.push(SimpleCommand {
            text: ctx.src[lead..end].to_string(),
            words,
            pipes: ctx.pipes.clone(),
            depth: ctx.depth,
            background: ctx.background,
            ..SimpleCommand::default()
        });
    }

    fn opaque_once(&mut self, reason: &str) {
        if !self.out.opaque.iter().any(|r| r == reason) {
            self.out.opaque.push(reason.to_string());
        }
    }

    fn new_pipeline(&mut self) -> usize {
        self.next_pipeline += 1;
        self.next_pipeline
    }

    /// `body redirect…`: redirections of a command or of a compound statement. A heredoc may
    /// carry the rest of a pipeline or list (`cat <<EOF | sh`), which tree-sitter nests inside
    /// the heredoc redirect.
    fn redirected(&mut self, node: Node, ctx: &Ctx) {
        let mut redirects = Vec::new();
        let mut stdin = Stdin::Inherited;
        let mut continuation: Vec<Node> = Vec::new();
        let mut body = None;
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            if node.field_name_for_child(i as u32) == Some("body") {
                body = Some(child);
                continue;
            }
            if !child.is_named() {
                continue;
            }
            match child.kind() {
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    let (r, s) = self.redirect(child, ctx);
                    if let Some(s) = s {
                        stdin = s;
                    }
                    if let Some(r) = r {
                        redirects.push(r);
                    }
                    if child.kind() == "heredoc_redirect" {
                        let mut c2 = child.walk();
                        for (j, part) in child.children(&mut c2).enumerate() {
                            let field = child.field_name_for_child(j as u32);
                            if part.kind() == "pipeline" || field == Some("right") {
                                continuation.push(part);
                            }
                        }
                    }
                }
                _ => self.visit(child, ctx),
            }
        }
        self.out.redirects.extend(redirects.iter().cloned());
        let piped = continuation.iter().any(|n| n.kind() == "pipeline");
        let mut body_ctx_pipes = ctx.pipes.clone();
        let pipeline_id = if piped {
            let id = self.new_pipeline();
            body_ctx_pipes.push((id, 0));
            Some(id)
        } else {
            None
        };
        let body_ctx = Ctx {
            pipes: body_ctx_pipes,
            ..ctx.clone()
        };
        if let Some(body) = body {
            if body.kind() == "command" {
                self.command(body, &body_ctx, redirects, stdin);
            } else {
                self.visit(body, &body_ctx);
            }
        }
        for part in continuation {
            if let (Some(id), "pipeline") = (pipeline_id, part.kind()) {
                let mut c = part.walk();
                for (stage, child) in (1..).zip(part.named_children(&mut c)) {
                    let mut inner = ctx.clone();
                    inner.pipes.push((id, stage));
                    self.visit(child, &inner);
                }
            } else {
                self.visit(part, ctx);
            }
        }
    }

    fn command(&mut self, node: Node, ctx: &Ctx, mut redirects: Vec<Redirect>, mut stdin: Stdin) {
        let mut assignments = Vec::new();
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    if let Some(a) = self.assignment(child, ctx) {
                        assignments.push(a);
                    }
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    let (r, s) = self.redirect(child, ctx);
                    if let Some(s) = s {
                        stdin = s;
                    }
                    if let Some(r) = r {
                        self.out.redirects.push(r.clone());
                        redirects.push(r);
                    }
                }
                "comment" => {}
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    // In a command the grammar rejected (`{rm,-rf,x}`), tokens before the
                    // name (the `{`) belong to the first word.
                    let lead = &ctx.src[rejected_lead(node, inner)..inner.start_byte()];
                    words.extend(self.words_after(lead, inner, ctx));
                }
                _ => words.extend(self.words(child, ctx)),
            }
        }
        self.out.commands.push(SimpleCommand {
            text: ctx.src[node.byte_range()].to_string(),
            assignments,
            words,
            redirects,
            stdin,
            pipes: ctx.pipes.clone(),
            depth: ctx.depth,
            background: ctx.background,
            unwrapped: Unwrapped::default(),
        });
    }

    fn assignment(&mut self, node: Node, ctx: &Ctx) -> Option<Assignment> {
        let name = node.child_by_field_name("name")?;
        let name_text = ctx.src[name.byte_range()].to_string();
        // `a[$(cmd)]=1`: the subscript is expanded (and its substitutions run) before assigning;
        // even a quoted `a['$(cmd)']` runs when the subscript is evaluated as arithmetic.
        if name.kind() == "subscript" {
            if subscript_substitution(&name_text) {
                self.opaque_once(
                    "an array subscript holding a substitution that bash runs when it assigns",
                );
            }
            let mut cursor = name.walk();
            for (i, child) in name.children(&mut cursor).enumerate() {
                if name.field_name_for_child(i as u32) == Some("index") {
                    self.visit(child, ctx);
                }
            }
        }
        let value = match node.child_by_field_name("value") {
            Some(v) => self.word(v, ctx),
            None => Word::default(),
        };
        Some(Assignment {
            name: name_text,
            value,
        })
    }

    /// Returns the redirect (if it has a target) and the stdin it establishes (if any).
    fn redirect(&mut self, node: Node, ctx: &Ctx) -> (Option<Redirect>, Option<Stdin>) {
        let mut fd = None;
        let mut op = String::new();
        let mut target = None;
        let mut heredoc_body = None;
        let mut heredoc_literal = false;
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            let field = node.field_name_for_child(i as u32);
            match (child.kind(), field) {
                ("file_descriptor", _) => fd = Some(ctx.src[child.byte_range()].to_string()),
                (_, Some("descriptor")) => fd = Some(ctx.src[child.byte_range()].to_string()),
                ("heredoc_start", _) => {
                    let raw = &ctx.src[child.byte_range()];
                    heredoc_literal = raw.contains(['\'', '"', '\\']);
                    target = Some(Word::literal(raw));
                }
                ("heredoc_body", _) => {
                    heredoc_body = Some(ctx.src[child.byte_range()].to_string());
                    // Unquoted heredoc bodies run their `$(…)` substitutions.
                    self.visit(child, ctx);
                }
                ("heredoc_end" | "pipeline", _) | (_, Some("right")) => {}
                _ if !child.is_named() => {
                    if op.is_empty() {
                        op = ctx.src[child.byte_range()].to_string();
                    }
                }
                _ => {
                    if target.is_none() {
                        target = Some(self.target_word(child, ctx));
                    } else {
                        self.visit(child, ctx);
                    }
                }
            }
        }
        let Some(target) = target else {
            return (None, None);
        };
        let stdin = match op.as_str() {
            "<<<" => Some(Stdin::HereString(target.clone())),
            "<<" | "<<-" => Some(Stdin::Heredoc {
                body: heredoc_body.unwrap_or_default(),
                literal: heredoc_literal,
            }),
            "<" if fd.as_deref().is_none_or(|f| f == "0") => Some(Stdin::File(target.clone())),
            _ => None,
        };
        (Some(Redirect { op, fd, target }), stdin)
    }

    /// The word `node` as one word, without brace expansion or field splitting (assignment
    /// values, which bash does not split).
    fn word(&mut self, node: Node, ctx: &Ctx) -> Word {
        let before = self.out.commands.len();
        let mut atoms = Vec::new();
        self.atoms(node, ctx, false, &mut atoms);
        let mut word = expansion::join(&atoms, &ctx.src[node.byte_range()]);
        word.process_substitution = node.kind() == "process_substitution";
        word.inner = (before..self.out.commands.len()).collect();
        word
    }

    /// The word `node` as a redirection target: expanded, and when bash would make several
    /// words of it (it then refuses the redirection), one word whose value is unknown.
    fn target_word(&mut self, node: Node, ctx: &Ctx) -> Word {
        let mut words = self.words(node, ctx);
        if words.len() == 1 {
            return words.remove(0);
        }
        let mut word = self.word(node, ctx);
        word.dynamic = true;
        word.shape = Some("*".into());
        word
    }

    /// The words bash makes of the source word `node`: brace expansion, `$IFS` splitting and
    /// quote removal done (see [`expansion`]).
    fn words(&mut self, node: Node, ctx: &Ctx) -> Vec<Word> {
        self.words_after("", node, ctx)
    }

    /// [`Walker::words`] of the unquoted text `lead` followed by `node`.
    fn words_after(&mut self, lead: &str, node: Node, ctx: &Ctx) -> Vec<Word> {
        let before = self.out.commands.len();
        let mut atoms = Vec::new();
        unquoted_atoms(lead, &mut atoms);
        self.atoms(node, ctx, false, &mut atoms);
        let raw = format!("{lead}{}", &ctx.src[node.byte_range()]);
        let raw = raw.as_str();
        let inner: Vec<usize> = (before..self.out.commands.len()).collect();
        let process_substitution = node.kind() == "process_substitution";
        let mut words = expansion::expand(&atoms, raw).unwrap_or_else(|| {
            self.opaque_once(&format!(
                "a brace expansion that makes more than {} words",
                expansion::MAX_BRACE_WORDS
            ));
            let mut w = expansion::join(&atoms, raw);
            w.dynamic = true;
            w.shape = Some("*".into());
            vec![w]
        });
        for w in &mut words {
            w.inner.clone_from(&inner);
            w.process_substitution = process_substitution;
        }
        words
    }

    /// Appends the [`Atom`]s of `node` to `out`; `quoted` is true inside double quotes. The
    /// commands of substitutions inside are walked.
    fn atoms(&mut self, node: Node, ctx: &Ctx, quoted: bool, out: &mut Vec<Atom>) {
        let text = &ctx.src[node.byte_range()];
        let chars = |t: &str, quoted: bool, out: &mut Vec<Atom>| {
            out.extend(t.chars().map(|c| Atom::Char { c, quoted }));
        };
        match node.kind() {
            "word" | "number" if node.named_child_count() == 0 => {
                if quoted {
                    chars(&unescape_double(text), true, out);
                } else {
                    unquoted_atoms(text, out);
                }
            }
            "raw_string" => {
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                chars(inner, true, out);
                empty_quotes(inner, out);
            }
            "ansi_c_string" => {
                let inner = text
                    .strip_prefix("$'")
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                chars(&decode_ansi_c(inner), true, out);
            }
            "string" | "translated_string" => {
                let open = if node.kind() == "string" { 1 } else { 2 };
                let start = (node.start_byte() + open).min(node.end_byte());
                let end = node.end_byte().saturating_sub(1).max(start);
                let mut pos = start;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.start_byte() > pos {
                        chars(
                            &unescape_double(&ctx.src[pos..child.start_byte()]),
                            true,
                            out,
                        );
                    }
                    if child.kind() == "string_content" {
                        chars(&unescape_double(&ctx.src[child.byte_range()]), true, out);
                    } else {
                        self.atoms(child, ctx, true, out);
                    }
                    pos = child.end_byte();
                }
                if end > pos {
                    chars(&unescape_double(&ctx.src[pos..end]), true, out);
                }
                empty_quotes(&ctx.src[start..end], out);
            }
            "concatenation" => {
                // Every byte of a concatenation belongs to one of its parts; text the grammar
                // leaves between parts (or in unnamed tokens) is taken as unquoted text.
                let mut pos = node.start_byte();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if child.start_byte() > pos {
                        unquoted_atoms(&ctx.src[pos..child.start_byte()], out);
                    }
                    if child.is_named() {
                        self.atoms(child, ctx, quoted, out);
                    } else {
                        unquoted_atoms(&ctx.src[child.byte_range()], out);
                    }
                    pos = pos.max(child.end_byte());
                }
                if node.end_byte() > pos {
                    unquoted_atoms(&ctx.src[pos..node.end_byte()], out);
                }
            }
            "brace_expression" => unquoted_atoms(text, out),
            "simple_expansion" | "expansion"
                if ctx.ifs_known && expansion::ifs_expansion(text).is_some() =>
            {
                let value = expansion::ifs_expansion(text).unwrap_or_default();
                out.push(Atom::Known {
                    text: value,
                    quoted,
                });
            }
            "arithmetic_expansion" => {
                // Bash refuses or re-reads malformed arithmetic (`$(( 'x' y ))`); never guess.
                if node.has_error() || text.contains(['\'', '"', '`']) {
                    self.opaque_once("an arithmetic expansion that is not plain arithmetic");
                }
                self.unknown(node, ctx, out);
            }
            _ => {
                // Expansions, substitutions and anything else: the value is known only at run
                // time. Substitutions inside (`${X:-$(cmd)}`) still run, so they are walked.
                self.unknown(node, ctx, out);
            }
        }
    }

    /// A run-time part: recorded by its source text; the commands inside it are walked.
    fn unknown(&mut self, node: Node, ctx: &Ctx, out: &mut Vec<Atom>) {
        out.push(Atom::Unknown {
            raw: ctx.src[node.byte_range()].to_string(),
        });
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.visit(child, ctx);
        }
    }
}

/// `''` and `""` are an empty word of their own (kept by bash), unlike nothing at all.
fn empty_quotes(inside: &str, out: &mut Vec<Atom>) {
    if inside.is_empty() {
        out.push(Atom::Known {
            text: String::new(),
            quoted: true,
        });
    }
}

/// Unquoted text: `\x` is a quoted `x`, backslash-newline disappears, other characters are
/// unquoted (subject to brace expansion and globbing).
fn unquoted_atoms(text: &str, out: &mut Vec<Atom>) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(Atom::Char { c: n, quoted: true }),
            }
        } else {
            out.push(Atom::Char { c, quoted: false });
        }
    }
}

/// Whether the script `src` may change `IFS` (assigning, unsetting, declaring or reading it):
/// any mention other than `$IFS` / `${IFS…}` counts. While it does not, `$IFS` is bash's
/// default.
fn may_change_ifs(src: &str) -> bool {
    src.match_indices("IFS").any(|(i, _)| {
        let before = &src[..i];
        !(before.ends_with('$') || before.ends_with("${") || before.ends_with("${#"))
    })
}

/// Marks `word` as a run-time value when it holds one of `marks` (placeholders a program fills
/// in before the shell sees the text).
fn mark_placeholders(word: &mut Word, marks: &[String]) {
    if marks.iter().any(|m| word.text.contains(m.as_str())) {
        let mut shape = word.shape.clone().unwrap_or_else(|| word.text.clone());
        for m in marks {
            shape = shape.replace(m.as_str(), "*");
        }
        word.dynamic = true;
        word.shape = Some(shape);
    }
}

/// Where the first word of `command` really starts. The grammar reads a leading `{` of a brace
/// expansion (`{rm,-rf,x}`, `{r,}m x`) as a separate, rejected token: it belongs to the first
/// word when nothing separates them.
fn rejected_lead(command: Node, name: Node) -> usize {
    match (command.parent(), command.prev_sibling()) {
        (Some(parent), Some(prev))
            if parent.is_error()
                && !prev.is_named()
                && prev.end_byte() == command.start_byte()
                && command.start_byte() == name.start_byte() =>
        {
            prev.start_byte()
        }
        _ => name.start_byte(),
    }
}

/// Whether `node` is a word of a command (an argument).
fn is_word_node(node: Node) -> bool {
    matches!(
        node.kind(),
        "word"
            | "concatenation"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "simple_expansion"
            | "expansion"
            | "number"
            | "brace_expression"
    )
}

/// Depth of the deepest node under `root` (the root is depth 1), measured without recursion.
fn tree_depth(root: Node) -> usize {
    let mut cursor = root.walk();
    let mut depth = 1;
    let mut max = 1;
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            max = max.max(depth);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return max;
            }
            depth -= 1;
        }
    }
}

/// Backquote substitutions found in text the grammar left as plain text.
#[derive(Default)]
struct StrayBackquotes {
    /// The scripts between backquote pairs, with `\\`, `` \` `` and `\$` resolved.
    scripts: Vec<String>,
    /// A backquote without its closing partner.
    unmatched: bool,
    /// Literal text shaped like an array subscript holding a substitution (`'a[$(cmd)]'`).
    subscript_substitution: bool,
}

/// Collects backquote substitutions from the parts of the tree that are not parsed further:
/// the text of a node not covered by its children. Skips text bash takes literally (comments,
/// single-quoted and ANSI-C strings, bodies of heredocs with a quoted delimiter) and the
/// backquote tokens of substitutions the grammar did recognise.
fn stray_backquotes(node: Node, src: &str, out: &mut StrayBackquotes) {
    let value = match node.kind() {
        "raw_string" => Some(src[node.byte_range()].trim_matches('\'').to_string()),
        "ansi_c_string" => Some(decode_ansi_c(
            src[node.byte_range()]
                .trim_start_matches('$')
                .trim_matches('\''),
        )),
        "string_content" => Some(unescape_double(&src[node.byte_range()])),
        "word" if node.child_count() == 0 => Some(unescape_unquoted(&src[node.byte_range()])),
        _ => None,
    };
    if value.is_some_and(|v| subscript_substitution(&v)) {
        out.subscript_substitution = true;
    }
    if matches!(
        node.kind(),
        "comment" | "raw_string" | "ansi_c_string" | "`"
    ) {
        return;
    }
    let literal_heredoc = node.kind() == "heredoc_redirect" && quoted_heredoc(node, src);
    let mut pos = node.start_byte();
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    for child in children {
        if child.start_byte() > pos {
            scan_backquotes(&src[pos..child.start_byte()], out);
        }
        if !(literal_heredoc && child.kind() == "heredoc_body") {
            stray_backquotes(child, src, out);
        }
        pos = pos.max(child.end_byte());
    }
    if node.end_byte() > pos {
        scan_backquotes(&src[pos..node.end_byte()], out);
    }
}

/// `NAME[` followed later by `$(`, `` ` `` or `$[`: bash expands such a subscript when a
/// builtin or arithmetic evaluates the text as a variable reference.
fn subscript_substitution(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| {
        *b == b'[' && i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') && {
            let rest = &text[i + 1..];
            rest.contains("$(") || rest.contains('`') || rest.contains("$[")
        }
    })
}

/// Whether the heredoc's delimiter is quoted (its body is taken literally).
fn quoted_heredoc(redirect: Node, src: &str) -> bool {
    let mut c = redirect.walk();
    let start = redirect
        .children(&mut c)
        .find(|n| n.kind() == "heredoc_start");
    start.is_some_and(|n| src[n.byte_range()].contains(['\'', '"', '\\']))
}

fn scan_backquotes(text: &str, out: &mut StrayBackquotes) {
    let mut chars = text.chars();
    let mut current: Option<String> = None;
    while let Some(c) = chars.next() {
        match (c, current.as_mut()) {
            ('\\', None) => {
                chars.next();
            }
            ('\\', Some(script)) => match chars.next() {
                Some(n @ ('\\' | '`' | '$')) => script.push(n),
                Some(n) => {
                    script.push('\\');
                    script.push(n);
                }
                None => script.push('\\'),
            },
            ('`', None) => current = Some(String::new()),
            ('`', Some(_)) => {
                if let Some(script) = current.take() {
                    out.scripts.push(script);
                }
            }
            (c, Some(script)) => script.push(c),
            (_, None) => {}
        }
    }
    if current.is_some() {
        out.unmatched = true;
    }
}

/// Byte offsets of line continuations (an odd run of backslashes, then a newline) that bash
/// removes: not inside comments, single-quoted or ANSI-C strings, or heredoc bodies.
fn line_continuations(root: Node, src: &str) -> Vec<usize> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    for i in 0..bytes.len().saturating_sub(1) {
        if bytes[i] != b'\\' || bytes[i + 1] != b'\n' {
            continue;
        }
        let run = bytes[..=i]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if run % 2 == 0 {
            continue;
        }
        let mut node = root.descendant_for_byte_range(i, i + 1);
        let mut literal = false;
        while let Some(n) = node {
            if matches!(
                n.kind(),
                "comment" | "raw_string" | "ansi_c_string" | "heredoc_body" | "heredoc_content"
            ) {
                literal = true;
                break;
            }
            node = n.parent();
        }
        if !literal {
            out.push(i);
        }
    }
    out
}

/// Byte offsets of newlines that sit between two words of one `command` node without a
/// line-continuation backslash before them.
fn command_gap_newlines(node: Node, src: &str, out: &mut Vec<usize>) {
    if node.kind() == "word" {
        // The grammar may also fold the newline into the next word (`\n\\rm`).
        let bytes = src.as_bytes();
        for i in node.byte_range() {
            if bytes.get(i) == Some(&b'\n') && (i == 0 || bytes[i - 1] != b'\\') {
                out.push(i);
            }
        }
    }
    if node.kind() == "command" {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for pair in children.windows(2) {
            let (from, to) = (pair[0].end_byte(), pair[1].start_byte());
            let bytes = src.as_bytes();
            for i in from..to.min(bytes.len()) {
                if bytes[i] == b'\n' && (i == 0 || bytes[i - 1] != b'\\') {
                    out.push(i);
                }
            }
        }
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        command_gap_newlines(child, src, out);
    }
}

/// Unquoted word: `\x` → `x`, backslash-newline removed.
fn unescape_unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Inside double quotes only `\$`, `` \` ``, `\"`, `\\` and backslash-newline are escapes.
fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the body of `$'…'` (ANSI-C quoting).
fn decode_ansi_c(body: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let hex = |s: &[char]| -> Option<u32> {
        let t: String = s.iter().collect();
        u32::from_str_radix(&t, 16).ok()
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 >= chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let n = chars[i + 1];
        i += 2;
        let simple = match n {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let take_while = |from: usize, max: usize, ok: fn(char) -> bool| -> usize {
            let mut end = from;
            while end < chars.len() && end - from < max && ok(chars[end]) {
                end += 1;
            }
            end
        };
        match n {
            'x' | 'u' | 'U' => {
                let max = match n {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let end = take_while(i, max, |c| c.is_ascii_hexdigit());
                match hex(&chars[i..end]).and_then(char::from_u32) {
                    Some(ch) if end > i => out.push(ch),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                i = end;
            }
            '0'..='7' => {
                let end = take_while(i - 1, 3, |c| ('0'..='7').contains(&c));
                let t: String = chars[i - 1..end].iter().collect();
                if let Some(ch) = u32::from_str_radix(&t, 8).ok().and_then(char::from_u32) {
                    out.push(ch);
                }
                i = end;
            }
            _ => {
                out.push('\\');
                out.push(n);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<Vec<String>> {
        analyse(cmd)
            .commands
            .iter()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    }

    #[test]
    fn quote_removal() {
        assert_eq!(
            words(r#"\rm 'r'm "a"b'c' $'\x72m'"#),
            vec![vec!["rm", "rm", "abc", "rm"]]
        );
        assert_eq!(
            words(r#"echo "a\"b\$c\d""#),
            vec![vec!["echo", "a\"b$c\\d"]]
        );
    }

    #[test]
    fn nested_and_lists() {
        let a = analyse("a && (b | c); { d; } > f; echo $(e) `g` <(h)");
        let names: Vec<_> = a.commands.iter().map(|c| c.words[0].text.clone()).collect();
        for n in ["a", "b", "c", "d", "e", "g", "h", "echo"] {
            assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
        }
        assert_eq!(a.redirects.len(), 1);
        assert!(a.opaque.is_empty(), "{:?}", a.opaque);
    }

    #[test]
    fn heredoc_pipeline_continuation() {
        let a = analyse("cat <<EOF | sh\necho hi\nEOF");
        let sh = a.commands.iter().find(|c| c.words[0].text == "sh").unwrap();
        assert_eq!(sh.pipes.len(), 1);
        assert_eq!(sh.pipes[0].1, 1);
    }

    #[test]
    fn line_continuations_join_like_bash() {
        assert_eq!(words("r\\\nm -rf x"), vec![vec!["rm", "-rf", "x"]]);
        assert_eq!(words("echo 'a\\\nb'"), vec![vec!["echo", "a\\\nb"]]);
        // A continuation inside a comment does not swallow the next line.
        assert_eq!(words("ls # c \\\nrm x"), vec![vec!["ls"], vec!["rm", "x"]]);
        assert_eq!(
            words("echo \\\\\nrm x"),
            vec![vec!["echo", "\\"], vec!["rm", "x"]]
        );
    }

    #[test]
    fn newline_before_backslash_word_ends_the_command() {
        assert_eq!(
            words("ls -la\n\\rm -rf x"),
            vec![vec!["ls", "-la"], vec!["rm", "-rf", "x"]]
        );
        assert_eq!(words("ls \\\n -la"), vec![vec!["ls", "-la"]]);
    }

    #[test]
    fn dynamic_command_words() {
        for cmd in [
            "$(printf rm) -rf x",
            "\"${X:-rm}\" x",
            "/???/?m x",
            "{rm,-rf,/x}",
        ] {
            let a = analyse(cmd);
            let dynamic = a.commands.last().is_some_and(|c| c.words[0].dynamic);
            assert!(dynamic || !a.opaque.is_empty(), "{cmd}: {a:?}");
        }
    }
}
