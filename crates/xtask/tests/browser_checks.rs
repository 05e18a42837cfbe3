//! The browser check, proved: a copy of a small, defect-free built book
//! passes it, and each copy broken in one way a reader would notice fails
//! it with a message that says what is wrong. The damage is done to the
//! built HTML, after the build's static checks, so that each test shows
//! the browser check catching it on its own. These tests need mdbook,
//! node and chromium; `cargo xtask test` runs them (`--ignored`).

mod common;

use common::{copy_of, reader_book, tamper};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use xtask::{Failure, book, browser};

/// The defect-free reader book, built once per test run.
fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = reader_book("browser-good");
        book::build(&dir).expect("the defect-free reader book builds");
        dir
    })
}

fn check(dir: &Path, must_find: &[&str]) -> Result<String, Failure> {
    browser::check(dir, &dir.join("screenshots"), must_find)
}

/// Break a copy of the built book with `edit`; the browser check must fail
/// and say `expected`.
fn fails(name: &str, edit: impl Fn(&Path), expected: &str) {
    let dir = copy_of(built(), name);
    edit(&dir);
    match check(&dir, &["fast weight"]) {
        Ok(_) => panic!("{name}: the browser check passed a broken book"),
        Err(Failure(why)) => {
            assert!(why.contains(expected), "{name}: not `{expected}`:\n{why}")
        }
    }
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn the_defect_free_book_passes_and_is_photographed() {
    let dir = copy_of(built(), "browser-pass");
    let summary = check(&dir, &["fast weight"]).expect("no problems");
    assert!(summary.contains("search for \"fast weight\""), "{summary}");
    let shots = dir.join("screenshots");
    for shot in [
        "chapter-light.png",
        "chapter-navy.png",
        "second-navy.png",
        "figures/chapter--figure-causal-attention-heatmap-light.png",
        "figures/chapter--figure-causal-attention-heatmap-coal.png",
        "figures/chapter--figure-causal-attention-heatmap-ayu.png",
    ] {
        let png = fs::read(shots.join(shot)).unwrap_or_default();
        assert!(png.starts_with(b"\x89PNG"), "{shot} is a PNG");
    }
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn raw_math_fails_the_browser_check() {
    fails(
        "raw-math",
        |d| {
            tamper(d, "chapter.html", "<p>Inline", "<p>$$\\frac{1}{2}$$ Inline")
        },
        "chapter.html: raw math left unrendered: \"$$\\frac{1}{2}$$ Inline",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_katex_error_fails_the_browser_check() {
    fails(
        "katex-error",
        |d| {
            tamper(
                d,
                "chapter.html",
                "<p>Inline",
                "<p><span class=\"katex-error\" title=\"ParseError\">x^</span> \
                 Inline",
            )
        },
        "1 KaTeX error(s) (class katex-error), first: \"x^\"",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_missing_katex_font_fails_the_browser_check() {
    fails(
        "font",
        |d| {
            for entry in fs::read_dir(d.join("book/katex/fonts")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy();
                if name.starts_with("KaTeX_Main-Regular") {
                    fs::remove_file(&path).unwrap();
                }
            }
        },
        "HTTP 404 for katex/fonts/KaTeX_Main-Regular",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_figure_with_no_size_fails_the_browser_check() {
    fails(
        "figure-size",
        |d| {
            tamper(
                d,
                "chapter.html",
                "<svg role=\"img\"",
                "<svg style=\"height:0\" role=\"img\"",
            )
        },
        "figure figure-causal-attention-heatmap: the SVG is not drawn",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_figure_that_draws_nothing_fails_the_browser_check() {
    fails(
        "figure-empty",
        |d| {
            let path = d.join("book/chapter.html");
            let html = fs::read_to_string(&path).unwrap();
            // Keep the figure's <svg> and <title>, drop what it draws.
            let title = html.find("<title id=\"figure-").unwrap();
            let start = title + html[title..].find("</title>").unwrap() + 8;
            let end = start + html[start..].find("</svg>").unwrap();
            let html = format!("{}{}", &html[..start], &html[end..]);
            fs::write(&path, html).unwrap();
        },
        "the SVG draws nothing",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_figure_without_a_caption_fails_the_browser_check() {
    fails(
        "figure-caption",
        |d| {
            tamper(
                d,
                "chapter.html",
                "<figcaption>",
                "<figcaption style=\"display:none\">",
            )
        },
        "figure figure-causal-attention-heatmap: the caption is not visible",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_figure_without_a_text_alternative_fails_the_browser_check() {
    fails(
        "figure-alt",
        |d| tamper(d, "chapter.html", "role=\"img\" ", ""),
        "the SVG has no text alternative",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn figure_text_unreadable_in_a_dark_theme_fails_the_browser_check() {
    // Black text, as plotters draws it before `figures::themeable`.
    fails(
        "figure-black-text",
        |d| {
            let path = d.join("book/chapter.html");
            let html = fs::read_to_string(&path).unwrap();
            let html =
                html.replace("fill=\"currentColor\"", "fill=\"#000000\"");
            fs::write(&path, html).unwrap();
        },
        "coal theme: figure figure-causal-attention-heatmap: text",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_broken_anchor_fails_the_browser_check() {
    fails(
        "anchor",
        |d| {
            tamper(
                d,
                "chapter.html",
                "second.html#target-heading",
                "second.html#gone",
            )
        },
        "broken anchor href=\"second.html#gone\": no id \"gone\" in second.html",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_broken_link_fails_the_browser_check() {
    fails(
        "link",
        |d| {
            tamper(
                d,
                "chapter.html",
                "second.html#target-heading",
                "third.html",
            )
        },
        "broken link href=\"third.html\": no third.html in the book",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_console_error_fails_the_browser_check() {
    fails(
        "console",
        |d| {
            tamper(
                d,
                "second.html",
                "</main>",
                "<script>console.error('boom')</script></main>",
            )
        },
        "second.html: console error: boom",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn an_uncaught_exception_fails_the_browser_check() {
    fails(
        "exception",
        |d| {
            tamper(
                d,
                "second.html",
                "</main>",
                "<script>noSuchFunction()</script></main>",
            )
        },
        "second.html: uncaught exception: noSuchFunction is not defined",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_chapter_missing_from_the_print_page_fails_the_browser_check() {
    fails(
        "print",
        |d| {
            tamper(
                d,
                "print.html",
                "id=\"figure-causal-attention-heatmap\"",
                "id=\"figure-renamed\"",
            )
        },
        "print.html: is missing figure(s) figure-causal-attention-heatmap",
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_search_term_the_book_lacks_fails_the_browser_check() {
    let dir = copy_of(built(), "search-term");
    let Err(Failure(why)) = check(&dir, &["delta rule"]) else {
        panic!("the book never says \"delta rule\", yet search passed");
    };
    assert!(
        why.contains("search \"delta rule\": no chapter contains this term"),
        "{why}"
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_broken_search_index_fails_the_browser_check() {
    fails(
        "search-index",
        |d| {
            for entry in fs::read_dir(d.join("book")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy();
                if name.starts_with("searchindex") {
                    fs::write(&path, "window.search = {};").unwrap();
                }
            }
        },
        "search \"fast weight\"",
    );
}
