//! The desktop tools (`sayri lookup`, `sayri screenshot`, `sayri notify`) as the daemon offers
//! them to the agent: which ones the system prompt lists ([`offered`]), and the environment
//! that carries the lookup endpoints into every command it runs ([`lookup_env`]). The tools
//! themselves are subcommands of the `sayri` binary; they read [`LOOKUP_ENV`].

/// Environment variables carrying the lookup endpoints into commands the daemon runs, in
/// source order: `lookup.duckduckgo_url`, `lookup.wikipedia_url`, `lookup.archwiki_url`.
/// Set, they win over the settings file (a level 1–2 sandbox hides it).
pub const LOOKUP_ENV: [&str; 3] = [
    "SAYRI_LOOKUP_DUCKDUCKGO_URL",
    "SAYRI_LOOKUP_WIKIPEDIA_URL",
    "SAYRI_LOOKUP_ARCHWIKI_URL",
];

/// The environment the daemon gives every command for `sayri lookup`: [`LOOKUP_ENV`] with the
/// configured endpoints. An endpoint with credentials in it (`https://user:pass@host/`) is
/// left out: a sandboxed command must not learn them.
pub fn lookup_env(cfg: &sayri_core::domain::config::Config) -> Vec<(String, String)> {
    let urls = [
        &cfg.lookup.duckduckgo_url,
        &cfg.lookup.wikipedia_url,
        &cfg.lookup.archwiki_url,
    ];
    let has_credentials = |u: &str| {
        url::Url::parse(u).map_or(true, |u| !u.username().is_empty() || u.password().is_some())
    };
    LOOKUP_ENV
        .iter()
        .zip(urls)
        .filter(|(_, v)| !has_credentials(v))
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// The desktop tools this build has, as the system prompt offers them: `sayri notify` only
/// with D-Bus support (the `dbus` feature).
pub fn offered() -> sayri_core::domain::prompt::DesktopTools {
    sayri_core::domain::prompt::DesktopTools {
        lookup: true,
        screenshot: true,
        notify: cfg!(feature = "dbus"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_get_the_configured_endpoints_but_never_credentials() {
        let mut cfg = crate::config_file::user_defaults();
        cfg.lookup.duckduckgo_url = "http://127.0.0.1:8/ddg".into();
        cfg.lookup.wikipedia_url = "https://me:hunter2@wiki.example/api.php".into();
        let env = lookup_env(&cfg);
        assert_eq!(
            env,
            [
                (
                    "SAYRI_LOOKUP_DUCKDUCKGO_URL".to_string(),
                    "http://127.0.0.1:8/ddg".to_string()
                ),
                (
                    "SAYRI_LOOKUP_ARCHWIKI_URL".to_string(),
                    "https://wiki.archlinux.org/api.php".to_string()
                ),
            ]
        );
    }
}
