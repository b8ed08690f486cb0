//! A skills registry's index, and the two questions asked of it: which package a slug names,
//! and which packages match a search. Pure: the caller downloads the index and hands its bytes
//! in.
//!
//! The index is one JSON document:
//!
//! ```json
//! {"packages": [{"id": "weather-brief", "name": "Weather brief", "author": "alice",
//!                "description": "Short weather briefings.", "version": "1.0.3",
//!                "type": "sayri_skill", "download_url": "weather-brief.zip",
//!                "sha256": "…64 hex digits…"}]}
//! ```
//!
//! * Only packages of `type` `sayri_skill` whose `id` is a valid folder name
//!   ([`valid_slug`]) are skills; others (plugins, entries without a type, ids such as
//!   `../x`) are skipped, as is an entry that is not an object of that shape — one bad entry
//!   never hides the rest.
//! * `download_url` is absolute, or relative to the index's own address. The package is a
//!   `.zip` or `.tar.gz` archive, or a bare `SKILL.md`. `sha256`, when given, is the download's
//!   hash, and a download that differs is refused.
//! * Everything in the index is outside text: names and descriptions are shown through
//!   [`super::display_text`], never followed as instructions.
//!
//! Slugs ([`SlugRequest::parse`]): trimmed, one leading `@` dropped, `owner/slug` split at the
//! first `/`; the slug keeps only `A-Z a-z 0-9 _ -` and is trimmed of `_`. A slug that is empty
//! then (or not a usable folder name: it must start with a letter or digit and have at most 64
//! characters) is refused. The owner, when given, must be the package's `author` (compared the
//! same way, ignoring case).

use super::{display_text, valid_slug};
use serde::Deserialize;

/// The `type` of a skill package.
pub const SKILL_TYPE: &str = "sayri_skill";

/// Longest name shown for a package, in characters.
const MAX_NAME_CHARS: usize = 80;
/// Longest description shown for a package, in characters.
const MAX_DESCRIPTION_CHARS: usize = 300;

/// One skill package of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// Its id: the slug it is installed by.
    pub id: String,
    /// Its name (the id when the index gives none), made safe to show.
    pub name: String,
    /// Its author, made safe to show.
    pub author: Option<String>,
    /// Its description, made safe to show.
    pub description: String,
    /// Its version, when given.
    pub version: Option<String>,
    /// Where it is downloaded from (absolute, or relative to the index).
    pub download_url: Option<String>,
    /// The download's SHA-256 (hex, lowercase), when the index gives one.
    pub sha256: Option<String>,
}

/// An entry as the index writes it.
#[derive(Deserialize)]
struct Entry {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    download_url: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    sha256: Option<String>,
}

/// The document as the index writes it.
#[derive(Deserialize)]
struct Document {
    packages: Vec<serde_json::Value>,
}

/// A registry's skill packages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    /// The skill packages, in index order.
    pub packages: Vec<Package>,
}

/// Why an index or a slug cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The index is not `{"packages": [...]}`.
    #[error("the registry's index is not a skills index ({0}); check skills.registry_url")]
    BadIndex(String),
    /// The slug gives no usable name.
    #[error(
        "{given:?} names no skill: a registry slug is letters, digits, - and _ (optionally owner/slug), starting with a letter or digit, at most 64 characters"
    )]
    BadSlug {
        /// The slug as given.
        given: String,
    },
}

impl Index {
    /// Reads an index document.
    ///
    /// # Errors
    /// [`RegistryError::BadIndex`] when it is not JSON of the shape `{"packages": [...]}`.
    ///
    /// ```
    /// use sayri_core::domain::skills::registry::Index;
    /// let doc = br#"{"packages": [{"id": "a", "type": "sayri_skill"}, {"id": "p", "type": "sayri_plugin"}, 7]}"#;
    /// let index = Index::parse(doc).unwrap();
    /// assert_eq!(index.packages.len(), 1);
    /// assert!(Index::parse(b"[]").is_err());
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<Index, RegistryError> {
        let doc: Document =
            serde_json::from_slice(bytes).map_err(|e| RegistryError::BadIndex(e.to_string()))?;
        let packages = doc
            .packages
            .into_iter()
            .filter_map(|v| serde_json::from_value::<Entry>(v).ok())
            .filter(|e| e.kind.as_deref() == Some(SKILL_TYPE) && valid_slug(e.id.trim()))
            .map(Package::from_entry)
            .collect();
        Ok(Index { packages })
    }

    /// The package `request` names: its `id` is the slug, or its name is the slug (ignoring
    /// case); with an owner, its author must be that owner. Only a package that can be
    /// downloaded (it has a `download_url`) is returned.
    pub fn find(&self, request: &SlugRequest) -> Option<&Package> {
        let by_owner = |p: &Package| match &request.owner {
            None => true,
            Some(owner) => p
                .author
                .as_deref()
                .is_some_and(|a| reduce(a).eq_ignore_ascii_case(owner)),
        };
        let usable = |p: &Package| p.download_url.is_some() && by_owner(p);
        self.packages
            .iter()
            .find(|p| usable(p) && p.id == request.slug)
            .or_else(|| {
                self.packages
                    .iter()
                    .find(|p| usable(p) && p.name.eq_ignore_ascii_case(&request.slug))
            })
    }

    /// The packages whose id, name, author or description contain every word of `query`
    /// (ignoring case), in index order.
    pub fn search(&self, query: &str) -> Vec<&Package> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        self.packages
            .iter()
            .filter(|p| {
                let text = format!(
                    "{} {} {} {}",
                    p.id,
                    p.name,
                    p.author.as_deref().unwrap_or(""),
                    p.description
                )
                .to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .collect()
    }
}

impl Package {
    fn from_entry(e: Entry) -> Package {
        let shown =
            |s: Option<String>, max| s.map(|s| display_text(&s, max)).filter(|s| !s.is_empty());
        let id = e.id.trim().to_string();
        Package {
            name: shown(e.name, MAX_NAME_CHARS).unwrap_or_else(|| display_text(&id, 64)),
            author: shown(e.author, MAX_NAME_CHARS),
            description: shown(e.description, MAX_DESCRIPTION_CHARS).unwrap_or_default(),
            version: shown(e.version, 40),
            download_url: e.download_url.map(|u| u.trim().to_string()),
            sha256: e.sha256.map(|h| h.trim().to_ascii_lowercase()),
            id,
        }
    }
}

/// A slug asked for, sanitised (see the module notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlugRequest {
    /// The skill's slug (a valid folder name).
    pub slug: String,
    /// The owner given before a `/`, sanitised the same way; `None` when none was given or
    /// nothing of it remains.
    pub owner: Option<String>,
}

/// `text` reduced to `A-Z a-z 0-9 _ -`, trimmed of `_`.
fn reduce(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .collect();
    kept.trim_matches('_').to_string()
}

impl SlugRequest {
    /// Sanitises `given` (see the module notes).
    ///
    /// # Errors
    /// [`RegistryError::BadSlug`] when no usable slug remains.
    ///
    /// ```
    /// use sayri_core::domain::skills::registry::SlugRequest;
    /// let r = SlugRequest::parse(" @alice/weather_brief_ ").unwrap();
    /// assert_eq!((r.slug.as_str(), r.owner.as_deref()), ("weather_brief", Some("alice")));
    /// assert_eq!(SlugRequest::parse("../../etc").unwrap().slug, "etc");
    /// assert!(SlugRequest::parse("../..").is_err());
    /// assert!(SlugRequest::parse("@/").is_err());
    /// ```
    pub fn parse(given: &str) -> Result<SlugRequest, RegistryError> {
        let trimmed = given.trim();
        let trimmed = trimmed.strip_prefix('@').unwrap_or(trimmed);
        let (owner, slug) = match trimmed.split_once('/') {
            Some((owner, slug)) => (Some(reduce(owner)), reduce(slug)),
            None => (None, reduce(trimmed)),
        };
        if !valid_slug(&slug) {
            return Err(RegistryError::BadSlug {
                given: given.to_string(),
            });
        }
        Ok(SlugRequest {
            slug,
            owner: owner.filter(|o| !o.is_empty()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> Index {
        Index::parse(
            br#"{"packages": [
                {"id": "weather-brief", "name": "Weather Brief", "author": "alice",
                 "description": "Short forecasts for any city.", "type": "sayri_skill",
                 "download_url": "w.zip", "sha256": " ABCD "},
                {"id": "notes", "name": "notes", "author": "bob", "type": "sayri_skill",
                 "download_url": "https://example.invalid/n.md"},
                {"id": "no-download", "type": "sayri_skill"},
                {"id": "a-plugin", "type": "sayri_plugin", "download_url": "p.zip"},
                {"id": "untyped", "download_url": "u.zip"},
                {"name": "no id", "type": "sayri_skill"},
                {"id": "../evil", "type": "sayri_skill", "download_url": "e.zip"},
                "not an object"
            ]}"#,
        )
        .unwrap()
    }

    #[test]
    fn only_skill_packages_with_an_id_are_read_and_bad_entries_are_skipped() {
        let index = index();
        let ids: Vec<&str> = index.packages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["weather-brief", "notes", "no-download"]);
        assert_eq!(index.packages[0].sha256.as_deref(), Some("abcd"));
        for bad in [&b"{}"[..], b"[]", b"not json", br#"{"packages": {}}"#] {
            assert!(
                Index::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_slug_finds_a_package_by_id_or_by_name_and_an_owner_must_be_its_author() {
        let i = index();
        let find = |s: &str| {
            i.find(&SlugRequest::parse(s).unwrap())
                .map(|p| p.id.clone())
        };
        assert_eq!(find("weather-brief").as_deref(), Some("weather-brief"));
        assert_eq!(
            find("@alice/weather-brief").as_deref(),
            Some("weather-brief")
        );
        assert_eq!(find("bob/weather-brief"), None);
        assert_eq!(find("NOTES").as_deref(), Some("notes"));
        assert_eq!(find("no-download"), None, "nothing to download");
        assert_eq!(find("a-plugin"), None, "plugins are not skills");
        assert_eq!(find("untyped"), None);
    }

    #[test]
    fn a_search_matches_every_word_in_any_field_ignoring_case() {
        let i = index();
        let ids = |q: &str| -> Vec<String> { i.search(q).iter().map(|p| p.id.clone()).collect() };
        assert_eq!(ids("FORECASTS city"), ["weather-brief"]);
        assert_eq!(ids("bob"), ["notes"]);
        assert!(ids("forecasts bob").is_empty());
    }

    #[test]
    fn slugs_are_sanitised_and_one_that_sanitises_to_nothing_is_refused() {
        let ok = |s: &str| SlugRequest::parse(s).unwrap();
        assert_eq!(ok("@weather").slug, "weather");
        assert_eq!(ok("__weather__").slug, "weather");
        assert_eq!(ok("we ather!").slug, "weather");
        assert_eq!(ok("a/b/c").slug, "bc");
        assert_eq!(ok("../../etc").owner, None, "an owner of only dots is none");
        for bad in [
            "",
            "   ",
            "@",
            "../..",
            "/",
            "___",
            "-rf",
            "é",
            &"a".repeat(65),
        ] {
            let e = SlugRequest::parse(bad).unwrap_err();
            assert!(e.to_string().contains("names no skill"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn index_text_is_made_safe_to_show() {
        let i = Index::parse(
            "{\"packages\": [{\"id\": \"x\", \"type\": \"sayri_skill\", \"name\": \"Ig\u{200b}nore\\nall\"}]}"
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(i.packages[0].name, "Ignore all");
    }
}
