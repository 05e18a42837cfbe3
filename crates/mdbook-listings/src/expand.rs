//! The two passes over the chapters. The first numbers every listing,
//! figure and output of the book, checking each include and name on the
//! way; the second expands one chapter's directives into what the reader
//! sees, through the module of each directive.

use crate::chapter::Chapter;
use crate::claim::{self, Claims};
use crate::escape::find_unescaped;
use crate::include;
use crate::make::Made;
use crate::number::{Index, Kind};
use crate::registry::Registry;
use crate::scan::{Line, scan, stray_backslashes};
use crate::{figure, listing, output, reference};
use std::path::Path;

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

/// The first pass: number every listing, figure and output of every
/// chapter, checking each include and name on the way, and every line for
/// a backslash mdBook would leave in the page.
pub(crate) fn number_all(
    chapters: &[Chapter],
    src: &Path,
    registry: &dyn Registry,
    errors: &mut Vec<String>,
) -> Index {
    let mut index = Index::default();
    for (i, ch) in chapters.iter().enumerate() {
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
    /// Every chapter's path, by index.
    pub(crate) paths: &'a [String],
    pub(crate) index: &'a Index,
    pub(crate) src: &'a Path,
    pub(crate) made: &'a Made,
    pub(crate) claims: &'a Claims,
}

/// The second pass: the chapter with index `here` with its directives
/// expanded.
pub(crate) fn expand(
    ctx: &Context<'_>,
    here: usize,
    ch: &Chapter,
    errors: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(ch.content.len());
    let marks = ctx.claims.of_chapter(here);
    let mut next_mark = 0;
    let page = ctx.claims.page_link(&ch.path, ctx.paths);
    let references = |text: &str, errors: &mut Vec<String>| {
        reference::expand(text, here, ctx.paths, ctx.index, errors)
    };
    for s in scan(&ch.content) {
        if claim::is_report(&s) {
            out.push_str(&ctx.claims.report(&ch.path));
            continue;
        }
        if claim::page_filter(&s).is_some() {
            let page = ctx.claims.appendix(&ch.path, ctx.mode == Mode::Render);
            for line in page.lines() {
                out.push_str(&references(line, errors));
                out.push('\n');
            }
            continue;
        }
        if let Some(include) = s.first_include {
            if let Some(anchor) = include.anchor {
                let label = ctx.index.lookup(Kind::Listing, anchor, here);
                let file = include::check_anchor(
                    ctx.src,
                    &ch.path,
                    include.path,
                    anchor,
                );
                if let (Some((_, label)), Ok(file)) = (label, file) {
                    listing::caption(&mut out, anchor, label, &file);
                } // else reported while numbering
            }
            let ignore = ctx.mode == Mode::Test && !include.runnable;
            listing::fence(&mut out, s.text, ignore);
            continue;
        }
        match &s.line {
            Line::Figure(block) => {
                let label = ctx.index.lookup(Kind::Figure, block.name, here);
                let svg = ctx.made.figures.get(block.name);
                if let (Some((_, label)), Some(svg)) = (label, svg) {
                    figure::expand(&mut out, block, label, svg);
                } // else unknown: reported while numbering
            }
            Line::Output(name) if !s.inside => {
                let label = ctx.index.lookup(Kind::Output, name, here);
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
                    &marks,
                    &mut next_mark,
                    page.as_deref(),
                    &|names| ctx.claims.result_of(names),
                );
                out.push_str(&references(&text, errors));
                out.push('\n');
            }
        }
    }
    out.push_str(&ctx.claims.store(here, ctx.mode == Mode::Render));
    out
}

#[cfg(test)]
mod tests {
    use crate::test_support::{FIGURE, LISTING, chapter, run, scratch};
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
