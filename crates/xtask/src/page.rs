//! Checks of each page mdBook built: KaTeX errors, raw math left in a
//! page, directives left unexpanded, empty code blocks, figures without a
//! drawing, a caption or a text alternative, math without a text
//! alternative, headings that skip a level, captions away from their code,
//! included code without a listing caption, links to a CDN.

use crate::Failure;
use crate::html::{self, Tag};
use std::fs;
use std::path::Path;

/// The first link on a page to a placeholder repository address (an
/// `OWNER` or `USER` standing for the account), if any.
pub fn placeholder_address(html: &str) -> Option<String> {
    html.match_indices("href=\"").find_map(|(i, m)| {
        let rest = &html[i + m.len()..];
        let url = &rest[..rest.find('"')?];
        let path = url.split_once("://")?.1;
        path.split(['/', '.'])
            .any(|p| matches!(p, "OWNER" | "USER" | "USERNAME" | "owner"))
            .then(|| url.to_string())
    })
}

/// What is wrong with one built page, if anything.
pub fn check_page(html: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let prose = outside_code(html);
    if prose.contains("class=\"katex-error\"") {
        problems
            .push("KaTeX rendered an error (class katex-error)".to_string());
    }
    for raw in ["$$", "\\(", "\\["] {
        if prose.contains(raw) {
            problems.push(format!("raw math `{raw}` left unrendered"));
        }
    }
    for directive in ["{{#figure", "{{#output", "{{#ref", "{{#include"] {
        if prose.contains(directive) {
            problems.push(format!(
                "`{directive} ...}}}}` left unexpanded in the text (did the \
                 listings preprocessor run?)"
            ));
        }
    }
    if let Some(at) = html.find("\\{{#") {
        let shown: String = html[at..].chars().take(40).collect();
        problems.push(format!(
            "a stray backslash before a directive reaches the reader: \
             \"{shown}\" (mdBook unescapes only the first `\\{{{{#` of a \
             line, up to its last `}}}}`, and none in a block spanning lines; \
             a directive inside a code block needs no backslash)"
        ));
    }
    if let Some(address) = placeholder_address(html) {
        problems.push(format!(
            "the page links to a placeholder address ({address}); set \
             BOOK_REPOSITORY to the real repository or leave it unset"
        ));
    }
    for cdn in ["cdn.jsdelivr", "cdnjs.", "unpkg.com", "fonts.googleapis"] {
        if html.contains(cdn) {
            problems
                .push(format!("the page loads something from a CDN ({cdn})"));
        }
    }
    if html.contains("\"></code>") && html.contains("<code class=\"language-") {
        let empty = html
            .match_indices("<code class=\"language-")
            .filter(|(i, _)| {
                let rest = &html[*i..];
                rest.find('>')
                    .is_some_and(|end| rest[end + 1..].starts_with("</code>"))
            })
            .count();
        if empty > 0 {
            problems.push(format!(
                "{empty} empty code block(s): an include found nothing"
            ));
        }
    }
    let tags = html::tags(html);
    problems.extend(figure_problems(html, &tags));
    problems.extend(math_alternatives(&tags));
    problems.extend(heading_order(html, &tags));
    problems.extend(detached_captions(&tags));
    problems
}

/// The text inside the element that `tags[at]` opens.
fn element_text(html: &str, tags: &[&Tag], at: usize) -> Option<String> {
    let name = &tags[at].name;
    let end = tags[at..].iter().find(|t| t.closing && &t.name == name)?;
    Some(html::text_between(html, tags[at].end, end.start))
}

/// Every `<figure>` needs a drawing (an inline `<svg>` with something in
/// it), a caption, and a text alternative: `role="img"` on the SVG and a
/// non-empty `aria-label`, or `aria-labelledby` naming a non-empty
/// element (mdbook-listings points it at the SVG's `<title>`).
fn figure_problems(html: &str, tags: &[Tag]) -> Vec<String> {
    const DRAWN: [&str; 9] = [
        "rect", "path", "line", "polyline", "polygon", "circle", "ellipse",
        "text", "image",
    ];
    let mut problems = Vec::new();
    for (i, open) in tags.iter().enumerate() {
        if open.name != "figure" || open.closing {
            continue;
        }
        let inside: Vec<&Tag> = tags[i + 1..]
            .iter()
            .take_while(|t| !(t.name == "figure" && t.closing))
            .collect();
        let id = open.attr("id").unwrap_or("(no id)");
        let svg = inside.iter().find(|t| t.name == "svg" && !t.closing);
        let drawn = inside
            .iter()
            .any(|t| !t.closing && DRAWN.contains(&t.name.as_str()));
        let caption = inside
            .iter()
            .position(|t| t.name == "figcaption" && !t.closing)
            .and_then(|at| element_text(html, &inside, at))
            .unwrap_or_default();
        if svg.is_none() || !drawn || caption.is_empty() {
            problems.push(format!(
                "figure {id}: a figure without a drawing or a caption"
            ));
        }
        let Some(svg) = svg else { continue };
        let label = svg.attr("aria-label").unwrap_or_default().trim();
        // Like a browser, look the label up in the whole page: on the print
        // page mdBook renames the ids of a figure shown in two chapters
        // (`-1`) but not the aria-labelledby that points at its <title>,
        // which then names the first copy's title, with the same words.
        let all: Vec<&Tag> = tags.iter().collect();
        let labelled_by = svg.attr("aria-labelledby").and_then(|target| {
            let at = all
                .iter()
                .position(|t| !t.closing && t.attr("id") == Some(target))?;
            element_text(html, &all, at)
        });
        let has_alt =
            !label.is_empty() || labelled_by.is_some_and(|t| !t.is_empty());
        if svg.attr("role") != Some("img") || !has_alt {
            problems.push(format!(
                "figure {id}: the SVG has no text alternative (needs \
                 role=\"img\" and a non-empty aria-label, or aria-labelledby \
                 naming its <title>)"
            ));
        }
    }
    problems
}

/// KaTeX's visible HTML is `aria-hidden`; the MathML beside it is what a
/// screen reader reads. Every formula must have it.
fn math_alternatives(tags: &[Tag]) -> Vec<String> {
    let formulas = tags
        .iter()
        .filter(|t| !t.closing && t.has_class("katex"))
        .count();
    let mathml = tags
        .iter()
        .filter(|t| !t.closing && t.has_class("katex-mathml"))
        .count();
    if mathml < formulas {
        vec![format!(
            "{} of {formulas} formulas have no MathML, so screen readers \
             skip them (book.toml: [preprocessor.katex] output = \
             \"htmlAndMathml\")",
            formulas - mathml
        )]
    } else {
        Vec::new()
    }
}

/// The headings inside `<main>` start at h1 and never skip a level on the
/// way down (h2 → h4).
fn heading_order(html: &str, tags: &[Tag]) -> Vec<String> {
    let Some(main) = tags.iter().position(|t| t.name == "main" && !t.closing)
    else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let mut previous = 0u8;
    for (i, tag) in tags.iter().enumerate().skip(main) {
        if tag.name == "main" && tag.closing {
            break;
        }
        let level = match tag.name.as_bytes() {
            [b'h', d @ b'1'..=b'6'] if !tag.closing => d - b'0',
            _ => continue,
        };
        if level > previous + 1 {
            let end = tags[i..]
                .iter()
                .find(|t| t.closing && t.name == tag.name)
                .map_or(tag.end, |t| t.start);
            let text = html::text_between(html, tag.end, end);
            problems.push(if previous == 0 {
                format!("the page starts at h{level} (\"{text}\"), not h1")
            } else {
                format!(
                    "heading levels skip from h{previous} to h{level} at \
                     \"{text}\""
                )
            });
        }
        previous = level;
    }
    problems
}

/// A listing or output caption must sit right above its code block.
fn detached_captions(tags: &[Tag]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let is_caption = tag.name == "p"
            && !tag.closing
            && (tag.has_class("listing-caption")
                || tag.has_class("output-caption"));
        if !is_caption {
            continue;
        }
        let next = tags[i..]
            .iter()
            .position(|t| t.name == "p" && t.closing)
            .and_then(|j| tags.get(i + j + 1));
        if next.is_none_or(|t| t.name != "pre" || t.closing) {
            problems.push(format!(
                "caption {} is not followed by its code block",
                tag.attr("id").unwrap_or("(no id)")
            ));
        }
    }
    problems
}

/// Every fenced code block in a chapter that includes a listing
/// (`{{#include path:anchor}}`) must have come out with its numbered
/// caption, `<p class="listing-caption" id="listing-ANCHOR">`. mdbook-listings
/// adds it; this checks that it did, from the Markdown's side, so that no
/// included code reaches a reader unlabelled. The Markdown is read by
/// mdbook-listings' own reading of a chapter, so the two cannot disagree on
/// which blocks are listings.
pub fn included_blocks_have_captions(
    root: &Path,
) -> Result<Vec<String>, Failure> {
    let src = root.join("src");
    let mut chapters = Vec::new();
    let mut todo = vec![src.clone()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                chapters.push(path);
            }
        }
    }
    chapters.sort();
    let mut problems = Vec::new();
    for chapter in chapters {
        let rel = chapter.strip_prefix(&src).unwrap_or(&chapter);
        let page = if rel.file_name().is_some_and(|n| n == "README.md") {
            rel.with_file_name("index.html")
        } else {
            rel.with_extension("html")
        };
        let Ok(html) = fs::read_to_string(root.join("book").join(&page)) else {
            continue; // not in SUMMARY.md, so not part of the book
        };
        let tags = html::tags(&html);
        for anchor in
            mdbook_listings::listing_anchors(&fs::read_to_string(&chapter)?)
        {
            let id = format!("listing-{anchor}");
            let captioned = tags.iter().any(|t| {
                !t.closing
                    && t.attr("id") == Some(id.as_str())
                    && t.has_class("listing-caption")
            });
            if !captioned {
                problems.push(format!(
                    "src/{}: the code block that includes `{anchor}` has no \
                     listing caption (no <p class=\"listing-caption\" \
                     id=\"{id}\"> in book/{})",
                    rel.display(),
                    page.display()
                ));
            }
        }
    }
    Ok(problems)
}

/// The page with every `<pre>`, `<code>`, `<script>`, `<style>` and MathML
/// `<annotation>` element removed, so that a `$$` inside a code listing
/// (or the TeX source KaTeX keeps for screen readers) is not taken for
/// unrendered math.
fn outside_code(html: &str) -> String {
    const OPEN: [&str; 5] =
        ["<pre", "<code", "<script", "<style", "<annotation"];
    let mut out = String::with_capacity(html.len());
    // Where each opening tag next occurs at or after `at` (None: nowhere),
    // looked up again only once `at` has passed it: one pass per tag
    // over the page, not one per element (print.html holds thousands).
    let mut next = OPEN.map(|tag| html.find(tag));
    let mut at = 0;
    loop {
        for (slot, tag) in next.iter_mut().zip(OPEN) {
            if slot.is_some_and(|i| i < at) {
                *slot = html[at..].find(tag).map(|i| at + i);
            }
        }
        let Some((start, tag)) = next
            .iter()
            .zip(OPEN)
            .filter_map(|(i, tag)| i.map(|i| (i, tag)))
            .min()
        else {
            out.push_str(&html[at..]);
            return out;
        };
        out.push_str(&html[at..start]);
        let close = format!("</{}>", &tag[1..]);
        match html[start..].find(&close) {
            Some(end) => at = start + end + close.len(),
            None => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURE: &str = "<figure id=\"figure-f\"><svg role=\"img\" \
        aria-labelledby=\"figure-f-title\"><title id=\"figure-f-title\">A \
        grid</title><rect/></svg><figcaption>Figure 1.1: F</figcaption>\
        </figure>";

    #[test]
    fn a_placeholder_repository_address_is_a_problem() {
        let icon = "<a href=\"https://github.com/OWNER/book\" title=\"Git\">";
        let problems = check_page(&format!("<main><h1>T</h1>{icon}</main>"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("placeholder address"), "{problems:?}");
        let real = "<a href=\"https://github.com/ada/book\">OWNER</a>";
        assert_eq!(placeholder_address(real), None);
    }

    #[test]
    fn a_clean_page_has_no_problems() {
        let html = format!(
            "<main><h1>T</h1><p><span class=\"katex\"><span \
             class=\"katex-mathml\"><annotation>\\(x\\)</annotation></span>\
             x</span></p><h2>S</h2><h3>s</h3><h2>S2</h2>\
             <p>the class <code>katex-error</code> marks errors</p>\
             <p class=\"listing-caption\" id=\"listing-a\">Listing 1.1</p>\n\
             <pre><code class=\"language-rust\">let a = \"$$\";</code></pre>\
             {FIGURE}</main>"
        );
        assert_eq!(check_page(&html), Vec::<String>::new());
    }

    #[test]
    fn each_kind_of_damage_is_reported() {
        let no_alt = FIGURE.replace(" role=\"img\"", "");
        let empty_title = FIGURE.replace("A grid", " ");
        let cases = [
            ("<span class=\"katex-error\">\\frac</span>", "katex-error"),
            ("<p>$$x^2$$</p>", "raw math `$$`"),
            (
                "<pre><code>\\{{#figure heat\ncaption: C</code></pre>",
                "a stray backslash before a directive reaches the reader: \
                 \"\\{{#figure heat",
            ),
            ("<p>\\(x\\)</p>", "raw math `\\(`"),
            ("<link href=\"https://cdn.jsdelivr.net/katex.css\">", "CDN"),
            (
                "<pre><code class=\"language-rust\"></code></pre>",
                "empty code block",
            ),
            (
                "<figure><figcaption>F</figcaption></figure>",
                "without a drawing",
            ),
            (
                "<figure><svg></svg><figcaption>F</figcaption></figure>",
                "without a drawing",
            ),
            ("<figure><svg><rect/></svg></figure>", "or a caption"),
            (&no_alt, "no text alternative"),
            (&empty_title, "no text alternative"),
            (
                "<span class=\"katex\"><span class=\"katex-html\">x</span></span>",
                "1 of 1 formulas have no MathML",
            ),
            (
                "<p>{{#figure heat}}</p>",
                "`{{#figure ...}}` left unexpanded",
            ),
            ("<main><h2>Late</h2></main>", "starts at h2 (\"Late\")"),
            (
                "<main><h1>A</h1><h2>B</h2><h4>Deep <em>one</em></h4></main>",
                "skip from h2 to h4 at \"Deep one\"",
            ),
            (
                "<p class=\"listing-caption\" id=\"listing-x\">L</p><p>text</p>",
                "caption listing-x is not followed by its code block",
            ),
        ];
        for (html, expected) in cases {
            let problems = check_page(html);
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{html}: {problems:?}"
            );
        }
    }

    #[test]
    fn text_outside_code_drops_every_code_element_in_turn() {
        // Elements of each kind, repeated and interleaved: each is cut
        // out once, whatever kind came before it.
        let html = "a<code>$$</code>b<pre>x</pre>c<annotation>\\(y\\)\
                    </annotation>d<code>z</code>e<style>s</style>f<pre>\
                    <code>w</code></pre>g<script>$$</script>h";
        assert_eq!(outside_code(html), "abcdefgh");
        assert_eq!(outside_code("no code"), "no code");
        assert_eq!(outside_code("a<pre>never closed"), "a");
    }
}
