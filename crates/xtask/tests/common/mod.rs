//! Fixture books for the checks' own tests: small books built with the
//! real preprocessors, the real theme and KaTeX's real assets, so that a
//! check that passes on a fixture passes for the same reason on the book.

#![allow(dead_code)] // each test file uses its own part

use std::fs;
use std::path::{Path, PathBuf};
use xtask::{Failure, book, root};

/// A tiny book in target/broken-books/NAME using the real preprocessors,
/// with one chapter whose text is `chapter` and a listings file `code.rs`.
pub fn fixture(name: &str, summary_extra: &str, chapter: &str) -> PathBuf {
    let workspace = root();
    let dir = workspace.join("target/broken-books").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::create_dir_all(dir.join("theme")).unwrap();
    let manifest = workspace.join("Cargo.toml");
    fs::write(
        dir.join("book.toml"),
        format!(
            "[book]\ntitle = \"{name}\"\n\n[build]\ncreate-missing = false\n\n\
             [rust]\nedition = \"2024\"\n\n\
             [preprocessor.listings]\n\
             command = \"cargo run --quiet --manifest-path {} --package mdbook-listings --\"\n\
             before = [\"links\"]\n\n\
             [preprocessor.katex]\nafter = [\"links\"]\nno-css = true\n\
             output = \"htmlAndMathml\"\n\n\
             [output.html]\nadditional-css = [\"theme/book.css\"]\n\
             additional-js = [\"theme/claims.js\"]\n",
            manifest.display()
        ),
    )
    .unwrap();
    for file in ["head.hbs", "book.css", "claims.js"] {
        fs::copy(
            workspace.join("theme").join(file),
            dir.join("theme").join(file),
        )
        .unwrap();
    }
    // KaTeX's stylesheet and fonts, as `cargo xtask setup` placed them.
    copy_dir(&workspace.join("src/katex"), &dir.join("src/katex"));
    fs::write(
        dir.join("code.rs"),
        // A fragment of a library, as listings are: it names a type that
        // only its crate defines, so rustdoc could not compile it alone.
        "// ANCHOR: shown\npub fn shown(_: &Thing) {}\n// ANCHOR_END: shown\n",
    )
    .unwrap();
    fs::write(
        dir.join("src/SUMMARY.md"),
        format!("# Summary\n\n- [Chapter](chapter.md)\n{summary_extra}"),
    )
    .unwrap();
    fs::write(dir.join("src/chapter.md"), chapter).unwrap();
    // The notation registry the build checks display math against (not a
    // page of the fixture: the check reads the file, not the summary).
    fs::create_dir_all(dir.join("src/appendix")).unwrap();
    fs::write(
        dir.join("src/appendix/notation.md"),
        "# Notation\n\n| Symbol | Meaning |\n|---|---|\n| $x$ | a number |\n",
    )
    .unwrap();
    dir
}

/// A real figure of the book, with its caption and text alternative
/// written beside it as a chapter does.
macro_rules! figure_block {
    () => {
        "{{#figure causal-attention-heatmap\n\
         caption: Causal attention weights,\n  row by row.\n\
         alt: A lower triangle of coloured squares.\n\
         }}\n"
    };
}

/// The figure block of [`GOOD`].
pub const FIGURE: &str = figure_block!();

pub const GOOD: &str = concat!(
    "# Chapter\n\nInline $x^2$ and display:\n\n$$\n\\frac{1}{2}\n$$\n\n\
     ```rust,noplayground\n{{#include ../code.rs:shown}}\n```\n\n",
    figure_block!(),
    "\n{{#output attention-walkthrough}}\n"
);

pub fn fails_with(dir: &Path, expected: &str) {
    match book::build(dir) {
        Ok(_) => panic!("{} built, but should have failed", dir.display()),
        Err(Failure(why)) => assert!(
            why.contains(expected),
            "{} failed, but not with `{expected}`:\n{why}",
            dir.display()
        ),
    }
}

/// Copy the folder `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

/// Edit the built page `page` (relative to the fixture's `book/`):
/// replace `from` with `to`, which must occur.
pub fn tamper(dir: &Path, page: &str, from: &str, to: &str) {
    let path = dir.join("book").join(page);
    let html = fs::read_to_string(&path).unwrap();
    assert!(html.contains(from), "{page} has no `{from}` to replace");
    fs::write(&path, html.replacen(from, to, 1)).unwrap();
}

/// A second chapter, for links between pages.
pub const SECOND: &str = "# Second\n\n## Target heading\n\nBack to \
    [the figure](chapter.md#figure-causal-attention-heatmap).\n";

/// The defect-free book of the reader checks: [`GOOD`] with a sentence for
/// search to find and links to the second chapter.
pub fn reader_book(name: &str) -> PathBuf {
    let chapter = format!(
        "{GOOD}\nA fast weight memory; see [the second chapter's \
         heading](second.md#target-heading).\n"
    );
    let dir = fixture(name, "- [Second](second.md)\n", &chapter);
    fs::write(dir.join("src/second.md"), SECOND).unwrap();
    dir
}

/// A copy of the built book `base` in target/broken-books/NAME, to break.
pub fn copy_of(base: &Path, name: &str) -> PathBuf {
    let dir = root().join("target/broken-books").join(name);
    let _ = fs::remove_dir_all(&dir);
    copy_dir(base, &dir);
    dir
}
