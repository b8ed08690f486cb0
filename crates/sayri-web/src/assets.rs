//! The page's files, embedded in the binary at build time (hand-written HTML, CSS and
//! JavaScript; nothing is fetched from elsewhere, at build time or in the browser).

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The path it is served at.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

/// Every file of the page.
pub const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: include_str!("../assets/index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../assets/app.js"),
    },
    Asset {
        path: "/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../assets/style.css"),
    },
    Asset {
        path: "/icon.svg",
        content_type: "image/svg+xml",
        body: include_str!("../assets/icon.svg"),
    },
];

/// The file served at `path`.
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style_and_loads_nothing_from_elsewhere() {
        let html = find("/").unwrap().body;
        assert!(html.contains(r#"<script src="/app.js" defer></script>"#));
        assert_eq!(
            html.matches("<script").count(),
            1,
            "one external script only"
        );
        assert!(!html.contains("<style"), "no inline style element");
        assert!(!html.contains("style=\""), "no inline style attribute");
        let lower = html.to_ascii_lowercase();
        for (i, _) in lower.match_indices(" on") {
            let name: String = lower[i + 1..]
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect();
            assert!(
                !lower[i + 1 + name.len()..].starts_with('='),
                "inline event handler {name}"
            );
        }
        for attr in ["src=\"", "href=\""] {
            for (i, _) in html.match_indices(attr) {
                let value = &html[i + attr.len()..];
                assert!(
                    value.starts_with('/') || value.starts_with('#'),
                    "{attr} outside this server: {}",
                    &value[..value.len().min(40)]
                );
            }
        }
    }

    #[test]
    fn the_script_never_parses_strings_as_markup() {
        let js = find("/app.js").unwrap().body;
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "setTimeout(\"",
            "createContextualFragment",
            "DOMParser",
        ] {
            assert!(!js.contains(sink), "app.js uses {sink}");
        }
    }
}
