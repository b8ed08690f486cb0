//! Requests handled before the model: "create an agent" and "install a skill", in English and
//! Spanish.
//!
//! A request is recognised only when a clause *asks* for it: the clause starts (after greetings
//! and polite openings such as "please", "can you", "¿puedes", "quiero que") with a creating or
//! installing verb followed by the thing — `create a (new) (research) agent`, `set up a
//! sub-agent`, `crea un subagente`, `instala la habilidad` — or states the wish directly (`I want
//! a subagent`, `quiero un subagente`). The word "agent" anywhere else never triggers it: "the
//! agent of change", "¿cuántos agentes de tránsito hay?", "how do I create an agent?" are
//! ordinary questions for the model. Pinned by the table in `intent_table_*` tests.

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Create a (sub-)agent.
    CreateAgent,
    /// Install or create a skill or plugin.
    InstallSkill,
}

/// Greetings and polite openings skipped at the start of a clause (longest first where they
/// share a start).
const OPENINGS: &[&[&str]] = &[
    &["i", "would", "like", "you", "to"],
    &["i'd", "like", "you", "to"],
    &["i", "want", "you", "to"],
    &["i", "need", "you", "to"],
    &["go", "ahead", "and"],
    &["por", "favor"],
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
    &["can", "u"],
    &["quiero", "que"],
    &["necesito", "que"],
    &["please"],
    &["pls"],
    &["let's"],
    &["lets"],
    &["puedes"],
    &["podrías"],
    &["podrias"],
    &["puede"],
    &["podría"],
    &["podria"],
    &["hey"],
    &["hi"],
    &["hello"],
    &["ok"],
    &["okay"],
    &["sayri"],
    &["hola"],
    &["oye"],
    &["now"],
    &["ahora"],
    &["also"],
    &["también"],
    &["tambien"],
    &["and"],
    &["y"],
    &["then"],
    &["luego"],
    &["me"],
];

/// "I want …" openings followed directly by the thing wanted.
const WISHES: &[&[&str]] = &[
    &["i", "would", "like"],
    &["i'd", "like"],
    &["i", "want"],
    &["i", "need"],
    &["me", "gustaría"],
    &["me", "gustaria"],
    &["quiero"],
    &["necesito"],
];

/// Verbs that create something (imperative, infinitive and the forms used in requests).
const CREATE_VERBS: &[&[&str]] = &[
    &["set", "up"],
    &["setup"],
    &["create"],
    &["make"],
    &["build"],
    &["add"],
    &["spawn"],
    &["configure"],
    &["define"],
    &["generate"],
    &["crea"],
    &["crear"],
    &["créame"],
    &["creame"],
    &["crees"],
    &["creas"],
    &["cree"],
    &["haz"],
    &["hazme"],
    &["hacer"],
    &["configura"],
    &["configurar"],
    &["configúrame"],
    &["configurame"],
    &["monta"],
    &["montar"],
    &["arma"],
    &["armar"],
    &["añade"],
    &["añadir"],
    &["agrega"],
    &["agregar"],
    &["genera"],
    &["generar"],
    &["prepara"],
    &["preparar"],
    &["definir"],
];

/// Verbs that install something.
const INSTALL_VERBS: &[&[&str]] = &[
    &["install"],
    &["instala"],
    &["instalar"],
    &["instálame"],
    &["instalame"],
    &["enable"],
    &["activa"],
    &["activar"],
];

/// Words that may stand between the verb and the thing: pronouns, indefinite articles, "new",
/// "another". ("the agent" is an existing agent: "make the agent faster" creates nothing.)
const DETERMINERS: &[&str] = &[
    "me", "us", "a", "an", "another", "one", "new", "un", "una", "otro", "otra", "nuevo", "nueva",
];

/// Definite articles, accepted before a skill or plugin ("install the skill X").
const DEFINITE: &[&str] = &["the", "el", "la", "my", "mi"];

/// Words after which the next word is not the thing being made ("a file named agent", "a
/// report about the agent").
const NOT_A_MODIFIER: &[&str] = &[
    "called", "named", "about", "for", "of", "with", "from", "to", "file", "list", "llamado",
    "llamada", "sobre", "de", "para", "con", "lista", "archivo", "the", "el", "la", "los", "las",
];

const AGENT_NOUNS: &[&str] = &[
    "agent",
    "subagent",
    "sub-agent",
    "agente",
    "subagente",
    "sub-agente",
];
const SKILL_NOUNS: &[&str] = &[
    "skill",
    "habilidad",
    "plugin",
    "complemento",
    "extensión",
    "extension",
];

/// What `text` asks for, if it is one of the requests handled before the model.
///
/// ```
/// use sayri_core::domain::agents::intent::{detect, Intent};
/// assert_eq!(detect("Create a subagent for release chores"), Some(Intent::CreateAgent));
/// assert_eq!(detect("¿Puedes crear un agente para backups?"), Some(Intent::CreateAgent));
/// assert_eq!(detect("install the skill weather-brief"), Some(Intent::InstallSkill));
/// assert_eq!(detect("What is the agent of change?"), None);
/// assert_eq!(detect("¿Cuántos agentes de tránsito hay?"), None);
/// ```
pub fn detect(text: &str) -> Option<Intent> {
    clauses(text).into_iter().find_map(|c| {
        let w = words(c);
        let start = skip_openings(&w);
        clause_intent(&w[start..])
    })
}

fn clause_intent(w: &[String]) -> Option<Intent> {
    if let Some(n) = starts_with_any(w, WISHES) {
        return names_thing(&w[n..], AGENT_NOUNS).then_some(Intent::CreateAgent);
    }
    if let Some(n) = starts_with_any(w, CREATE_VERBS) {
        if names_thing(&w[n..], AGENT_NOUNS) {
            return Some(Intent::CreateAgent);
        }
        return names_thing(&w[n..], SKILL_NOUNS).then_some(Intent::InstallSkill);
    }
    if let Some(n) = starts_with_any(w, INSTALL_VERBS) {
        return names_thing(&w[n..], SKILL_NOUNS).then_some(Intent::InstallSkill);
    }
    // The terse form "new subagent: …" / "nuevo subagente …".
    match w {
        [new, noun, ..] if matches!(new.as_str(), "new" | "nuevo") => {
            matches!(noun.as_str(), "subagent" | "sub-agent" | "subagente")
                .then_some(Intent::CreateAgent)
        }
        _ => None,
    }
}

/// Whether `w` is `[determiners…] [one modifier] noun`, with `noun` one of `nouns` (a plural
/// `-s` form too for skills). "sub agent" counts as one noun.
fn names_thing(w: &[String], nouns: &[&str]) -> bool {
    let skills = nouns == SKILL_NOUNS;
    let det = |x: &str| DETERMINERS.contains(&x) || (skills && DEFINITE.contains(&x));
    let mut i = 0;
    while i < w.len() && det(&w[i]) {
        i += 1;
    }
    let is_noun = |j: usize| -> bool {
        let Some(word) = w.get(j) else { return false };
        let word = word.as_str();
        if nouns.contains(&word) {
            return true;
        }
        if skills && let Some(singular) = word.strip_suffix("es").or_else(|| word.strip_suffix('s'))
        {
            return nouns.contains(&singular);
        }
        word == "sub" && w.get(j + 1).is_some_and(|n| nouns.contains(&n.as_str()))
    };
    if is_noun(i) {
        return true;
    }
    w.get(i)
        .is_some_and(|m| !NOT_A_MODIFIER.contains(&m.as_str()) && !det(m))
        && is_noun(i + 1)
}

/// The number of words of the first phrase of `phrases` that `w` starts with.
fn starts_with_any(w: &[String], phrases: &[&[&str]]) -> Option<usize> {
    phrases
        .iter()
        .find(|p| p.len() <= w.len() && p.iter().zip(w).all(|(a, b)| *a == b.as_str()))
        .map(|p| p.len())
}

fn skip_openings(w: &[String]) -> usize {
    let mut i = 0;
    while let Some(n) = starts_with_any(&w[i..], OPENINGS) {
        // "me" opens a Spanish request ("¿me creas…?") but "me gustaría" is a wish.
        if w[i] == "me" && starts_with_any(&w[i..], WISHES).is_some() {
            break;
        }
        i += n;
    }
    i
}

/// Clauses: split at sentence and clause punctuation (a `.` only when a space or the end
/// follows, so `agent.txt` stays one word).
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, (i, c)) in chars.iter().enumerate() {
        let next_is_space = chars.get(k + 1).is_none_or(|(_, n)| n.is_whitespace());
        let ends = matches!(
            c,
            ',' | ';' | ':' | '!' | '?' | '¿' | '¡' | '\n' | '(' | ')'
        ) || (*c == '.' && next_is_space);
        if ends {
            out.push(&text[start..*i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out
}

/// Lower-case words: letters, digits, and `-` `'` `.` `_` `/` inside a word.
fn words(clause: &str) -> Vec<String> {
    clause
        .to_lowercase()
        .replace('’', "'")
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '\'' | '.' | '_' | '/')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '-' | '\'' | '.' | '_' | '/')))
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREATE: &[&str] = &[
        "create a subagent for release chores with root access",
        "Create an agent for nightly backups",
        "please make me a new agent that only reads logs",
        "can you set up a sub-agent for disk maintenance?",
        "hey sayri, create a research agent",
        "I want a subagent with level 4",
        "new subagent: release helper",
        "Could you build another agent for git chores?",
        "spawn a sub agent to watch the build",
        "create a subagent with root access (level 4) for disk maintenance",
        "I'd like you to create an agent called Scout",
        "crea un subagente para copias de seguridad",
        "Crea un agente de investigación",
        "¿Puedes crear un nuevo agente para backups?",
        "quiero un subagente que lea los logs",
        "Hola Sayri, configura un subagente para el disco",
        "necesito un agente nuevo para tareas de release",
        "créame un agente",
        "nuevo subagente para limpiar /tmp",
        "quiero que crees un subagente con nivel 4",
        "¿me creas un agente para el correo?",
        "Por favor, crea otro agente",
    ];

    const NOT_CREATE: &[&str] = &[
        "What is the agent of change in this story?",
        "the agent of change",
        "How do I create an agent?",
        "explain what a subagent is",
        "create a file named agent.txt",
        "make the agent faster",
        "don't create an agent",
        "list my agents",
        "the travel agent booked a flight",
        "create a report about the agent",
        "write a poem about a secret agent",
        "¿Qué hacen los agentes de tránsito?",
        "¿Cuántos agentes de tránsito hay en Lima?",
        "crea una lista de agentes de tránsito",
        "¿Cómo creo un subagente?",
        "no crees un agente",
        "hablé con los agentes de tránsito y me crearon un problema",
        "el agente de cambio",
        "",
    ];

    #[test]
    fn intent_table_creation_requests_in_english_and_spanish_are_recognised() {
        for s in CREATE {
            assert_eq!(detect(s), Some(Intent::CreateAgent), "should create: {s:?}");
        }
    }

    #[test]
    fn intent_table_incidental_mentions_and_questions_are_not_requests() {
        for s in NOT_CREATE {
            assert_eq!(detect(s), None, "should not trigger: {s:?}");
        }
    }

    #[test]
    fn intent_table_skill_installs() {
        for s in [
            "install the skill weather-brief",
            "install skill weather-brief",
            "please install the plugin notes",
            "instala la habilidad clima",
            "instalar habilidad clima",
            "crea una habilidad para el clima",
            "create a skill that checks the weather",
        ] {
            assert_eq!(detect(s), Some(Intent::InstallSkill), "{s:?}");
        }
        for s in [
            "what skills do you have?",
            "how do I install a skill?",
            "¿qué habilidades tienes?",
            "my skill at chess is poor",
        ] {
            assert_eq!(detect(s), None, "{s:?}");
        }
    }
}
