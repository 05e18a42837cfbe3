//! The search index, made readable. mdBook indexes every text node of a
//! chapter, and KaTeX writes each formula three times (`output =
//! "htmlAndMathml"` in book.toml): as MathML for screen readers, with the
//! TeX source in an `<annotation>`, and as the visible HTML, which is
//! `aria-hidden`. A search excerpt then reads "β \beta β". Figures add
//! their tick labels ("10⁻⁵ 10⁻³ 0 200 400") to the text.
//!
//! mdBook has no setting to index less, so after `mdbook build` this step
//! rewrites `book/searchindex-*.js`: it reads each chapter's built page as
//! mdBook's indexer reads the chapter (the text of `<main>`, split into
//! one document per heading of level 1 to 3), keeps one form of each
//! formula, its MathML text (`β`), drops the TeX annotation and the
//! visible duplicate, keeps of each figure only its text alternative (the
//! SVG's `<title>`), and rebuilds the index from those texts with the same
//! crate and version mdBook uses (elasticlunr-rs 3.0.2), so mdBook's
//! searcher reads it as before.
//!
//! Two checks keep the step honest: read without dropping anything, every
//! page must give exactly the documents mdBook indexed (else mdBook reads
//! pages differently now and this step must follow), and rebuilding the
//! index from mdBook's own documents must give back mdBook's index.

use crate::html;
use crate::{Failure, step};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// mdBook splits a chapter's text at headings up to this level (its
/// `output.html.search.heading-split-level`, 3 unless book.toml sets it).
pub const HEADING_SPLIT_LEVEL: u8 = 3;

/// Words longer than this are not indexed (as mdBook 0.5.4 does).
const MAX_WORD_LENGTH_TO_INDEX: usize = 80;

/// One document of the index: the text under one heading of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading's id, empty for text before any heading.
    pub id: String,
    /// The heading's text; None for a page without headings, whose
    /// document mdBook titles with the chapter's name.
    pub title: Option<String>,
    /// The text under it.
    pub body: String,
}

/// HTML elements that have no end tag.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
    "param", "source", "track", "wbr",
];

fn heading_level(name: &str) -> Option<u8> {
    let b = name.as_bytes();
    (b.len() == 2 && b[0] == b'h' && (b'1'..=b'6').contains(&b[1]))
        .then(|| b[1] - b'0')
}

/// An element open around the text being read.
struct Open {
    name: String,
    /// Whether readable text drops everything inside it.
    drops: bool,
}

/// Whether readable text drops text read inside `stack`: inside KaTeX's
/// visible HTML (aria-hidden; its MathML says the same) or its TeX
/// annotation, and inside an SVG unless inside its `<title>`.
fn dropped(stack: &[Open]) -> bool {
    let svg = stack.iter().position(|o| o.name == "svg");
    stack.iter().any(|o| o.drops)
        || svg.is_some_and(|s| !stack[s..].iter().any(|o| o.name == "title"))
}

/// The documents of one built page, read from its `<main>` as mdBook's
/// indexer reads the chapter; `readable` drops the TeX annotation and the
/// visible HTML of each formula, and every figure's text but its title.
pub fn sections(page: &str, readable: bool) -> Vec<Section> {
    let tags = html::tags(page);
    let Some(start) = tags.iter().position(|t| t.name == "main" && !t.closing)
    else {
        return Vec::new();
    };
    let end = tags[start..]
        .iter()
        .position(|t| t.name == "main" && t.closing)
        .map_or(tags.len(), |e| start + e);
    let mut out = Vec::new();
    let (mut heading, mut body) = (String::new(), String::new());
    let mut id: Option<String> = None;
    let mut in_heading = false;
    let mut stack: Vec<Open> = Vec::new();
    let mut raw: Option<&str> = None;
    let mut at = tags[start].end;
    let drops = |stack: &[Open]| readable && dropped(stack);
    for tag in &tags[start + 1..end] {
        let text = &page[at..tag.start];
        at = tag.end;
        if let Some(name) = raw {
            // Inside <script> or <style>: nothing is text.
            if tag.closing && tag.name == name {
                raw = None;
            }
            continue;
        }
        if !drops(&stack) {
            let target = if in_heading { &mut heading } else { &mut body };
            target.push_str(&html::decode(text));
        }
        if tag.closing {
            if let Some(i) = stack.iter().rposition(|o| o.name == tag.name) {
                stack.truncate(i);
            }
            if heading_level(&tag.name)
                .is_some_and(|l| l <= HEADING_SPLIT_LEVEL)
            {
                in_heading = false;
            }
            continue;
        }
        let level = heading_level(&tag.name);
        if let (Some(l), Some(heading_id)) = (level, tag.attr("id"))
            && l <= HEADING_SPLIT_LEVEL
        {
            if !heading.is_empty() {
                out.push(Section {
                    id: id.take().unwrap_or_default(),
                    title: Some(std::mem::take(&mut heading)),
                    body: std::mem::take(&mut body),
                });
            }
            id = Some(heading_id.to_string());
            in_heading = true;
        } else if tag.name == "script" || tag.name == "style" {
            raw = Some(if tag.name == "script" {
                "script"
            } else {
                "style"
            });
            continue;
        } else if !drops(&stack) {
            if in_heading {
                heading.push(' ');
            } else {
                body.push(' ');
            }
        }
        let closes_itself = page[tag.start..tag.end].ends_with("/>");
        if !VOID.contains(&tag.name.as_str()) && !closes_itself {
            stack.push(Open {
                name: tag.name.clone(),
                drops: tag.has_class("katex-html") || tag.name == "annotation",
            });
        }
    }
    if raw.is_none() && !drops(&stack) && end < tags.len() {
        let target = if in_heading { &mut heading } else { &mut body };
        target.push_str(&html::decode(&page[at..tags[end].start]));
    }
    if !body.is_empty() || !heading.is_empty() {
        out.push(Section {
            id: id.unwrap_or_default(),
            title: (!heading.is_empty()).then_some(heading),
            body,
        });
    }
    out
}

/// A field of the index as mdBook stores it: trimmed, and every run of two
/// or more white-space characters made one space.
pub fn collapse(text: &str) -> String {
    let text = text.trim();
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            run.push(c);
            continue;
        }
        match run.chars().count() {
            0 => {}
            1 => out.push_str(&run),
            _ => out.push(' '),
        }
        run.clear();
        out.push(c);
    }
    out
}

/// Words, for comparing two texts whatever their spacing.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Split a field into words as mdBook 0.5.4 does: at white space and
/// hyphens, lower case, words over 80 bytes dropped.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '-')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_lowercase())
        .filter(|s| s.len() <= MAX_WORD_LENGTH_TO_INDEX)
        .collect()
}

/// The elasticlunr index of `docs` (title, body, breadcrumbs), with the
/// document refs "0", "1", … as mdBook numbers them.
pub fn index(docs: &[[String; 3]]) -> Value {
    let mut index = elasticlunr::IndexBuilder::new()
        .add_field_with_tokenizer("title", Box::new(tokenize))
        .add_field_with_tokenizer("body", Box::new(tokenize))
        .add_field_with_tokenizer("breadcrumbs", Box::new(tokenize))
        .build();
    for (i, doc) in docs.iter().enumerate() {
        let fields: Vec<String> = doc.iter().map(|f| collapse(f)).collect();
        index.add_doc(&i.to_string(), &fields);
    }
    serde_json::to_value(&index).expect("an index serialises")
}

const JS_START: &str =
    "window.search = Object.assign(window.search, JSON.parse('";
const JS_END: &str = "'));";

/// The JSON inside mdBook's `searchindex-*.js`.
pub fn json_of_js(js: &str) -> Option<String> {
    let inner = js.trim().strip_prefix(JS_START)?.strip_suffix(JS_END)?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        // mdBook escaped every backslash and single quote with a backslash.
        out.push(if c == '\\' { chars.next()? } else { c });
    }
    Some(out)
}

/// `searchindex-*.js` holding `json`, written as mdBook writes it.
pub fn js_of_json(json: &str) -> String {
    format!(
        "{JS_START}{}{JS_END}",
        json.replace('\\', "\\\\").replace('\'', "\\'")
    )
}

/// The search index file of the book built in `book`.
fn index_file(book: &Path) -> Result<PathBuf, Failure> {
    let mut found = fs::read_dir(book)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("searchindex") && n.ends_with(".js")
            })
        })
        .collect::<Vec<_>>();
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        n => Err(Failure(format!(
            "expected one searchindex*.js in {}, found {n}",
            book.display()
        ))),
    }
}

/// What [`readable`] changed.
#[derive(Debug, Default)]
pub struct Rewrite {
    /// Documents in the index.
    pub documents: usize,
    /// Documents whose text changed.
    pub changed: usize,
    /// Words of the bodies before and after.
    pub words: (usize, usize),
}

/// Rewrite the search index of the book built in `root/book` to hold
/// readable text (see the module's documentation).
pub fn readable(root: &Path) -> Result<Rewrite, Failure> {
    step(
        "search index: one readable form of each formula, figures by \
          their text alternative",
    );
    let book = root.join("book");
    let file = index_file(&book)?;
    let js = fs::read_to_string(&file)?;
    let bad = |why: String| {
        Failure(format!(
            "{}: {why}",
            file.strip_prefix(root).unwrap_or(&file).display()
        ))
    };
    let json = json_of_js(&js)
        .ok_or_else(|| bad("not the JSON.parse('…') mdBook writes".into()))?;
    let mut all: Value =
        serde_json::from_str(&json).map_err(|e| bad(e.to_string()))?;
    let urls: Vec<String> = all["doc_urls"]
        .as_array()
        .ok_or_else(|| bad("no doc_urls".into()))?
        .iter()
        .map(|u| u.as_str().unwrap_or_default().to_string())
        .collect();
    let stored = &all["index"]["documentStore"]["docs"];
    let field = |i: usize, name: &str| {
        stored[i.to_string()][name].as_str().map(str::to_string)
    };
    let mut docs: Vec<[String; 3]> = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        let (Some(t), Some(b), Some(c)) =
            (field(i, "title"), field(i, "body"), field(i, "breadcrumbs"))
        else {
            return Err(bad(format!("document {i} ({url}) is not stored")));
        };
        docs.push([t, b, c]);
    }
    if index(&docs) != all["index"] {
        return Err(bad(
            "rebuilding the index from mdBook's own documents does not give \
             back mdBook's index; is mdbook still 0.5.4 with elasticlunr-rs \
             3.0.2?"
                .into(),
        ));
    }
    // The documents of each page, in order.
    let mut pages: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, url) in urls.iter().enumerate() {
        let page = url.split('#').next().unwrap_or(url);
        pages.entry(page).or_default().push(i);
    }
    let mut rewrite = Rewrite {
        documents: docs.len(),
        ..Rewrite::default()
    };
    let mut new_docs = docs.clone();
    for (page, refs) in &pages {
        let html = fs::read_to_string(book.join(page))
            .map_err(|e| bad(format!("{page}: {e}")))?;
        let as_mdbook = sections(&html, false);
        let as_read = sections(&html, true);
        if as_mdbook.len() != refs.len() {
            return Err(bad(format!(
                "{page}: mdBook indexed {} documents, this step reads {}; \
                 has mdBook changed how it splits a page?",
                refs.len(),
                as_mdbook.len()
            )));
        }
        // A heading's text as mdBook stored it, and readable.
        let mut renamed: Vec<(String, String)> = Vec::new();
        for ((&i, mine), read) in refs.iter().zip(&as_mdbook).zip(&as_read) {
            let [title, body, crumbs] = &docs[i];
            let same_title =
                mine.title.as_ref().is_none_or(|t| words(t) == words(title));
            if !same_title || words(&mine.body) != words(body) {
                return Err(bad(format!(
                    "{}: the page's text under this heading is not what \
                     mdBook indexed; has mdBook changed how it reads a page?",
                    urls[i]
                )));
            }
            let new_title = match &read.title {
                Some(t) => collapse(t),
                None => title.clone(),
            };
            if new_title != *title {
                renamed.push((title.clone(), new_title.clone()));
            }
            let mut new_crumbs = crumbs.clone();
            for (from, to) in &renamed {
                new_crumbs = new_crumbs.replace(from.as_str(), to);
            }
            let new_body = collapse(&read.body);
            rewrite.words.0 += body.split_whitespace().count();
            rewrite.words.1 += new_body.split_whitespace().count();
            if new_title != *title || new_body != *body || new_crumbs != *crumbs
            {
                rewrite.changed += 1;
            }
            new_docs[i] = [new_title, new_body, new_crumbs];
        }
    }
    all["index"] = index(&new_docs);
    let json = serde_json::to_string(&all).map_err(|e| bad(e.to_string()))?;
    fs::write(&file, js_of_json(&json))?;
    println!(
        "{} of {} documents rewritten; {} words of text, {} before",
        rewrite.changed, rewrite.documents, rewrite.words.1, rewrite.words.0
    );
    Ok(rewrite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as mdBook writes it: a formula as KaTeX renders it with
    /// htmlAndMathml, and a figure.
    const PAGE: &str = "<html><body><nav>Sidebar</nav><main>\n\
        <h1 id=\"one\"><a class=\"header\" href=\"#one\">One $</a></h1>\n\
        <p>Write <span class=\"katex\"><span class=\"katex-mathml\"><math>\
        <semantics><mrow><mi>β</mi></mrow><annotation encoding=\
        \"application/x-tex\">\\beta</annotation></semantics></math></span>\
        <span class=\"katex-html\" aria-hidden=\"true\"><span class=\"base\">\
        <span class=\"mord mathnormal\">β</span></span></span></span> &amp; \
        read.</p>\n<script>var x = '<p>no</p>';</script>\
        <h4 id=\"deep\">Deep</h4>\n<figure><svg viewBox=\"0 0 1 1\"><title \
        id=\"t\">A grid.</title><text>10⁻³</text><path d=\"M0\"/></svg>\
        <figcaption>Figure 1.1: Caption.</figcaption></figure>\n\
        <h2 id=\"two\">Two</h2><p>Last<br>line.</p>\n</main>\
        <p>After main.</p></body></html>";

    #[test]
    fn a_page_reads_as_mdbook_indexes_it_or_readable() {
        let mdbook = sections(PAGE, false);
        assert_eq!(mdbook.len(), 2);
        assert_eq!(mdbook[0].id, "one");
        assert_eq!(words(mdbook[0].title.as_ref().unwrap()), "One $");
        assert_eq!(
            words(&mdbook[0].body),
            "Write β \\beta β & read. Deep A grid. 10⁻³ Figure 1.1: Caption."
        );
        assert_eq!(
            (mdbook[1].id.as_str(), words(&mdbook[1].body).as_str()),
            ("two", "Last line.")
        );
        let readable = sections(PAGE, true);
        assert_eq!(
            words(&readable[0].body),
            "Write β & read. Deep A grid. Figure 1.1: Caption."
        );
        assert_eq!(readable[1], mdbook[1]);
    }

    #[test]
    fn a_page_without_headings_is_one_untitled_document() {
        let page = "<main><p>Only <b>text</b>.</p></main>";
        assert_eq!(
            sections(page, true),
            [Section {
                id: String::new(),
                title: None,
                body: " Only  text.".to_string()
            }]
        );
    }

    #[test]
    fn fields_collapse_and_split_as_mdbook_does_it() {
        assert_eq!(collapse("  a\nb  c \u{a0} d "), "a\nb c d");
        assert_eq!(
            tokenize("Fast-weight  memory\tX"),
            ["fast", "weight", "memory", "x"]
        );
        assert!(tokenize(&"a".repeat(81)).is_empty());
    }

    #[test]
    fn the_index_file_round_trips() {
        let json = r#"{"a":"it's \"q\" \\beta"}"#;
        let js = js_of_json(json);
        assert!(js.starts_with("window.search = Object.assign"));
        assert!(js.contains(r#"it\'s \\"q\\" \\\\beta"#), "{js}");
        assert_eq!(json_of_js(&js).as_deref(), Some(json));
        assert_eq!(json_of_js("window.search = {};"), None);
    }

    #[test]
    fn the_index_finds_a_word_of_a_document() {
        let docs = [
            ["Title".to_string(), "fast weights".into(), "Ch".into()],
            ["Other".to_string(), "delta rule".into(), "Ch".into()],
        ];
        let index = index(&docs);
        // "weights" is stemmed to "weight"; its trie node lists document 0.
        let mut node = &index["index"]["body"]["root"];
        for c in "weight".chars() {
            node = &node[c.to_string()];
        }
        assert!(node["docs"]["0"]["tf"].is_number(), "{node}");
        assert!(node["docs"].get("1").is_none());
        assert_eq!(index["documentStore"]["docs"]["1"]["body"], "delta rule");
    }
}
