//! Building the book, and the checks that turn silent damage into a failed
//! build: KaTeX errors, raw math left in a page, empty code blocks, figures
//! without a drawing, a caption or a text alternative, math without a
//! text alternative, headings that skip a level, included code without a
//! listing caption, dead links and anchors, links to a CDN.

use crate::html::{self, Tag};
use crate::{Failure, links, run, run_echo, step};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Build the book rooted at `root` into `root/book` and check every page.
/// Returns the number of pages checked.
pub fn build(root: &Path) -> Result<usize, Failure> {
    let controls = control_characters(root)?;
    if !controls.is_empty() {
        return Err(Failure(format!(
            "a chapter holds control characters, which render wrong but \
             parse (a TAB where `\\top` was typed, say):\n{}",
            controls.join("\n")
        )));
    }
    let answers = collapsed_answers(root)?;
    if !answers.is_empty() {
        return Err(Failure(format!(
            "a collapsed answer hides what the reader needs: an answer \
             (<details>) holds at most {MAX_ANSWER_WORDS} words of prose and \
             no listing, figure or output; make the rest main text:\n{}",
            answers.join("\n")
        )));
    }
    let lists = accidental_lists(root)?;
    if !lists.is_empty() {
        return Err(Failure(format!(
            "a line inside a paragraph starts like a list item, so Markdown \
             turns it into a list (and swallows its number or dash); reflow \
             the paragraph so the line starts with a word, or put a blank \
             line before a list meant as one:\n{}",
            lists.join("\n")
        )));
    }
    step(&format!("mdbook build {}", root.display()));
    let out = Command::new("mdbook")
        .arg("build")
        .arg(root)
        .output()
        .map_err(|e| Failure(format!("could not start mdbook: {e}")))?;
    let log = String::from_utf8_lossy(&out.stderr);
    eprint!("{log}");
    if !out.status.success() {
        return Err(Failure(format!(
            "mdbook build failed; the messages above say why{}",
            listings_errors(&log)
        )));
    }
    if log.contains("error: could not compile") {
        // mdBook asks a preprocessor whether it supports the renderer and
        // silently skips it when the command fails, so a listings crate
        // that does not compile would leave every directive unexpanded.
        return Err(Failure(
            "the listings preprocessor (or a crate it runs) did not compile, \
             so mdBook skipped it; the compiler's messages are above"
                .to_string(),
        ));
    }
    let katex: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("Rendering failed") || l.contains("rendering failure")
        })
        .collect();
    if !katex.is_empty() {
        return Err(Failure(format!(
            "KaTeX could not render some math (mdbook-katex left it raw):\n{}",
            katex.join("\n")
        )));
    }
    // mdBook warns when a chapter's Markdown mangles its inline HTML (say,
    // emphasis opened in one formula and closed in another).
    let mangled: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("unexpected HTML"))
        .collect();
    if !mangled.is_empty() {
        return Err(Failure(format!(
            "Markdown broke the HTML of some chapter:\n{}",
            mangled.join("\n")
        )));
    }
    check_built(root)
}

/// Check the book already built in `root/book`: every page on its own,
/// every link and anchor, and a caption on every code block that
/// includes a listing. Returns the number of pages checked.
pub fn check_built(root: &Path) -> Result<usize, Failure> {
    let book = root.join("book");
    let pages = html_pages(&book)?;
    let mut problems = Vec::new();
    for page in &pages {
        let html = fs::read_to_string(page)?;
        let name = page.strip_prefix(root).unwrap_or(page).display();
        problems.extend(
            check_page(&html)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    let links = links::check(&book)?;
    problems.extend(links.problems.iter().map(|p| format!("book/{p}")));
    problems.extend(included_blocks_have_captions(root)?);
    if problems.is_empty() {
        println!(
            "checked {} pages and {} internal links and anchors",
            pages.len(),
            links.checked
        );
        Ok(pages.len())
    } else {
        Err(Failure(format!(
            "the built book has problems:\n{}",
            problems.join("\n")
        )))
    }
}

fn listings_errors(log: &str) -> String {
    let lines: Vec<&str> =
        log.lines().filter(|l| l.contains("[listings]")).collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(":\n{}", lines.join("\n"))
    }
}

/// Every control character (TAB, form feed, …, anything but a line end)
/// in the Markdown under `root/src`, as `src/FILE:LINE:COLUMN: U+XXXX
/// before "…"`. A TAB typed where `\top` was meant (an escape that went
/// wrong on the way in) still parses as TeX and renders "op".
pub fn control_characters(root: &Path) -> Result<Vec<String>, Failure> {
    let src = root.join("src");
    let mut problems = Vec::new();
    for path in crate::links::all_files(&src)? {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = fs::read_to_string(&path)?;
        let rel = path.strip_prefix(root).unwrap_or(&path).display();
        for (n, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            for (column, (at, c)) in line.char_indices().enumerate() {
                if c.is_control() {
                    let after: String =
                        line[at + c.len_utf8()..].chars().take(12).collect();
                    problems.push(format!(
                        "{rel}:{}:{}: U+{:04X} {} before \"{after}\"",
                        n + 1,
                        column + 1,
                        u32::from(c),
                        control_name(c)
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// The most words of prose a collapsed answer (`<details>`) may hold.
pub const MAX_ANSWER_WORDS: usize = 250;

/// The Markdown chapters under `root/src`, with their paths from `root`.
fn chapters(root: &Path) -> Result<Vec<(String, String)>, Failure> {
    let mut out = Vec::new();
    for path in crate::links::all_files(&root.join("src"))? {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path);
        out.push((rel.display().to_string(), fs::read_to_string(&path)?));
    }
    Ok(out)
}

/// Every `<details>` answer in the chapters under `root/src` that holds
/// more than [`MAX_ANSWER_WORDS`] words of prose, or a listing, figure or
/// output, as `src/FILE:LINE: ...` (the line of `<details>`).
pub fn collapsed_answers(root: &Path) -> Result<Vec<String>, Failure> {
    let mut problems = Vec::new();
    for (rel, text) in chapters(root)? {
        for answer in answers(&text) {
            if answer.ok() {
                continue;
            }
            problems.push(format!("{rel}:{}: {}", answer.line, answer.why()));
        }
    }
    Ok(problems)
}

/// What a collapsed answer holds.
#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    /// The line of its `<details>`, from 1.
    pub line: usize,
    /// Words of prose (not code, math blocks, directives or HTML tags).
    pub words: usize,
    pub listings: usize,
    pub figures: usize,
    pub outputs: usize,
}

impl Answer {
    fn ok(&self) -> bool {
        self.words <= MAX_ANSWER_WORDS
            && self.listings + self.figures + self.outputs == 0
    }

    fn why(&self) -> String {
        let mut held = Vec::new();
        for (n, what) in [
            (self.listings, "listing"),
            (self.figures, "figure"),
            (self.outputs, "output"),
        ] {
            if n > 0 {
                held.push(format!(
                    "{n} {what}{}",
                    if n > 1 { "s" } else { "" }
                ));
            }
        }
        let words = format!(
            "{} words of prose{}",
            self.words,
            if self.words > MAX_ANSWER_WORDS {
                format!(" (more than {MAX_ANSWER_WORDS})")
            } else {
                String::new()
            }
        );
        if held.is_empty() {
            format!("a collapsed answer of {words}")
        } else {
            format!("a collapsed answer of {words} holds {}", held.join(", "))
        }
    }
}

/// Every collapsed answer, `<details class="answer">` … `</details>`, of a
/// chapter's Markdown, measured. A collapsed full listing
/// (`<details class="listing">`) is not an answer and may hold code.
pub fn answers(text: &str) -> Vec<Answer> {
    let mut out = Vec::new();
    let mut open: Option<Answer> = None;
    let (mut fence, mut math) = (false, false);
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            if !fence
                && let Some(a) = open.as_mut()
                && text
                    .lines()
                    .skip(n + 1)
                    .take_while(|l| {
                        !l.trim().starts_with("```")
                            && !l.trim().starts_with("~~~")
                    })
                    .any(|l| {
                        l.contains("{{#include")
                            || l.contains("{{#rustdoc_include")
                    })
            {
                a.listings += 1;
            }
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if !math && t.starts_with("<details class=\"answer\"") {
            open = Some(Answer {
                line: n + 1,
                ..Answer::default()
            });
        }
        let Some(a) = open.as_mut() else { continue };
        if t == "$$"
            || (t.starts_with("$$") && !(t.len() > 2 && t.ends_with("$$")))
        {
            math = !math;
            continue;
        }
        if math || (t.starts_with("$$") && t.ends_with("$$")) {
            continue;
        }
        if t.starts_with("{{#figure") {
            a.figures += 1;
        } else if t.starts_with("{{#output") {
            a.outputs += 1;
        } else if !(t.starts_with("caption:")
            || t.starts_with("alt:")
            || t == "}}")
        {
            a.words += prose_words(t);
        }
        if t.contains("</details>") {
            out.extend(open.take());
        }
    }
    out.extend(open);
    out
}

/// The words of one line of Markdown prose: HTML tags, directives and
/// claim marks removed, and inline math counted as one word.
fn prose_words(line: &str) -> usize {
    let mut text = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let skip_to = match c {
            '<' => rest.find('>').map(|e| e + 1),
            '{' if rest.starts_with("{{#") => rest.find("}}").map(|e| e + 2),
            _ => None,
        };
        match skip_to {
            Some(end) => {
                text.push(' ');
                rest = &rest[end..];
            }
            None => {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    // Inline math $...$ is one word however many symbols it holds.
    let mut words = 0;
    for (i, part) in text.split('$').enumerate() {
        if i % 2 == 1 {
            words += 1;
        } else {
            words += part
                .split_whitespace()
                .filter(|w| w.chars().any(char::is_alphanumeric))
                .count();
        }
    }
    words
}

/// Lines of prose that Markdown would turn into a list by accident: a line
/// starting `1. `, `1) `, `- `, `* ` or `+ ` right after a line of a
/// paragraph (CommonMark lets those, and only those, interrupt one), as
/// `src/FILE:LINE: "…"`. A paragraph that is itself a list, or whose last
/// line ends with a colon (a list meant as one), is left alone.
pub fn accidental_lists(root: &Path) -> Result<Vec<String>, Failure> {
    let mut problems = Vec::new();
    for (rel, text) in chapters(root)? {
        for (line, words) in list_by_accident(&text) {
            problems.push(format!("{rel}:{line}: \"{words}\""));
        }
    }
    Ok(problems)
}

/// The lines of `text` (numbered from 1) that start a list by accident.
pub fn list_by_accident(text: &str) -> Vec<(usize, String)> {
    let starts_item = |l: &str| {
        let t = l.trim_start();
        l.len() - t.len() < 4
            && (["- ", "* ", "+ ", "1. ", "1) "]
                .iter()
                .any(|p| t.starts_with(p))
                || t.split_once(". ").is_some_and(|(n, _)| {
                    !n.is_empty()
                        && n.len() < 10
                        && n.bytes().all(|b| b.is_ascii_digit())
                }))
    };
    let interrupts = |l: &str| {
        let t = l.trim_start();
        l.len() - t.len() < 4
            && ["- ", "* ", "+ ", "1. ", "1) "]
                .iter()
                .any(|p| t.starts_with(p))
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let (mut fence, mut math) = (false, false);
    // Whether the current paragraph (since the last blank line) is prose
    // that a list item could interrupt.
    let mut paragraph = false;
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            paragraph = false;
            continue;
        }
        if fence {
            continue;
        }
        if t.starts_with("$$") {
            if !(t.len() > 2 && t.ends_with("$$")) {
                math = !math;
            }
            paragraph = false;
            continue;
        }
        if math {
            continue;
        }
        if t.is_empty() {
            paragraph = false;
            continue;
        }
        if paragraph && interrupts(line) {
            let previous = lines[n - 1].trim_end();
            if !previous.ends_with(':') {
                out.push((n + 1, t.chars().take(60).collect()));
            }
            paragraph = false;
            continue;
        }
        let block = t.starts_with('#')
            || t.starts_with('<')
            || t.starts_with('|')
            || t.starts_with('>')
            || ["{{#figure", "{{#output", "{{#include", "{{#claims"]
                .iter()
                .any(|d| t.starts_with(d))
            || t.starts_with("caption:")
            || t.starts_with("alt:")
            || t == "}}";
        // A paragraph starts with prose; a list stays a list.
        let first = n == 0 || lines[n - 1].trim().is_empty();
        if first {
            paragraph = !block
                && !starts_item(line)
                && line.len() == line.trim_start().len();
        } else if block || starts_item(line) {
            paragraph = false;
        }
    }
    out
}

fn control_name(c: char) -> &'static str {
    match c {
        '\t' => "(TAB; was it \\t…, say \\top or \\times?)",
        '\u{c}' => "(form feed; was it \\f…, say \\frac?)",
        '\u{8}' => "(backspace; was it \\b…, say \\beta or \\bar?)",
        '\u{b}' => "(vertical tab; was it \\v…, say \\vec?)",
        '\u{7}' => "(bell; was it \\a…, say \\alpha?)",
        '\r' => "(carriage return; was it \\r…, say \\right?)",
        _ => "(a control character)",
    }
}

/// Every `.html` file under `dir`, sorted.
fn html_pages(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut pages = crate::links::all_files(dir)?;
    pages.retain(|p| p.extension().is_some_and(|e| e == "html"));
    Ok(pages)
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
/// mdbook-listings' own include module, so the two cannot disagree on
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
        for anchor in mdbook_listings::include::listing_anchors(
            &fs::read_to_string(&chapter)?,
        ) {
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
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    loop {
        let next = ["<pre", "<code", "<script", "<style", "<annotation"]
            .iter()
            .filter_map(|tag| rest.find(tag).map(|i| (i, *tag)))
            .min();
        let Some((start, tag)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..start]);
        let close = format!("</{}>", &tag[1..]);
        match rest[start..].find(&close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => return out,
        }
    }
}

/// `mdbook test` of the book at `root`: compile and run every Rust block in
/// it against this workspace's `listings` crate. rustdoc needs exactly one build of each crate on its
/// library path, so `listings` is built into a target folder of its own and
/// older builds of the same crates are removed from it.
pub fn mdbook_test(root: &Path) -> Result<(), Failure> {
    step("mdbook test (every Rust block in the book, against `listings`)");
    let workspace = crate::root();
    let target = workspace.join("target/book-deps");
    let target_arg = target.to_string_lossy().into_owned();
    run(
        "cargo",
        &[
            "build",
            "--quiet",
            "--package",
            "listings",
            "--target-dir",
            &target_arg,
        ],
        &workspace,
    )?;
    let deps = target.join("debug/deps");
    remove_stale_builds(&deps)?;
    let deps_arg = deps.to_string_lossy().into_owned();
    let root_arg = root.to_string_lossy().into_owned();
    run_echo("mdbook", &["test", &root_arg, "-L", &deps_arg], root)
}

/// In a cargo `deps` folder, keep only the newest `lib<name>-<hash>.rlib`
/// (and `.rmeta`) of each crate name.
fn remove_stale_builds(deps: &Path) -> Result<(), Failure> {
    let mut newest: std::collections::HashMap<
        String,
        (std::time::SystemTime, String),
    > = Default::default();
    let mut libs = Vec::new();
    for entry in fs::read_dir(deps)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Some(stem) = name.strip_suffix(".rlib") else {
            continue;
        };
        let Some((krate, hash)) = stem.rsplit_once('-') else {
            continue;
        };
        let modified = fs::metadata(&path)?.modified()?;
        let entry = newest
            .entry(krate.to_string())
            .or_insert((modified, hash.to_string()));
        if modified > entry.0 {
            *entry = (modified, hash.to_string());
        }
        libs.push((krate.to_string(), hash.to_string()));
    }
    for (krate, hash) in libs {
        if newest[&krate].1 != hash {
            for ext in ["rlib", "rmeta"] {
                let _ =
                    fs::remove_file(deps.join(format!("{krate}-{hash}.{ext}")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURE: &str = "<figure id=\"figure-f\"><svg role=\"img\" \
        aria-labelledby=\"figure-f-title\"><title id=\"figure-f-title\">A \
        grid</title><rect/></svg><figcaption>Figure 1.1: F</figcaption>\
        </figure>";

    #[test]
    fn control_characters_are_found_with_their_place_and_a_hint() {
        let root = std::env::temp_dir().join("xtask-control-characters");
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("src/part")).unwrap();
        fs::write(root.join("src/clean.md"), "$x^\\top$\r\nok\n").unwrap();
        fs::write(root.join("src/part/bad.md"), "a\n$x^\top$ and \u{c}rac\n")
            .unwrap();
        let found = control_characters(&root).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("src/part/bad.md:2:4: U+0009 (TAB"));
        assert!(found[0].ends_with("before \"op$ and \u{c}rac\""));
        assert!(found[1].contains(":2:13: U+000C (form feed; was it \\f"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn long_answers_and_answers_holding_items_are_measured() {
        let words = "word ".repeat(251);
        let text = format!(
            "Intro.\n\n<details class=\"answer\">\n<summary>Answer</summary>\n\n\
             A short answer, $x^2 + y$ counted once. {{{{#claim t}}}}\n\
             </details>\n\n<details class=\"answer\">\n<summary>Answer</summary>\n\n{words}\n\
             $$\nnot + counted\n$$\n</details>\n<details class=\"answer\">\n\n\
             ```rust\n{{{{#include a.rs:f}}}}\n```\n\n{{{{#output o}}}}\n\n\
             {{{{#figure f\ncaption: C\nalt: A\n}}}}\n</details>\n\
             <details class=\"listing\">\n<summary>Full listing</summary>\n\n\
             ```rust\n{{{{#include a.rs:g}}}}\n```\n\n{words}\n</details>\n"
        );
        let found = answers(&text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!((found[0].line, found[0].words), (3, 7), "{found:?}");
        assert!(found[0].ok());
        assert_eq!((found[1].line, found[1].words), (9, 252));
        assert!(
            found[1]
                .why()
                .contains("252 words of prose (more than 250)")
        );
        let held = &found[2];
        assert_eq!((held.listings, held.outputs, held.figures), (1, 1, 1));
        assert!(held.why().contains("holds 1 listing, 1 figure, 1 output"));
    }

    #[test]
    fn a_line_that_would_start_a_list_inside_a_paragraph_is_found() {
        let text = "A paragraph whose memory has values all\n1. The test\n\
                    goes on.\n\nText\n- dash\n\nSteps:\n1. one\n2. two\n\n\
                    - a list\n- goes on\n  continued\n- fine\n\n\
                    ```text\nx\n- in code\n```\n\nIn 2024 we\n2. wrote (not a list)\n";
        let found = list_by_accident(text);
        assert_eq!(
            found,
            vec![(2, "1. The test".to_string()), (6, "- dash".to_string())]
        );
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
}
