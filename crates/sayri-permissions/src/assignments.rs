//! Dangerous `NAME=value` assignments.
//!
//! Leading assignments are removed from the text that rules are matched against (so
//! `AWS_PROFILE=prod aws …` still meets an `aws *` rule). But some assignments change what the
//! command loads or executes, and some values run commands themselves; such a command is never
//! allowed without a person: it is at least `ask` (a deny rule still applies). The same holds for
//! assignments given to `env`/`sudo` and for standalone or `export`ed ones, which affect every
//! later command.

use super::shell::Assignment;

/// Exact variable names (compared case-insensitively) that change what gets loaded or executed.
const DANGEROUS_NAMES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "ZDOTDIR",
    "HOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONWARNINGS",
    "PYTHONINSPECT",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_HOME",
    "GEM_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "GCONV_PATH",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "GIT_PAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "BROWSER",
    "SUDO_ASKPASS",
    "SSH_ASKPASS",
    "GIT_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PROXY_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_TEMPLATE_DIR",
    "RUSTC_WRAPPER",
    "RUSTC",
    "RUSTFLAGS",
    "CC",
    "CXX",
    "MAKEFLAGS",
    "PROMPT",
    "TERMINFO",
    "XDG_CONFIG_HOME",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "TCLLIBPATH",
];

/// Name prefixes (compared case-insensitively) of variable families that do the same.
const DANGEROUS_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_CONFIG",
    "NPM_CONFIG_",
    "BASH_FUNC_",
    "CARGO_BUILD_",
    "CARGO_TARGET_",
];

/// Variables whose value is a command or program that the commands run later start (pagers,
/// editors, git's SSH and diff programs, askpass helpers, `less` preprocessors).
const PROGRAM_VARIABLES: &[&str] = &[
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "PROMPT_COMMAND",
    "RUSTC_WRAPPER",
];

/// The command line held by `assignment` when its variable names a program that later
/// commands run (`GIT_SSH_COMMAND='ssh -i k'` → `ssh -i k`; `LESSOPEN='| pre %s'` → `pre %s`).
/// `None` for other variables and for values computed at run time (those are flagged by
/// [`assignment_risk`]).
pub fn program_in(assignment: &Assignment) -> Option<String> {
    let upper = assignment.name.to_ascii_uppercase();
    if !PROGRAM_VARIABLES.contains(&upper.as_str()) || assignment.value.dynamic {
        return None;
    }
    let value = assignment
        .value
        .text
        .trim()
        .trim_start_matches('|')
        .trim_start_matches('|')
        .trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// The setting (`key`, `value`) that `assignment` completes together with one of `others`, when
/// it is half of a `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` pair (git's settings given in
/// the environment). Values computed at run time complete nothing (they are flagged by
/// [`assignment_risk`]).
pub fn git_config_pair(assignment: &Assignment, others: &[Assignment]) -> Option<(String, String)> {
    let upper = assignment.name.to_ascii_uppercase();
    let (n, is_key) = match (
        upper.strip_prefix("GIT_CONFIG_KEY_"),
        upper.strip_prefix("GIT_CONFIG_VALUE_"),
    ) {
        (Some(n), _) => (n.to_string(), true),
        (_, Some(n)) => (n.to_string(), false),
        _ => return None,
    };
    let partner = if is_key {
        format!("GIT_CONFIG_VALUE_{n}")
    } else {
        format!("GIT_CONFIG_KEY_{n}")
    };
    let other = others
        .iter()
        .find(|o| o.name.eq_ignore_ascii_case(&partner))?;
    let (key, value) = if is_key {
        (assignment, other)
    } else {
        (other, assignment)
    };
    (!key.value.dynamic && !value.value.dynamic)
        .then(|| (key.value.text.clone(), value.value.text.clone()))
}

/// Why `assignment` makes a command need a person, or `None` if it is harmless
/// (a plain literal value for an ordinary name, like `CI=1` or `RUST_LOG=debug`).
pub fn assignment_risk(assignment: &Assignment) -> Option<String> {
    let upper = assignment.name.to_ascii_uppercase();
    if !assignment.value.inner.is_empty()
        || assignment.value.raw.contains("$(")
        || assignment.value.raw.contains('`')
        || assignment.value.raw.contains("<(")
        || assignment.value.raw.contains(">(")
    {
        return Some(format!(
            "the value of `{}` runs a command (`{}`)",
            assignment.name, assignment.value.raw
        ));
    }
    if DANGEROUS_NAMES.contains(&upper.as_str())
        || DANGEROUS_PREFIXES.iter().any(|p| upper.starts_with(p))
    {
        return Some(format!(
            "`{}=` changes what the command loads or executes",
            assignment.name
        ));
    }
    None
}
