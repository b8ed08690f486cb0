//! A stdio server's environment: built, never inherited.
//!
//! The sandbox's environment policy gives the base set from the daemon's environment (`PATH`,
//! `HOME`, `USER`, `LOGNAME`, `SHELL`, `LANG`, `LC_*`, `TERM`, `TZ`; at levels 1–2 `HOME` is the
//! server's workspace and `TMPDIR=/tmp`, `XDG_CACHE_HOME=/tmp/.cache` are added). On top come
//! only the variables the server declares: literal values, and vault values for the keys it
//! names. Nothing else of the daemon's environment reaches a server, and a declared variable
//! that makes the loader or an interpreter run code is refused when the server is saved.

/// Variables refused by exact name: each makes a shell, an interpreter or a runtime load or run
/// code of the variable's choosing before (or instead of) the server's own.
pub const LOADER_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PYTHONWARNINGS",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_PATH",
    "GEM_HOME",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "GLIBC_TUNABLES",
    "GCONV_PATH",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_ASKPASS",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_TEMPLATE_DIR",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "SSH_ASKPASS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
    "DENO_CERT",
    "BUN_OPTIONS",
];

/// Prefixes refused: the dynamic loader's (`LD_PRELOAD`, `LD_AUDIT`, `LD_LIBRARY_PATH`, …,
/// and macOS's `DYLD_`), exported shell functions, git's numbered config pairs, npm's and
/// Lua's configuration (`npm_config_node_options` runs code), Python's and Node's start-up
/// families. Compared case-insensitively.
pub const LOADER_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "BASH_FUNC_",
    "GIT_CONFIG_KEY_",
    "GIT_CONFIG_VALUE_",
    "NPM_CONFIG_",
    "LUA_INIT_",
    "PYTHONEXEC",
];

/// Whether `name` is a loader or interpreter start-up variable (refused in a server's
/// declared environment). Compared case-insensitively: several runtimes read lower-case forms.
pub fn is_loader_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    LOADER_VARIABLES.contains(&upper.as_str())
        || LOADER_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// Checks a declared variable's name: a shell-style name, and none of Sayri's own (`SAYRI_*`).
///
/// # Errors
/// [`VariableNameError`]: the name is empty, not of `A–Z a–z 0–9 _` starting with a letter or
/// `_`, or starts with `SAYRI_`.
pub fn check_variable_name(name: &str) -> Result<(), VariableNameError> {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(VariableNameError::NotPlain(name.to_string()));
    }
    if name.to_ascii_uppercase().starts_with("SAYRI_") {
        return Err(VariableNameError::Reserved(name.to_string()));
    }
    Ok(())
}

/// A declared variable name that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariableNameError {
    /// Not a shell-style name.
    #[error("variable name {0:?} must be letters, digits and _, not starting with a digit")]
    NotPlain(String),
    /// One of Sayri's own (`SAYRI_*`).
    #[error("variable {0} is reserved for Sayri's own programs")]
    Reserved(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_class_of_loader_variables_is_recognised() {
        for n in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "ld_preload",
            "DYLD_INSERT_LIBRARIES",
            "NODE_OPTIONS",
            "npm_config_node_options",
            "PYTHONSTARTUP",
            "PYTHONPATH",
            "BASH_ENV",
            "BASH_FUNC_ls%%",
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_KEY_0",
            "PERL5OPT",
            "JAVA_TOOL_OPTIONS",
            "GLIBC_TUNABLES",
        ] {
            assert!(is_loader_variable(n), "{n}");
        }
        for n in [
            "NOTES_DIR",
            "UNITS",
            "WEATHER_API_KEY",
            "PATH",
            "LANG",
            "TOKEN",
        ] {
            assert!(!is_loader_variable(n), "{n}");
        }
    }

    #[test]
    fn variable_names_are_plain_and_not_sayris() {
        assert!(check_variable_name("NOTES_TOKEN").is_ok());
        assert!(check_variable_name("_x1").is_ok());
        for bad in ["", "1A", "A-B", "A=B", "SAYRI_SOCKET", "sayri_x"] {
            assert!(check_variable_name(bad).is_err(), "{bad:?}");
        }
    }
}
