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
use std::path::{Path, PathBuf};

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

/// The folder of the outputs of the book's runnable examples, made by
/// `cargo xtask build` before mdBook runs, one `NAME.txt` per example.
pub const TRY_IT_VAR: &str = "BOOK_TRY_IT";

/// Under a runnable example's block: what it printed when the book was
/// built, with the command that reruns it; or, in a build that did not
/// run it, that command alone.
fn try_it_output(path: &str, outputs: Option<&Path>) -> String {
    let name = std::path::Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let command = format!("cargo run -p listings --example {name}");
    let printed = outputs
        .map(|dir| dir.join(format!("{name}.txt")))
        .and_then(|file| std::fs::read_to_string(file).ok());
    match printed {
        Some(text) => format!(
            "\n<p class=\"try-it-caption\">What it printed when this book was \
             built (<code>{command}</code> reruns it):</p>\n\n```text\n{}\n```\n",
            text.trim_end()
        ),
        None => format!(
            "\n<p class=\"try-it-caption\">This build did not run it; \
             <code>{command}</code> shows what it prints.</p>\n"
        ),
    }
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
    // A runnable example shown in a block: what it prints goes under the
    // block, after its closing fence.
    let mut try_it: Option<String> = None;
    let mut past_include = false;
    for s in scan(&ch.content) {
        if let (Some(path), true) = (&try_it, past_include) {
            if matches!(s.line, Line::Fence) {
                out.push_str(s.text);
                out.push('\n');
                let dir = std::env::var_os(TRY_IT_VAR).map(PathBuf::from);
                out.push_str(&try_it_output(path, dir.as_deref()));
                try_it = None;
                continue;
            }
        }
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
            if include.runnable && ctx.mode == Mode::Render {
                try_it = Some(include.path.to_string());
                past_include = true;
            }
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
                // A mark that starts its line joins the line before it, so
                // that no space (a place to break) comes before it.
                if s.text.trim_start().starts_with("{{#claim ") {
                    let last = out.trim_end_matches('\n').rsplit('\n').next();
                    let prose = last.is_some_and(|l| {
                        let l = l.trim();
                        !l.is_empty()
                            && !l.starts_with(['<', '`', '#', '|', '>'])
                            && !l.starts_with("$$")
                            && !l.ends_with("$$")
                    });
                    if prose && out.ends_with('\n') && !out.ends_with("\n\n") {
                        out.truncate(out.trim_end().len());
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
    fn a_runnable_example_shows_what_it_printed_under_its_block() {
        let src = scratch("try-it");
        let body =
            "```rust\n{{#rustdoc_include ../code/lib.rs:main}}\n```\nAfter.\n";
        let out = run(&src, vec![chapter("One", "one.md", json!([1]), body)])
            .unwrap();
        assert!(
            out[0].contains(
                "```\n\n<p class=\"try-it-caption\">This build did not run \
                 it; <code>cargo run -p listings --example lib</code> shows \
                 what it prints.</p>\nAfter."
            ),
            "{}",
            out[0]
        );
        let dir = src.join("../outputs");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("lib.txt"), "rows sum to 1\n").unwrap();
        let shown = super::try_it_output("../code/lib.rs", Some(&dir));
        assert!(shown.contains(
            "What it printed when this book was built (<code>cargo run -p \
             listings --example lib</code> reruns it):</p>\n\n```text\n\
             rows sum to 1\n```"
        ));
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
