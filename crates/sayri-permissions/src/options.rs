//! Command-line options read the way programs read them (GNU `getopt_long` conventions). The
//! one option reader of the permission engine: wrappers, targets, decoders and recursive
//! deletes all use it, so a spelling that one part understands the others understand too.
//!
//! * `-abc` is a cluster of short options. A short option that takes an argument takes the rest
//!   of its cluster (`-oFILE`, `-sSLoFILE`) or, when it ends the cluster, the next word
//!   (`-o FILE`, `-sSLo FILE`). A short option with an *optional* argument (`sed -i[SUFFIX]`)
//!   takes only the rest of its cluster, never the next word.
//! * `--name=value` gives any long option a value; `--name VALUE` only for long options that
//!   take an argument.
//! * `--` ends the options; a lone `-` is an operand (it usually means standard input).
//! * [`Order::InOrder`]: the first operand ends the options (POSIX; wrappers such as `sudo`
//!   and `env` stop there so that the wrapped command keeps its own options).
//!   [`Order::Permute`]: options may follow operands (GNU argument permutation).

use super::shell::Word;

/// Which options of a program take an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec<'a> {
    /// Short options that take an argument, e.g. `"ug"` for `-u USER -g GROUP`.
    pub short_with_arg: &'a str,
    /// Long options that take an argument, without the dashes, e.g. `["user"]`.
    pub long_with_arg: &'a [&'a str],
    /// Short options whose argument is optional and only ever attached (`-i.bak`).
    pub short_optional_arg: &'a str,
}

impl Spec<'static> {
    /// No option takes an argument.
    pub const NONE: Spec<'static> = Spec {
        short_with_arg: "",
        long_with_arg: &[],
        short_optional_arg: "",
    };
}

impl<'a> Spec<'a> {
    /// Short options (`"ug"` for `-u USER -g GROUP`) and long options (without dashes) that take
    /// an argument.
    pub const fn new(short_with_arg: &'a str, long_with_arg: &'a [&'a str]) -> Self {
        Spec {
            short_with_arg,
            long_with_arg,
            short_optional_arg: "",
        }
    }
}

/// Whether options may follow operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The first operand ends the options.
    InOrder,
    /// Options may appear anywhere before `--`.
    Permute,
}

/// One option as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// `-x` for a short option, `--name` for a long one.
    pub name: String,
    /// Its argument, if it has one.
    pub value: Option<String>,
    /// Index (into the parsed arguments) of the word holding the value when it is a separate
    /// word (`-o FILE`); `None` when the value is attached (`-oFILE`, `--out=FILE`) or absent.
    pub value_word: Option<usize>,
}

/// Parsed options and operands of one argument list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// The options in the order written.
    pub options: Vec<Opt>,
    /// Indices of the operands (arguments that are not options or option values), in order.
    pub operands: Vec<usize>,
    /// With [`Order::InOrder`]: the index where the operands start (after a `--` that ended
    /// the options); the argument count when there is none.
    pub end: usize,
}

impl Parsed {
    /// Whether any option named in `names` was given.
    pub fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|o| names.contains(&o.name.as_str()))
    }

    /// The last option named in `names` (the one that counts when an option is repeated).
    pub fn last(&self, names: &[&str]) -> Option<&Opt> {
        self.options
            .iter()
            .rev()
            .find(|o| names.contains(&o.name.as_str()))
    }

    /// The value of the last option named in `names`, if it has one.
    pub fn value(&self, names: &[&str]) -> Option<&str> {
        self.last(names).and_then(|o| o.value.as_deref())
    }

    /// The values of every option named in `names`, in order.
    pub fn values<'p>(&'p self, names: &'p [&str]) -> impl Iterator<Item = &'p str> + 'p {
        self.options
            .iter()
            .filter(|o| names.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_deref())
    }

    /// The operand words.
    pub fn operand_words<'w>(&self, args: &'w [Word]) -> Vec<&'w Word> {
        self.operands.iter().map(|&i| &args[i]).collect()
    }

    /// The word that carries the value of `opt`: the argument itself when the value is a
    /// separate word (so what is known about it, e.g. its substitutions, stays known), else a
    /// literal word of the value text. `None` when the option has no value.
    pub fn carrier(opt: &Opt, args: &[Word]) -> Option<Word> {
        match (opt.value_word, &opt.value) {
            (Some(i), _) => args.get(i).cloned(),
            (None, Some(v)) => Some(Word::literal(v)),
            (None, None) => None,
        }
    }
}

/// Reads the options of `args` (the words after the program name) as described in the module
/// documentation.
///
/// ```
/// use sayri_permissions::options::{parse, Order, Spec};
/// use sayri_permissions::shell::Word;
/// let args: Vec<Word> = ["-sSLo", "out", "https://x", "-H", "a: b"].map(Word::literal).into();
/// let spec = Spec::new("oH", &["output"]);
/// let p = parse(&args, spec, Order::Permute);
/// assert_eq!(p.value(&["-o", "--output"]), Some("out"));
/// assert_eq!(p.operands, vec![2]);
/// assert_eq!(parse(&args, spec, Order::InOrder).end, 2);
/// ```
pub fn parse(args: &[Word], spec: Spec<'_>, order: Order) -> Parsed {
    let mut p = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let word = args[i].text.as_str();
        if word == "--" {
            p.operands.extend(i + 1..args.len());
            p.end = i + 1;
            return p;
        }
        if let Some(long) = word.strip_prefix("--") {
            i += long_option(long, i, args, spec, &mut p.options);
        } else if word.len() > 1 && word.starts_with('-') {
            i += short_cluster(&word[1..], i, args, spec, &mut p.options);
        } else if order == Order::InOrder {
            p.operands.extend(i..args.len());
            p.end = i;
            return p;
        } else {
            p.operands.push(i);
            i += 1;
        }
    }
    p.end = args.len();
    p
}

/// `--name`, `--name=value` or `--name VALUE` at index `at`; returns the words consumed.
fn long_option(long: &str, at: usize, args: &[Word], spec: Spec<'_>, out: &mut Vec<Opt>) -> usize {
    let (name, value) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (long, None),
    };
    if value.is_none() && spec.long_with_arg.contains(&name) {
        out.push(Opt {
            name: format!("--{name}"),
            value: args.get(at + 1).map(|w| w.text.clone()),
            value_word: (at + 1 < args.len()).then_some(at + 1),
        });
        return 2;
    }
    out.push(Opt {
        name: format!("--{name}"),
        value,
        value_word: None,
    });
    1
}

/// The short options of the cluster `body` (the word at `at` without its `-`); returns the
/// words consumed (2 when the last option took the next word as its argument).
fn short_cluster(
    body: &str,
    at: usize,
    args: &[Word],
    spec: Spec<'_>,
    out: &mut Vec<Opt>,
) -> usize {
    for (k, ch) in body.char_indices() {
        if spec.short_optional_arg.contains(ch) {
            let rest = &body[k + ch.len_utf8()..];
            out.push(Opt {
                name: format!("-{ch}"),
                value: (!rest.is_empty()).then(|| rest.to_string()),
                value_word: None,
            });
            return 1;
        }
        if !spec.short_with_arg.contains(ch) {
            out.push(Opt {
                name: format!("-{ch}"),
                value: None,
                value_word: None,
            });
            continue;
        }
        let rest = &body[k + ch.len_utf8()..];
        if !rest.is_empty() {
            out.push(Opt {
                name: format!("-{ch}"),
                value: Some(rest.to_string()),
                value_word: None,
            });
            return 1;
        }
        out.push(Opt {
            name: format!("-{ch}"),
            value: args.get(at + 1).map(|w| w.text.clone()),
            value_word: (at + 1 < args.len()).then_some(at + 1),
        });
        return 2;
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[&str]) -> Vec<Word> {
        text.iter().map(|t| Word::literal(t)).collect()
    }

    const SPEC: Spec<'static> = Spec::new("uo", &["user"]);

    #[test]
    fn an_optional_argument_is_only_the_rest_of_the_cluster() {
        let spec = Spec {
            short_optional_arg: "i",
            ..Spec::new("e", &[])
        };
        let p = parse(
            &words(&["-ni.bak", "-i", "s/a/b/", "f"]),
            spec,
            Order::Permute,
        );
        let i: Vec<_> = p.options.iter().map(|o| o.value.clone()).collect();
        assert_eq!(i, [None, Some(".bak".into()), None]);
        assert_eq!(p.operands, vec![2, 3]);
    }

    #[test]
    fn in_order_stops_at_the_first_operand_and_after_double_dash() {
        let p = parse(
            &words(&["-u", "bob", "-i", "ls", "-l"]),
            SPEC,
            Order::InOrder,
        );
        assert_eq!((p.end, p.operands.clone()), (3, vec![3, 4]));
        assert_eq!(p.value(&["-u"]), Some("bob"));
        assert!(p.has(&["-i"]) && !p.has(&["-l"]));
        let p = parse(&words(&["-i", "--", "-l"]), SPEC, Order::InOrder);
        assert_eq!((p.end, p.operands), (2, vec![2]));
    }

    #[test]
    fn permute_reads_options_after_operands() {
        let p = parse(&words(&["ls", "-l", "--user=x", "-"]), SPEC, Order::Permute);
        assert_eq!(p.operands, vec![0, 3]);
        assert!(p.has(&["-l"]));
        assert_eq!(p.value(&["--user"]), Some("x"));
    }

    #[test]
    fn clusters_attached_and_separate_values() {
        let args = words(&["-iuo", "f", "-oFILE", "--user", "u"]);
        let p = parse(&args, SPEC, Order::Permute);
        let names: Vec<_> = p.options.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["-i", "-u", "-o", "--user"]);
        assert_eq!(p.options[1].value.as_deref(), Some("o"));
        assert_eq!(p.values(&["-o"]).collect::<Vec<_>>(), ["FILE"]);
        let user = p.last(&["--user"]).unwrap();
        assert_eq!(user.value_word, Some(4));
        assert_eq!(Parsed::carrier(user, &args).unwrap().text, "u");
        assert!(
            p.operands.contains(&1),
            "`f` follows a value-less -o cluster: {p:?}"
        );
    }

    #[test]
    fn a_missing_value_is_none_and_the_end_is_clamped() {
        let p = parse(&words(&["-u"]), SPEC, Order::InOrder);
        assert_eq!(p.end, 1);
        assert_eq!(p.last(&["-u"]).unwrap().value, None);
        assert!(Parsed::carrier(p.last(&["-u"]).unwrap(), &[]).is_none());
    }
}
