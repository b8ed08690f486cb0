//! Word expansion as bash does it, as far as the value is known before the command runs.
//!
//! A word of the command line is first read into [`Atom`]s by the shell walker: characters
//! (quoted or not), values of expansions that are known statically (`$IFS` in a script that
//! never changes `IFS`), and parts known only at run time (`$HOME`, `$(…)`). [`expand`] then
//! applies, in bash's order, the expansions that decide which program runs and which files are
//! touched:
//!
//! 1. **Brace expansion** of unquoted `{a,b}` and `{1..3}` / `{a..e..2}` (nested, with preamble
//!    and postscript): `{rm,-rf,x}` is the three words `rm -rf x`; `/etc/{passwd,shadow}` is two.
//! 2. **Field splitting** of unquoted known expansions at `IFS` characters: `rm${IFS}-rf` is
//!    `rm -rf`. Quoted expansions are not split (`"a${IFS}b"` stays one word); an unquoted
//!    expansion that comes out empty disappears.
//! 3. **Globs**: an unquoted `*`, `?` or `[` marks the word as a glob (the file system decides).
//!
//! A word with a run-time part is `dynamic` and carries a *shape*: the word as a glob in which
//! each run-time part is `*`, so rules can be tested against every value it might take.

use super::shell::Word;

/// Bash's default `IFS`: space, tab, newline. Bash sets it at start-up and never takes it from
/// the environment, so inside one script it is known until the script changes it.
pub const DEFAULT_IFS: &str = " \t\n";

/// Limit on the words one brace expansion may produce in the analysis; past it the word is
/// treated as computed at run time.
pub const MAX_BRACE_WORDS: usize = 256;

/// One piece of a word before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// A character taken literally by bash. `quoted`: inside quotes or escaped by a backslash,
    /// so not subject to brace expansion, splitting or globbing.
    Char {
        /// The character.
        c: char,
        /// Quoted or escaped.
        quoted: bool,
    },
    /// The value of an expansion known before the command runs (`$IFS`). `quoted`: inside
    /// double quotes (not split).
    Known {
        /// The value.
        text: String,
        /// Inside double quotes.
        quoted: bool,
    },
    /// A part known only at run time; `raw` is its source text (`$HOME`, `$(date)`).
    ///
    /// (A quoted empty string `""` is `Known` with empty text: it keeps its word.)
    Unknown {
        /// Source text.
        raw: String,
    },
}

/// The words bash makes of one source word, with quote removal done. `raw` is the source text
/// of the whole word; every resulting word carries it. A result of no words is possible
/// (`$IFS` alone expands to nothing). `None` when brace expansion would exceed
/// [`MAX_BRACE_WORDS`].
pub fn expand(atoms: &[Atom], raw: &str) -> Option<Vec<Word>> {
    let braced = brace_expand(atoms)?;
    let mut out = Vec::new();
    // An alternative that came out empty (`{rm,victim,}`) is no word; a quoted empty string
    // is an atom, so `{a,""}` keeps its empty word.
    for alternative in braced.into_iter().filter(|a| !a.is_empty()) {
        for field in split_fields(&alternative) {
            out.push(to_word(&field, raw));
        }
    }
    Some(out)
}

/// The word made of `atoms` without brace expansion or splitting (assignment values and
/// redirection targets, which bash does not brace-expand).
pub fn join(atoms: &[Atom], raw: &str) -> Word {
    to_word(atoms, raw)
}

fn to_word(atoms: &[Atom], raw: &str) -> Word {
    let mut word = Word {
        raw: raw.to_string(),
        ..Word::default()
    };
    let mut shape = String::new();
    let mut unknown = false;
    for atom in atoms {
        match atom {
            Atom::Char { c, quoted } => {
                word.text.push(*c);
                shape.push(*c);
                if !quoted && matches!(c, '*' | '?' | '[') {
                    word.glob = true;
                }
            }
            Atom::Known { text, .. } => {
                word.text.push_str(text);
                shape.push_str(text);
            }
            Atom::Unknown { raw } => {
                word.text.push_str(raw);
                // A leading `$HOME` is the home directory, like `~`: its shape keeps it.
                if shape.is_empty() && (raw == "$HOME" || raw == "${HOME}") {
                    shape.push('~');
                } else if !shape.ends_with('*') {
                    shape.push('*');
                }
                unknown = true;
            }
        }
    }
    word.dynamic = unknown || word.glob;
    if unknown {
        word.shape = Some(shape);
    }
    word
}

/// Splits at unquoted known expansions, as bash's field splitting does with the default `IFS`
/// (runs of IFS whitespace separate fields and are dropped at the ends, so an unquoted
/// expansion that comes out as only IFS whitespace disappears).
fn split_fields(atoms: &[Atom]) -> Vec<Vec<Atom>> {
    let splits = atoms
        .iter()
        .any(|a| matches!(a, Atom::Known { quoted: false, .. }));
    if !splits {
        return vec![atoms.to_vec()];
    }
    let mut fields = Vec::new();
    let mut current: Vec<Atom> = Vec::new();
    for atom in atoms {
        match atom {
            Atom::Known {
                text,
                quoted: false,
            } => {
                for c in text.chars() {
                    if DEFAULT_IFS.contains(c) {
                        if !current.is_empty() {
                            fields.push(std::mem::take(&mut current));
                        }
                    } else {
                        current.push(Atom::Known {
                            text: c.to_string(),
                            quoted: false,
                        });
                    }
                }
            }
            other => current.push(other.clone()),
        }
    }
    if !current.is_empty() {
        fields.push(current);
    }
    fields
}

/// Bash's brace expansion over unquoted `{`, `,` and `}` characters. `None` past
/// [`MAX_BRACE_WORDS`].
fn brace_expand(atoms: &[Atom]) -> Option<Vec<Vec<Atom>>> {
    let Some((open, close, parts)) = first_brace(atoms) else {
        return Some(vec![atoms.to_vec()]);
    };
    let parts = parts?;
    let preamble = &atoms[..open];
    let postscript = brace_expand(&atoms[close + 1..])?;
    let mut out = Vec::new();
    for part in parts {
        for inner in brace_expand(&part)? {
            for post in &postscript {
                let mut w = preamble.to_vec();
                w.extend(inner.iter().cloned());
                w.extend(post.iter().cloned());
                out.push(w);
                if out.len() > MAX_BRACE_WORDS {
                    return None;
                }
            }
        }
    }
    Some(out)
}

fn unquoted(atom: &Atom, want: char) -> bool {
    matches!(atom, Atom::Char { c, quoted: false } if *c == want)
}

/// One brace expression: its `{` and `}` indices and its alternatives (`None` when a sequence
/// would produce more than [`MAX_BRACE_WORDS`] words).
type Brace = (usize, usize, Option<Vec<Vec<Atom>>>);

/// The first well-formed brace expression with its alternatives (comma parts, or the generated
/// sequence). A `{` followed by no matching `}`, or with neither an unquoted top-level comma nor
/// a valid sequence, is literal (bash leaves it).
fn first_brace(atoms: &[Atom]) -> Option<Brace> {
    let mut start = 0;
    while let Some(rel) = atoms[start..].iter().position(|a| unquoted(a, '{')) {
        let open = start + rel;
        // `${` is a parameter expansion, never a brace expression.
        if open > 0 && unquoted(&atoms[open - 1], '$') {
            start = open + 1;
            continue;
        }
        let mut depth = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (i, a) in atoms.iter().enumerate().skip(open + 1) {
            if unquoted(a, '{') {
                depth += 1;
            } else if unquoted(a, '}') {
                if depth == 0 {
                    close = Some(i);
                    break;
                }
                depth -= 1;
            } else if depth == 0 && unquoted(a, ',') {
                commas.push(i);
            }
        }
        let Some(close) = close else {
            start = open + 1;
            continue;
        };
        if !commas.is_empty() {
            let mut parts = Vec::new();
            let mut from = open + 1;
            for c in commas.iter().copied().chain(std::iter::once(close)) {
                parts.push(atoms[from..c].to_vec());
                from = c + 1;
            }
            return Some((open, close, Some(parts)));
        }
        if let Some(seq) = sequence(&atoms[open + 1..close]) {
            return Some((open, close, seq));
        }
        start = open + 1;
    }
    None
}

/// `{1..5}`, `{05..10..2}`, `{a..e}`, `{z..a..2}`: the generated words (`Some(None)` when there
/// would be more than [`MAX_BRACE_WORDS`]), if the inside is a valid sequence expression of
/// plain unquoted characters.
fn sequence(inside: &[Atom]) -> Option<Option<Vec<Vec<Atom>>>> {
    let mut text = String::new();
    for a in inside {
        match a {
            Atom::Char { c, quoted: false } => text.push(*c),
            _ => return None,
        }
    }
    let parts: Vec<&str> = text.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(s) => s.parse().ok()?,
        None => 1,
    };
    let step = step.unsigned_abs().max(1);
    let lit =
        |s: String| -> Vec<Atom> { s.chars().map(|c| Atom::Char { c, quoted: false }).collect() };
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let width = if [parts[0], parts[1]]
            .iter()
            .any(|p| p.trim_start_matches('-').starts_with('0') && p.len() > 1)
        {
            parts[0].len().max(parts[1].len())
        } else {
            0
        };
        let count = a.abs_diff(b) / step + 1;
        if count > MAX_BRACE_WORDS as u64 {
            return Some(None);
        }
        let mut out = Vec::new();
        let mut v = a;
        for _ in 0..count {
            out.push(lit(format!("{v:0width$}")));
            v = if a <= b {
                v + step as i64
            } else {
                v - step as i64
            };
        }
        return Some(Some(out));
    }
    let one = |s: &str| {
        let mut cs = s.chars();
        match (cs.next(), cs.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        }
    };
    let (a, b) = (one(parts[0])? as u32, one(parts[1])? as u32);
    let mut out = Vec::new();
    let mut v = a;
    loop {
        out.push(lit(char::from_u32(v)?.to_string()));
        if v == b {
            break;
        }
        let next = if a <= b {
            v + step as u32
        } else {
            v.checked_sub(step as u32)?
        };
        if (a <= b && next > b) || (a > b && next < b) {
            break;
        }
        v = next;
    }
    Some(Some(out))
}

/// The value of `${IFS…}` forms bash computes from `IFS` alone: `$IFS`, `${IFS}`,
/// `${IFS:offset}`, `${IFS:offset:length}`, `${IFS#…}`/`${IFS%…}` with `?` patterns, and
/// `${IFS:-…}`/`${IFS-…}` (IFS is set). `None` for any other form (treated as run-time).
pub fn ifs_expansion(raw: &str) -> Option<String> {
    let ifs = DEFAULT_IFS;
    if raw == "$IFS" || raw == "${IFS}" {
        return Some(ifs.into());
    }
    let body = raw.strip_prefix("${IFS")?.strip_suffix('}')?;
    // `IFS` is set and not empty, so the default word is never used.
    if body.starts_with(":-") || body.starts_with('-') {
        return Some(ifs.into());
    }
    if let Some(rest) = body.strip_prefix(':') {
        let (offset, length) = match rest.split_once(':') {
            Some((o, l)) => (o.trim(), Some(l.trim())),
            None => (rest.trim(), None),
        };
        let n = ifs.chars().count() as i64;
        let offset: i64 = if offset.is_empty() {
            0
        } else {
            offset.parse().ok()?
        };
        let start = if offset < 0 { n + offset } else { offset }.clamp(0, n);
        let end = match length {
            None => n,
            Some("") => start,
            Some(l) => {
                let l: i64 = l.parse().ok()?;
                if l < 0 { n + l } else { start + l }.clamp(start, n)
            }
        };
        return Some(
            ifs.chars()
                .skip(start as usize)
                .take((end - start) as usize)
                .collect(),
        );
    }
    let strip = |pattern: &str| -> Option<usize> {
        pattern.chars().all(|c| c == '?').then_some(pattern.len())
    };
    if let Some(p) = body.strip_prefix("##").or_else(|| body.strip_prefix('#')) {
        let k = strip(p)?;
        return Some(ifs.chars().skip(k).collect());
    }
    if let Some(p) = body.strip_prefix("%%").or_else(|| body.strip_prefix('%')) {
        let k = strip(p)?;
        let n = ifs.chars().count();
        return Some(ifs.chars().take(n.saturating_sub(k)).collect());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atoms(text: &str) -> Vec<Atom> {
        text.chars()
            .map(|c| Atom::Char { c, quoted: false })
            .collect()
    }

    fn texts(atoms: &[Atom]) -> Vec<String> {
        expand(atoms, "")
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect()
    }

    #[test]
    fn brace_expansion_like_bash() {
        assert_eq!(texts(&atoms("{rm,-rf,x}")), ["rm", "-rf", "x"]);
        assert_eq!(
            texts(&atoms("/etc/{passwd,shadow}")),
            ["/etc/passwd", "/etc/shadow"]
        );
        assert_eq!(texts(&atoms("{r,}m")), ["rm", "m"]);
        assert_eq!(texts(&atoms("{rm,victim,}")), ["rm", "victim"]);
        assert!(texts(&atoms("{,}")).is_empty());
        assert_eq!(texts(&atoms("a{b,{c,d}}e")), ["abe", "ace", "ade"]);
        assert_eq!(texts(&atoms("{1..3}")), ["1", "2", "3"]);
        assert_eq!(texts(&atoms("{08..10}")), ["08", "09", "10"]);
        assert_eq!(texts(&atoms("{a..e..2}")), ["a", "c", "e"]);
        assert_eq!(texts(&atoms("{c..a}")), ["c", "b", "a"]);
        // Literal: no comma or sequence, unmatched, or a parameter expansion.
        assert_eq!(texts(&atoms("{x}")), ["{x}"]);
        assert_eq!(texts(&atoms("{}")), ["{}"]);
        assert_eq!(texts(&atoms("{a,b")), ["{a,b"]);
        let quoted: Vec<Atom> = "{a,b}"
            .chars()
            .map(|c| Atom::Char { c, quoted: true })
            .collect();
        assert_eq!(texts(&quoted), ["{a,b}"]);
    }

    #[test]
    fn ifs_splits_unquoted_only() {
        let mut a = atoms("rm");
        a.push(Atom::Known {
            text: DEFAULT_IFS.into(),
            quoted: false,
        });
        a.extend(atoms("-rf"));
        assert_eq!(texts(&a), ["rm", "-rf"]);
        let mut q = atoms("rm");
        q.push(Atom::Known {
            text: DEFAULT_IFS.into(),
            quoted: true,
        });
        assert_eq!(texts(&q), ["rm \t\n"]);
        let alone = vec![Atom::Known {
            text: DEFAULT_IFS.into(),
            quoted: false,
        }];
        assert!(texts(&alone).is_empty());
    }

    #[test]
    fn ifs_forms() {
        assert_eq!(ifs_expansion("${IFS:0:1}").as_deref(), Some(" "));
        assert_eq!(ifs_expansion("${IFS::1}").as_deref(), Some(" "));
        assert_eq!(ifs_expansion("${IFS%??}").as_deref(), Some(" "));
        assert_eq!(ifs_expansion("${IFS#?}").as_deref(), Some("\t\n"));
        assert_eq!(ifs_expansion("${IFS:2}").as_deref(), Some("\n"));
        assert_eq!(ifs_expansion("${IFS:-x}").as_deref(), Some(DEFAULT_IFS));
        assert_eq!(ifs_expansion("${IFS/ /x}"), None);
        assert_eq!(ifs_expansion("$HOME"), None);
    }

    #[test]
    fn unknown_parts_give_a_shape() {
        let mut a = atoms("/etc/sha");
        a.push(Atom::Unknown { raw: "$X".into() });
        let w = &expand(&a, "/etc/sha$X").unwrap()[0];
        assert!(w.dynamic);
        assert_eq!(w.shape.as_deref(), Some("/etc/sha*"));
        assert_eq!(w.text, "/etc/sha$X");
    }
}
