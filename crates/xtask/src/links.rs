//! The internal link checker: every link in the built book must lead
//! somewhere, with no network. It reads every page and stylesheet under
//! `book/` and checks
//!
//! - `href` and `src` of every tag (`<a>`, `<link>`, `<script>`, `<img>`,
//!   `<iframe>`, SVG `<use>`, …) that points inside the book: the file must
//!   exist (a folder means its `index.html`), and a `#fragment` must be the
//!   `id` of an element of the target page;
//! - `url(...)` in every stylesheet, e.g. KaTeX's fonts: the file must
//!   exist;
//! - that no page gives two elements the same `id` (a link to it would be
//!   ambiguous), except the print page, which joins every chapter and so
//!   repeats headings such as "Questions".
//!
//! Links to other sites (`https:`, `mailto:`, `//host`) are not followed.
//! The browser check (`browser.rs`) checks links once more in the rendered
//! pages, which also covers the links mdBook's JavaScript adds (the
//! sidebar).

use crate::Failure;
use crate::html::{self, percent_decode};
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// One page or stylesheet of the book, as the checker sees it.
#[derive(Default)]
struct File {
    ids: HashSet<String>,
    duplicates: Vec<String>,
    /// (attribute, value) of every link-like attribute, in order.
    links: Vec<(&'static str, String)>,
    /// The page's `<base href>`, if any.
    base: Option<String>,
}

/// What the link checker found.
#[derive(Debug, Default)]
pub struct Report {
    /// One line per problem, naming the page, the link and what is missing.
    pub problems: Vec<String>,
    /// How many distinct internal links were followed.
    pub checked: usize,
}

/// Check every link in the book built in `book`.
pub fn check(book: &Path) -> Result<Report, Failure> {
    let mut files: BTreeMap<PathBuf, File> = BTreeMap::new();
    for path in all_files(book)? {
        let rel = path.strip_prefix(book).unwrap_or(&path).to_path_buf();
        match path.extension().and_then(|e| e.to_str()) {
            Some("html") => {
                files.insert(rel, read_page(&fs::read_to_string(&path)?));
            }
            Some("css") => {
                let css = fs::read_to_string(&path)?;
                let links =
                    css_urls(&css).into_iter().map(|u| ("url", u)).collect();
                files.insert(
                    rel,
                    File {
                        links,
                        ..File::default()
                    },
                );
            }
            _ => {}
        }
    }
    let mut report = Report::default();
    for (rel, file) in &files {
        // rustdoc's source view is a target of links, not checked itself
        // (its own links lead into API pages the book does not ship).
        if rel.starts_with("rustdoc") {
            continue;
        }
        let name = slash(rel);
        if !file.duplicates.is_empty() && name != "print.html" {
            report.problems.push(format!(
                "{name}: duplicate id(s), a link to them is ambiguous: {}",
                file.duplicates.join(", ")
            ));
        }
        let mut seen = HashSet::new();
        for (attr, link) in &file.links {
            if !seen.insert((attr, link)) || is_external(link) {
                continue;
            }
            report.checked += 1;
            if let Some(why) = problem(book, &files, rel, file, link) {
                report
                    .problems
                    .push(format!("{name}: {attr}=\"{link}\": {why}"));
            }
        }
    }
    Ok(report)
}

/// What is wrong with `link` on page `rel`, if anything.
fn problem(
    book: &Path,
    files: &BTreeMap<PathBuf, File>,
    rel: &Path,
    file: &File,
    link: &str,
) -> Option<String> {
    if is_external(link) {
        return None;
    }
    let (path, fragment) = match link.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (link, None),
    };
    let path = path.split('?').next().unwrap_or_default();
    if path.is_empty() && file.base.is_some() {
        // mdBook's 404 page sets `<base href="/">` so that it works at any
        // depth; its heading's self-link `#document-not-found-404` then
        // points at the site root. Harmless, and not ours to change.
        return None;
    }
    let target = if path.is_empty() {
        rel.to_path_buf()
    } else {
        let from = match &file.base {
            // An absolute <base> is the site root, i.e. the book's root.
            Some(base) if base.starts_with('/') => PathBuf::new(),
            _ => rel.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let path = percent_decode(path);
        let joined = match path.strip_prefix('/') {
            Some(abs) => {
                let site = file.base.as_deref().unwrap_or("/");
                PathBuf::from(
                    abs.strip_prefix(site.trim_start_matches('/'))
                        .unwrap_or(abs),
                )
            }
            None => from.join(&path),
        };
        let Some(mut target) = normalize(&joined) else {
            return Some("points outside the book".to_string());
        };
        if path.ends_with('/') || book.join(&target).is_dir() {
            target.push("index.html");
        }
        target
    };
    if !book.join(&target).is_file() {
        return Some(format!("no file {} in the book", slash(&target)));
    }
    let fragment = percent_decode(fragment.unwrap_or_default());
    if fragment.is_empty() {
        return None;
    }
    match files.get(&target) {
        Some(page) if target.extension().is_some_and(|e| e == "html") => {
            (!page.ids.contains(&fragment)).then(|| {
                format!(
                    "no element with id \"{fragment}\" in {}",
                    slash(&target)
                )
            })
        }
        _ => None,
    }
}

fn is_external(link: &str) -> bool {
    if link.starts_with("//") {
        return true;
    }
    // A URL scheme: letters, digits, + - . before the first `:`, and the
    // `:` comes before any `/`, `?` or `#`.
    match link.find(':') {
        Some(i) => {
            let scheme = &link[..i];
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
                })
        }
        None => false,
    }
}

fn read_page(text: &str) -> File {
    let mut page = File::default();
    for tag in html::tags(text) {
        if tag.closing {
            continue;
        }
        for (attr, value) in &tag.attrs {
            match attr.as_str() {
                "id" => {
                    let first = page.ids.insert(value.clone());
                    if !first {
                        page.duplicates.push(value.clone());
                    }
                }
                "name" if tag.name == "a" => {
                    page.ids.insert(value.clone());
                }
                "href" if tag.name == "base" => page.base = Some(value.clone()),
                "href" => page.links.push(("href", value.clone())),
                "xlink:href" => page.links.push(("xlink:href", value.clone())),
                "src" => page.links.push(("src", value.clone())),
                _ => {}
            }
        }
    }
    page
}

/// Every `url(...)` in a stylesheet, except `data:` URLs.
fn css_urls(css: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = css;
    while let Some(i) = rest.find("url(") {
        rest = &rest[i + 4..];
        let end = rest.find(')').unwrap_or(rest.len());
        let url = rest[..end].trim().trim_matches(['"', '\'']).trim();
        if !url.is_empty() && !url.starts_with("data:") && !url.starts_with('#')
        {
            out.push(url.to_string());
        }
        rest = &rest[end..];
    }
    out
}

/// `a/./b/../c` → `a/c`; None if it climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            // Climbing above the root is no path in the book.
            Component::ParentDir => out.pop().then_some(())?,
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    Some(out)
}

fn slash(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Every file under `dir`, sorted.
pub(crate) fn all_files(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch book folder with the given files.
    fn book(test: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("xtask-links-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn good_links_pass() {
        let dir = book(
            "good",
            &[
                (
                    "index.html",
                    "<h1 id=\"top\">x</h1><a href=\"m3/a.html#f\">",
                ),
                (
                    "m3/a.html",
                    "<figure id=\"f\"></figure><a href=\"../index.html#top\">\
                     <a href=\"#f\"><a href=\"../m3/\"><a href=\"#\">\
                     <a href=\"https://example.org/x#y\"><a href=\"mailto:a@b\">\
                     <link href=\"../k/k.css\"><script src=\"../s.js?v=1\">\
                     </script>",
                ),
                ("m3/index.html", ""),
                ("s.js", ""),
                ("k/k.css", "a{src:url(fonts/f.woff2) url('data:x')}"),
                ("k/fonts/f.woff2", ""),
                (
                    "404.html",
                    "<base href=\"/\"><a href=\"#nope\"><a href=\"m3/a.html#f\">",
                ),
            ],
        );
        assert_eq!(check(&dir).unwrap().problems, Vec::<String>::new());
    }

    #[test]
    fn dead_pages_anchors_fonts_and_duplicate_ids_are_reported() {
        let dir = book(
            "dead",
            &[
                (
                    "index.html",
                    "<p id=\"a\"></p><p id=\"a\"></p><a href=\"gone.html\">\
                     <a href=\"m3/a.html#nowhere\"><a href=\"#missing\">\
                     <a href=\"../../etc/passwd\"><img src=\"pic.png\">",
                ),
                ("m3/a.html", ""),
                ("k.css", "@font-face{src:url(fonts/KaTeX_Main.woff2)}"),
            ],
        );
        let problems = check(&dir).unwrap().problems.join("\n");
        for expected in [
            "index.html: duplicate id(s), a link to them is ambiguous: a",
            "href=\"gone.html\": no file gone.html",
            "href=\"m3/a.html#nowhere\": no element with id \"nowhere\" in m3/a.html",
            "href=\"#missing\": no element with id \"missing\" in index.html",
            "points outside the book",
            "src=\"pic.png\": no file pic.png",
            "k.css: url=\"fonts/KaTeX_Main.woff2\": no file fonts/KaTeX_Main.woff2",
        ] {
            assert!(problems.contains(expected), "{expected}\n{problems}");
        }
    }

    #[test]
    fn external_links_are_recognised() {
        for link in ["https://x", "http://x", "mailto:a", "//cdn/x", "data:x"] {
            assert!(is_external(link), "{link}");
        }
        for link in ["a.html", "a.html#b:c", "#x", "../a", "/abs"] {
            assert!(!is_external(link), "{link}");
        }
    }
}
