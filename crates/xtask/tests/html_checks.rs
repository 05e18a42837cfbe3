//! The built book's static checks, proved: the link checker and the
//! accessibility checks fail `cargo xtask build` on a book with one defect.
//! Like broken_books.rs, these run mdbook and are ignored by a plain
//! `cargo test`; `cargo xtask test` runs them.

mod common;

use common::{GOOD, copy_of, fails_with, fixture, reader_book, tamper};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use xtask::{Failure, book};

/// The defect-free reader book, built once per test run.
fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = reader_book("html-good");
        book::build(&dir).expect("the defect-free reader book builds");
        dir
    })
}

/// Break a copy of the built book with `edit`, then expect the static
/// checks to fail with `expected`.
fn broken_copy_fails(name: &str, edit: impl Fn(&Path), expected: &str) {
    let dir = copy_of(built(), name);
    edit(&dir);
    match book::check_built(&dir) {
        Ok(_) => panic!("{name}: the checks passed a broken book"),
        Err(Failure(why)) => {
            assert!(why.contains(expected), "{name}: not `{expected}`:\n{why}")
        }
    }
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn the_defect_free_reader_book_passes_the_static_checks() {
    let dir = built();
    assert_eq!(book::check_built(dir).unwrap(), 6, "pages checked");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_link_to_a_missing_page_fails_the_build() {
    let broken = format!("{GOOD}\nSee [nothing](nowhere.md).\n");
    fails_with(
        &fixture("dead-page", "", &broken),
        "chapter.html: href=\"nowhere.html\": no file nowhere.html in the book",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_link_to_a_missing_anchor_fails_the_build() {
    let broken = format!("{GOOD}\nSee [this](chapter.md#no-such-heading).\n");
    fails_with(
        &fixture("dead-anchor", "", &broken),
        "book/chapter.html: href=\"chapter.html#no-such-heading\": no element \
         with id \"no-such-heading\" in chapter.html",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_missing_katex_font_fails_the_build() {
    let dir = fixture("dead-font", "", GOOD);
    fs::remove_file(dir.join("src/katex/fonts/KaTeX_Main-Regular.woff2"))
        .unwrap();
    fails_with(
        &dir,
        "katex/katex.min.css: url=\"fonts/KaTeX_Main-Regular.woff2\": no file",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_skipped_heading_level_fails_the_build() {
    let broken = format!("{GOOD}\n### Too deep\n");
    fails_with(
        &fixture("headings", "", &broken),
        "heading levels skip from h1 to h3 at \"Too deep\"",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn an_included_block_without_its_caption_fails_the_build() {
    broken_copy_fails(
        "no-listing-caption",
        |dir| tamper(dir, "chapter.html", "class=\"listing-caption\"", ""),
        "src/chapter.md: the code block that includes `shown` has no listing \
         caption",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_figure_without_a_text_alternative_fails_the_build() {
    broken_copy_fails(
        "no-alt",
        |dir| tamper(dir, "chapter.html", "role=\"img\" ", ""),
        "the SVG has no text alternative",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn math_without_mathml_fails_the_build() {
    broken_copy_fails(
        "no-mathml",
        |dir| tamper(dir, "chapter.html", "class=\"katex-mathml\"", ""),
        "formulas have no MathML",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_duplicate_id_fails_the_build() {
    broken_copy_fails(
        "duplicate-id",
        |dir| {
            tamper(
                dir,
                "second.html",
                "<p>Back",
                "<p id=\"target-heading\">Back",
            )
        },
        "second.html: duplicate id(s), a link to them is ambiguous: \
         target-heading",
    );
}
