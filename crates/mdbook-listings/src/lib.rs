//! The book's mdBook preprocessor. It runs before mdBook's own `links`
//! preprocessor and does four things to every chapter, one module each:
//!
//! - `listing`: a code block that includes a file by anchor
//!   (`{{#include path:anchor}}` or `{{#rustdoc_include path:anchor}}`)
//!   gets a numbered caption with an id, `Listing 2.1`. `include` reads
//!   the directive and checks that the anchor exists and encloses some
//!   code: mdBook itself would show an empty block.
//! - `figure`: a `{{#figure NAME` block, which holds the figure's
//!   `caption:` and `alt:` text and ends with `}}`, becomes the SVG drawn
//!   by the figure NAME of the `figures` crate, in a `<figure>` with an
//!   id, the text alternative and a numbered caption.
//! - `output`: `{{#output NAME}}` becomes a text block with what the
//!   experiment NAME of `listings::outputs` prints, computed now.
//! - `reference`: `{{#ref figure:NAME}}`, `{{#ref listing:ANCHOR}}` and
//!   `{{#ref output:NAME}}` become links to the numbered item, in this
//!   chapter or another one.
//! - `claim`: `{{#claim TEST ...}}` after a sentence becomes a small link
//!   to its entry in the page that holds `{{#claims}}`, the generated
//!   appendix of every marked sentence with its tests; a mark naming a
//!   test that the workspace does not define fails the build.
//!
//! `number` gives out the numbers and ids, `scan` reads a chapter line
//! by line, `make` runs the experiments behind the figures and outputs,
//! `book` is mdBook's book model, and `katex_guard` is the second pass,
//! after KaTeX.
//!
//! Any unknown name, missing anchor or malformed directive is an error that
//! stops the build and says where it is and what would have been valid.
//! The preprocessor writes no files.

pub mod book;
pub mod claim;
mod figure;
pub mod include;
pub mod katex_guard;
mod listing;
mod make;
mod number;
mod output;
mod reference;
mod scan;

use book::Book;
use number::{Index, Kind};
use scan::{Line, find_unescaped, scan, stray_backslashes};
use std::path::Path;

/// Where figures and outputs come from. The book uses [`BookRegistry`];
/// tests use a small fake.
pub trait Registry: Sync {
    /// The SVG of the figure `name`.
    fn figure(&self, name: &str) -> Option<String>;
    fn figure_names(&self) -> Vec<&'static str>;
    fn output(&self, name: &str) -> Option<String>;
    fn output_names(&self) -> Vec<&'static str>;
}

/// The figures of the `figures` crate and the outputs of `listings`.
#[cfg(feature = "book")]
pub struct BookRegistry;

#[cfg(feature = "book")]
impl Registry for BookRegistry {
    fn figure(&self, name: &str) -> Option<String> {
        figures::find(name).map(|f| (f.render)())
    }
    fn figure_names(&self) -> Vec<&'static str> {
        figures::ALL.iter().map(|f| f.name).collect()
    }
    fn output(&self, name: &str) -> Option<String> {
        listings::outputs::find(name).map(|o| (o.run)())
    }
    fn output_names(&self) -> Vec<&'static str> {
        listings::outputs::ALL.iter().map(|o| o.name).collect()
    }
}

/// What the book is being prepared for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A renderer such as `html`: the reader's book.
    Render,
    /// `mdbook test`: rustdoc compiles and runs the Rust blocks. Listings
    /// (`{{#include}}` of library code) are marked `ignore`, because
    /// `cargo test` tests them where they live; runnable examples
    /// (`{{#rustdoc_include}}` of a file with `fn main`) are run.
    Test,
}

/// One chapter as the preprocessor sees it.
struct Chapter {
    /// "2" for chapter 2, "2.1" for its first section, "A" for the first
    /// appendix (an unnumbered chapter after the numbered ones), "0" for an
    /// unnumbered chapter before them.
    label: String,
    /// The chapter's path in `src/`, e.g. `m3/attention.md`.
    path: String,
    content: String,
}

/// Number every item in `book`, expand the directives, and write the
/// edited chapters back into it. `src` is the book's source folder. On
/// failure, every problem found, one per string, and the book unchanged.
pub fn process(
    book: &mut Book,
    src: &Path,
    registry: &dyn Registry,
    mode: Mode,
) -> Result<(), Vec<String>> {
    let chapters = collect(book);
    let mut errors = Vec::new();
    for ch in &chapters {
        for (line, text) in stray_backslashes(&ch.content) {
            errors.push(format!(
                "{}:{line}: a backslash before `{{{{#` that mdBook will not \
                 remove, so the reader sees it: `{text}` (mdBook unescapes \
                 only the first `\\{{{{#` of a line, and only up to a `}}}}` \
                 on that line; write one escaped directive per line, and \
                 none in a code block unless it is an include)",
                ch.path
            ));
        }
    }
    let index = number_items(&chapters, src, registry, &mut errors);
    let paths: Vec<String> = chapters.iter().map(|c| c.path.clone()).collect();
    let made = make::make_all(&index, registry);
    let claims = Claims::collect(&chapters, src, &mut errors);
    let expanded: Vec<String> = chapters
        .iter()
        .enumerate()
        .map(|(here, ch)| {
            let ctx = Context {
                mode,
                here,
                paths: &paths,
                index: &index,
                src,
                made: &made,
                claims: &claims,
            };
            expand(&ctx, ch, &mut errors)
        })
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut next = expanded.into_iter();
    book.for_each_chapter_mut(|ch| {
        if let Some(content) = next.next() {
            ch.content = content;
        }
    });
    Ok(())
}

/// Every chapter and section in reading order, labelled.
fn collect(book: &Book) -> Vec<Chapter> {
    let mut seen_numbered = false;
    let mut appendix = 0u8;
    book.chapters()
        .into_iter()
        .map(|ch| {
            let number = ch.number.as_deref().unwrap_or_default();
            let label = if !number.is_empty() {
                seen_numbered = true;
                let parts: Vec<String> =
                    number.iter().map(u32::to_string).collect();
                parts.join(".")
            } else if seen_numbered {
                appendix += 1;
                char::from(b'A' + appendix - 1).to_string()
            } else {
                "0".to_string()
            };
            Chapter {
                label,
                path: ch.path.clone().unwrap_or_default(),
                content: ch.content.clone(),
            }
        })
        .collect()
}

/// The first pass: number every listing, figure and output of every
/// chapter, checking each include and name on the way.
fn number_items(
    chapters: &[Chapter],
    src: &Path,
    registry: &dyn Registry,
    errors: &mut Vec<String>,
) -> Index {
    let mut index = Index::default();
    for (i, ch) in chapters.iter().enumerate() {
        let mut numbering = index.chapter(i, &ch.label, &ch.path);
        for s in scan(&ch.content) {
            if let Some(include) = s.first_include {
                listing::number(&mut numbering, src, &ch.path, include, errors);
            }
            let (kind, name) = match &s.line {
                Line::Figure(block) => {
                    errors.extend(
                        block
                            .errors
                            .iter()
                            .map(|e| format!("{}: {e}", ch.path)),
                    );
                    (Kind::Figure, block.name)
                }
                Line::Output(name) if !s.inside => (Kind::Output, *name),
                _ => continue,
            };
            let known = match kind {
                Kind::Figure => registry.figure_names(),
                _ => registry.output_names(),
            };
            if known.contains(&name) {
                numbering.add(kind, name, errors);
            } else {
                errors.push(format!(
                    "{}: unknown {} `{name}`; known {}s: {}",
                    ch.path,
                    kind.lower(),
                    kind.lower(),
                    known.join(", ")
                ));
            }
        }
    }
    index
}

/// What the second pass needs to know about the book.
pub(crate) struct Context<'a> {
    pub(crate) mode: Mode,
    /// The index of the chapter being expanded.
    pub(crate) here: usize,
    /// Every chapter's path, by index.
    pub(crate) paths: &'a [String],
    pub(crate) index: &'a Index,
    pub(crate) src: &'a Path,
    pub(crate) made: &'a make::Made,
    pub(crate) claims: &'a Claims,
}

/// The claim marks of the whole book, the tests they name, and the page
/// that lists them.
pub(crate) struct Claims {
    marks: Vec<claim::Claim>,
    tests: std::collections::BTreeMap<String, Vec<claim::Test>>,
    /// The chapter holding `{{#claims}}`, if any.
    page: Option<usize>,
    /// Each chapter's path and title (its first `# ` heading).
    chapters: Vec<(String, String)>,
}

impl Claims {
    fn collect(
        chapters: &[Chapter],
        src: &Path,
        errors: &mut Vec<String>,
    ) -> Claims {
        let uses = |c: &&Chapter| c.content.contains("{{#claim");
        let tests = if chapters.iter().any(|c| uses(&c)) {
            claim::find_tests(src.parent().unwrap_or(src))
        } else {
            Default::default()
        };
        let contents: Vec<(&str, &str)> = chapters
            .iter()
            .map(|c| (c.path.as_str(), c.content.as_str()))
            .collect();
        let marks = claim::collect(&contents, &tests, errors);
        let page = chapters
            .iter()
            .position(|c| scan(&c.content).iter().any(claim::is_page));
        if page.is_none() && !marks.is_empty() {
            errors.push(
                "the book has claim marks but no page with {{#claims}} for \
                 them to link to; add one to SUMMARY.md"
                    .to_string(),
            );
        }
        let titles = chapters
            .iter()
            .map(|c| {
                let title = c
                    .content
                    .lines()
                    .find_map(|l| l.strip_prefix("# "))
                    .unwrap_or(&c.path);
                (c.path.clone(), title.trim().to_string())
            })
            .collect();
        Claims {
            marks,
            tests,
            page,
            chapters: titles,
        }
    }
}

/// The second pass: one chapter with its directives expanded.
fn expand(ctx: &Context<'_>, ch: &Chapter, errors: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(ch.content.len());
    let claims = ctx.claims;
    let mine: Vec<&claim::Claim> = claims
        .marks
        .iter()
        .filter(|c| c.chapter == ctx.here)
        .collect();
    let mut next_mark = 0;
    let page = claims
        .page
        .map(|p| reference::relative(&ch.path, &ctx.paths[p]));
    for s in scan(&ch.content) {
        if claim::is_page(&s) {
            let chapters: Vec<(&str, String)> = claims
                .chapters
                .iter()
                .map(|(p, t)| (p.as_str(), t.clone()))
                .collect();
            let page = claim::appendix(
                &claims.marks,
                &chapters,
                &ch.path,
                &claims.tests,
                ctx.mode == Mode::Render,
            );
            for line in page.lines() {
                out.push_str(&reference::expand(
                    line, ctx.here, ctx.paths, ctx.index, errors,
                ));
                out.push('\n');
            }
            continue;
        }
        if let Some(include) = s.first_include {
            listing::expand(&mut out, s.text, include, ctx);
            continue;
        }
        match &s.line {
            Line::Figure(block) => {
                let label =
                    ctx.index.lookup(Kind::Figure, block.name, ctx.here);
                let svg = ctx.made.figures.get(block.name);
                if let (Some((_, label)), Some(svg)) = (label, svg) {
                    figure::expand(&mut out, block, label, svg);
                } // else unknown: reported while numbering
            }
            Line::Output(name) if !s.inside => {
                let label = ctx.index.lookup(Kind::Output, name, ctx.here);
                let text = ctx.made.outputs.get(*name);
                if let (Some((_, label)), Some(text)) = (label, text) {
                    output::expand(&mut out, name, label, text);
                } // else unknown: reported while numbering
            }
            _ if s.inside => {
                out.push_str(s.text);
                out.push('\n');
            }
            _ => {
                for (tag, form) in [
                    (
                        "{{#figure",
                        "a block: {{#figure NAME, caption: ..., alt: ..., }}",
                    ),
                    ("{{#output", "{{#output NAME}}"),
                ] {
                    if find_unescaped(s.text, tag).is_some() {
                        errors.push(format!(
                            "{}: `{}`: a directive must start its own line, \
                             as {form}",
                            ch.path,
                            s.text.trim()
                        ));
                    }
                }
                let text = claim::expand_marks(
                    s.text,
                    &mine,
                    &mut next_mark,
                    page.as_deref(),
                );
                out.push_str(&reference::expand(
                    &text, ctx.here, ctx.paths, ctx.index, errors,
                ));
                out.push('\n');
            }
        }
    }
    out
}

/// `text` with the characters HTML gives a meaning written as references.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A fake registry, a scratch book folder and a runner, for the tests of
/// every directive.
#[cfg(test)]
mod test_support {
    use super::*;
    use serde_json::{Value, json};
    use std::path::PathBuf;

    pub(crate) struct Fake;

    impl Registry for Fake {
        fn figure(&self, name: &str) -> Option<String> {
            (name == "heat")
                .then(|| "<svg viewBox=\"0 0 1 1\">\n<rect/>\n</svg>".into())
        }
        fn figure_names(&self) -> Vec<&'static str> {
            vec!["heat"]
        }
        fn output(&self, name: &str) -> Option<String> {
            (name == "shapes").then(|| "Q: (12, 8)\n".into())
        }
        fn output_names(&self) -> Vec<&'static str> {
            vec!["shapes"]
        }
    }

    /// A scratch `src/` with one listings file, unique per test.
    pub(crate) fn scratch(test: &str) -> PathBuf {
        let root = std::env::temp_dir()
            .join(format!("mdbook-listings-{}-{test}", std::process::id()));
        let src = root.join("src");
        std::fs::create_dir_all(src.join("part")).unwrap();
        std::fs::create_dir_all(root.join("code")).unwrap();
        std::fs::write(
            root.join("code/lib.rs"),
            "// ANCHOR: add\npub fn add() {}\n// ANCHOR_END: add\n\
             // ANCHOR: empty\n\n// ANCHOR_END: empty\n\
             // ANCHOR: main\nfn main() {}\n// ANCHOR_END: main\n",
        )
        .unwrap();
        src
    }

    pub(crate) fn chapter(
        name: &str,
        path: &str,
        number: Value,
        content: &str,
    ) -> Value {
        json!({"Chapter": {
            "name": name, "content": content, "number": number,
            "sub_items": [], "path": path, "source_path": path,
            "parent_names": []
        }})
    }

    /// A book of these chapters, read as mdBook would hand it over.
    pub(crate) fn book(items: Vec<Value>) -> Book {
        Book::from_json(json!({ "items": items })).unwrap()
    }

    pub(crate) fn run(
        src: &Path,
        items: Vec<Value>,
    ) -> Result<Vec<String>, Vec<String>> {
        let mut book = book(items);
        process(&mut book, src, &Fake, Mode::Render)?;
        Ok(book.chapters().iter().map(|c| c.content.clone()).collect())
    }

    /// The figure `heat` with its words, as a chapter shows it.
    pub(crate) const FIGURE: &str =
        "{{#figure heat\ncaption: Weights <by>\n  row\nalt: a grid\n}}\n";

    /// A listing, as a chapter in `src/part/` includes it.
    pub(crate) const LISTING: &str =
        "```rust\n{{#include ../../code/lib.rs:add}}\n```\n";
}

#[cfg(test)]
mod tests {
    use super::test_support::{FIGURE, LISTING, chapter, run, scratch};
    use serde_json::{Value, json};

    #[test]
    fn items_are_numbered_by_chapter_with_ids() {
        let src = scratch("numbered");
        let body = format!("{LISTING}\n{FIGURE}\n{{{{#output shapes}}}}\n");
        let out = run(
            &src,
            vec![
                chapter("Intro", "intro.md", Value::Null, "# Intro\n"),
                chapter("Two", "part/two.md", json!([2]), &body),
                chapter(
                    "App",
                    "app.md",
                    Value::Null,
                    &LISTING.replace("../../", "../"),
                ),
            ],
        )
        .unwrap();
        let two = &out[1];
        assert!(two.contains("id=\"listing-add\""), "{two}");
        assert!(two.contains(">Listing 2.1</a>: <code>add</code>"), "{two}");
        assert!(two.contains("(code/lib.rs)"), "{two}");
        assert!(two.contains("<figure id=\"figure-heat\""), "{two}");
        assert!(
            two.contains(">Figure 2.1</a>: Weights &lt;by&gt; row"),
            "{two}"
        );
        assert!(two.contains("role=\"img\""), "{two}");
        assert!(two.contains("<title id=\"figure-heat-title\">a grid</title>"));
        assert!(two.contains(">Output 2.1</a>"), "{two}");
        assert!(two.contains("```text\nQ: (12, 8)\n```"), "{two}");
        assert!(out[2].contains(">Listing A.1</a>"), "{}", out[2]);
    }

    #[test]
    fn unknown_figure_or_output_fails_and_lists_the_known_names() {
        let src = scratch("unknown");
        let errors = run(
            &src,
            vec![chapter(
                "One",
                "one.md",
                json!([1]),
                &format!(
                    "{}\n{{{{#output shape}}}}\n",
                    FIGURE.replace("heat", "hat")
                ),
            )],
        )
        .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].contains("unknown figure `hat`; known figures: heat")
        );
        assert!(
            errors[1].contains("unknown output `shape`; known outputs: shapes")
        );
    }

    #[test]
    fn a_directive_sharing_its_line_fails() {
        let src = scratch("inline");
        let body = "Look: {{#figure heat}}\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert!(errors[0].contains("must start its own line"), "{errors:?}");
    }
}
