//! What to do next, as the exact command: every hint the engine gives names the setting or the
//! command that fixes the problem, with a value to try.

use super::profile::AgentProfile;

/// Completion cap suggested when an answer was cut off and no cap is known: 2048 tokens.
pub const SUGGESTED_MAX_TOKENS: u32 = 2048;

/// The command that raises the completion cap of `profile`'s requests: its own
/// `model.max_tokens` when it has one (`sayri agents edit ID --max-tokens N`), else
/// `provider.max_tokens` (`sayri config set provider.max_tokens N`). `N` doubles the cap that
/// applied (`current`), or is [`SUGGESTED_MAX_TOKENS`].
pub fn raise_max_tokens(profile: &AgentProfile, current: Option<u32>) -> String {
    let next = current
        .map(|n| n.saturating_mul(2))
        .unwrap_or(SUGGESTED_MAX_TOKENS);
    if profile.model.max_tokens.is_some() {
        format!("sayri agents edit {} --max-tokens {next}", profile.id)
    } else {
        format!("sayri config set provider.max_tokens {next}")
    }
}

/// What to do when no model server answers at `url` for `profile`: fix the agent's own endpoint
/// when it has one, else point `provider.base_url` at a running server or let Sayri serve a
/// local model (`provider.local_model`).
pub fn unreachable(profile: &AgentProfile, url: &str) -> String {
    match profile.model.base_url.as_deref().filter(|u| !u.is_empty()) {
        Some(_) => format!(
            "start the model server at {url}, or change agent {id}'s endpoint: `sayri agents edit {id} --base-url URL`",
            id = profile.id
        ),
        None => format!(
            "start the model server at {url}, point Sayri at one that runs: `sayri config set provider.base_url URL`, or let Sayri serve a local model: `sayri config set provider.local_model NAME` (names: `sayri models list`)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_max_tokens_hint_names_the_setting_that_applied() {
        let mut p = AgentProfile::builtin_default();
        assert_eq!(
            raise_max_tokens(&p, Some(512)),
            "sayri config set provider.max_tokens 1024"
        );
        assert_eq!(
            raise_max_tokens(&p, None),
            "sayri config set provider.max_tokens 2048"
        );
        p.model.max_tokens = Some(300);
        p.id = "helper".into();
        assert_eq!(
            raise_max_tokens(&p, Some(300)),
            "sayri agents edit helper --max-tokens 600"
        );
    }

    #[test]
    fn the_unreachable_hint_names_the_endpoint_setting_of_who_uses_it() {
        let mut p = AgentProfile::builtin_default();
        let h = unreachable(&p, "http://127.0.0.1:11434/v1");
        assert!(h.contains("sayri config set provider.base_url URL"), "{h}");
        assert!(
            h.contains("sayri config set provider.local_model NAME"),
            "{h}"
        );
        p.id = "remote".into();
        p.model.base_url = Some("http://10.0.0.9:8080/v1".into());
        let h = unreachable(&p, "http://10.0.0.9:8080/v1");
        assert!(h.contains("sayri agents edit remote --base-url URL"), "{h}");
        assert!(!h.contains("provider.base_url"), "{h}");
    }
}
