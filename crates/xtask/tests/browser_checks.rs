//! The browser check, proved: a copy of a small, defect-free built book
//! passes it, and copies broken on purpose fail it with a message naming
//! each defect. The damage is done to the built HTML, after the build's
//! static checks, so that these tests show the browser check catching it
//! on its own.
//!
//! A browser run costs seconds, so each broken copy carries several
//! defects, each in its own place and each with its own message; a test
//! fails unless every one of those messages is reported (and the
//! defect-free copy reports none, so no message comes from elsewhere).
//! These tests need mdbook, node and chromium; `cargo xtask test` runs
//! them (`--ignored`).

mod common;

use common::{FIGURE, copy_of, reader_book, tamper};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use xtask::{Failure, book, browser};

/// The defect-free reader book, with the figure in both chapters, built
/// once per test run.
fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = reader_book("browser-good");
        let second = fs::read_to_string(dir.join("src/second.md")).unwrap();
        fs::write(dir.join("src/second.md"), format!("{second}\n{FIGURE}"))
            .unwrap();
        // Two claim marks, their tests, and the appendix they link to.
        let chapter = fs::read_to_string(dir.join("src/chapter.md")).unwrap();
        fs::write(dir.join("src/chapter.md"), format!("{chapter}\n{CLAIMS}"))
            .unwrap();
        fs::write(
            dir.join("tests.rs"),
            "#[test]\nfn rows_sum_to_one() {\n    assert_eq!(1 + 0, 1);\n}\n\n\
             #[test]\nfn second_check_holds() {\n    assert!(2 > 1);\n}\n",
        )
        .unwrap();
        fs::write(
            dir.join("src/claims.md"),
            "# Claims and their tests\n\n{{#claims}}\n",
        )
        .unwrap();
        let summary = fs::read_to_string(dir.join("src/SUMMARY.md")).unwrap();
        fs::write(
            dir.join("src/SUMMARY.md"),
            format!("{summary}- [Claims](claims.md)\n"),
        )
        .unwrap();
        book::build(&dir).expect("the defect-free reader book builds");
        dir
    })
}

/// A paragraph with two claim marks, long enough to wrap on a phone.
const CLAIMS: &str = "Every row of the weights sums to one, whichever query \
    and whichever keys the rows were computed from, and at every length the \
    chapter tries. {{#claim rows_sum_to_one}} The second check holds as \
    well, on the same inputs. {{#claim second_check_holds}}\n";

fn check(dir: &Path, must_find: &[&str]) -> Result<String, Failure> {
    browser::check(dir, &dir.join("screenshots"), must_find)
}

/// Break a copy of the built book with `edit`; the browser check must fail
/// and report every `(defect, message)` of `expected`.
fn fails(
    name: &str,
    must_find: &[&str],
    edit: impl Fn(&Path),
    expected: &[(&str, &str)],
) {
    let dir = copy_of(built(), name);
    edit(&dir);
    let why = match check(&dir, must_find) {
        Ok(_) => panic!("{name}: the browser check passed a broken book"),
        Err(Failure(why)) => why,
    };
    let missed: Vec<String> = expected
        .iter()
        .filter(|(_, message)| !why.contains(message))
        .map(|(defect, message)| format!("{defect}: expected `{message}`"))
        .collect();
    assert!(
        missed.is_empty(),
        "{name}: defects the check did not report:\n{}\n\nit said:\n{why}",
        missed.join("\n")
    );
}

/// Edit `page` of the book in `dir` with `f`.
fn edit_page(dir: &Path, page: &str, f: impl Fn(String) -> String) {
    let path = dir.join("book").join(page);
    let html = fs::read_to_string(&path).unwrap();
    fs::write(&path, f(html)).unwrap();
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
        "figures/second--figure-causal-attention-heatmap-navy.png",
    ] {
        let png = fs::read(shots.join(shot)).unwrap_or_default();
        assert!(png.starts_with(b"\x89PNG"), "{shot} is a PNG");
    }
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn broken_math_links_scripts_print_and_search_fail_the_browser_check() {
    fails(
        "browser-pages",
        // The book never says "delta rule".
        &["fast weight", "delta rule"],
        |d| {
            tamper(
                d,
                "chapter.html",
                "<p>Inline",
                "<p>$$\\frac{1}{2}$$ <span class=\"katex-error\" \
                 title=\"ParseError\">x^</span> Inline",
            );
            // A TAB where `\top` was typed: KaTeX renders x^op silently.
            tamper(
                d,
                "chapter.html",
                "<annotation encoding=\"application/x-tex\">x^2",
                "<annotation encoding=\"application/x-tex\">x^\top",
            );
            tamper(
                d,
                "chapter.html",
                "second.html#target-heading",
                "second.html#gone",
            );
            tamper(
                d,
                "second.html",
                "</main>",
                "<a href=\"third.html\">on</a><a href=\"https://github.com/\
                 OWNER/book\">repository</a><script>console.error('boom')\
                 </script><script>noSuchFunction()</script>\
                 <img alt=\"remote\" src=\"https://example.invalid/a.png\">\
                 </main>",
            );
            tamper(
                d,
                "print.html",
                "id=\"figure-causal-attention-heatmap\"",
                "id=\"figure-renamed\"",
            );
            tamper(d, "print.html", "class=\"katex\"", "class=\"gone\"");
            // The sidebar, which mdBook's script builds on every page.
            let toc = fs::read_dir(d.join("book"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .find(|n| n.starts_with("toc-") && n.ends_with(".js"))
                .expect("mdBook's sidebar script");
            tamper(d, &toc, "href=\"second.html\"", "href=\"gone.html\"");
            for entry in fs::read_dir(d.join("book/katex/fonts")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy();
                if name.starts_with("KaTeX_Main-Regular") {
                    fs::remove_file(&path).unwrap();
                }
            }
        },
        &[
            (
                "raw TeX in the text",
                "chapter.html: raw math left unrendered: \"$$\\frac{1}{2}$$",
            ),
            (
                "a command broken into a TAB",
                "chapter.html: math holds a broken command: U+0009 before \
                 \"op\"",
            ),
            (
                "a KaTeX error",
                "chapter.html: 1 KaTeX error(s) (class katex-error), first: \
                 \"x^\"",
            ),
            (
                "a link to a missing anchor",
                "chapter.html: broken anchor href=\"second.html#gone\": no id \
                 \"gone\" in second.html",
            ),
            (
                "a link to a missing page",
                "second.html: broken link href=\"third.html\": no third.html \
                 in the book",
            ),
            ("a console error", "second.html: console error: boom"),
            (
                "a repository icon with a placeholder address",
                "second.html: a link to a placeholder address: \
                 https://github.com/OWNER/book",
            ),
            (
                "a request to another host",
                "second.html: request leaves the book: \
                 https://example.invalid/a.png",
            ),
            (
                "an uncaught exception",
                "second.html: uncaught exception: noSuchFunction is not \
                 defined",
            ),
            (
                "a missing KaTeX font",
                "chapter.html: HTTP 404 for katex/fonts/KaTeX_Main-Regular",
            ),
            (
                "a formula missing from the print page",
                "print.html: has 1 formulas; the chapters have 2",
            ),
            (
                "a sidebar link to a missing page",
                "broken link href=\"gone.html\": no gone.html in the book",
            ),
            (
                "a figure missing from the print page",
                "print.html: is missing figure(s) \
                 figure-causal-attention-heatmap",
            ),
            (
                "a search term no chapter contains",
                "search \"delta rule\": no chapter contains this term",
            ),
        ],
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn broken_figures_fail_the_browser_check() {
    const FIGURE: &str = "figure figure-causal-attention-heatmap";
    fails(
        "browser-figures",
        &["fast weight"],
        |d| {
            // In the first chapter: no height, no text alternative, a
            // hidden caption, and black text (as plotters draws it before
            // `figures::themeable`).
            edit_page(d, "chapter.html", |html| {
                html.replacen("<svg role=\"img\"", "<svg style=\"height:0\"", 1)
                    .replacen("<figcaption>", "<figcaption hidden>", 1)
                    .replace("fill=\"currentColor\"", "fill=\"#000000\"")
            });
            // In the second: an SVG with its <title> and nothing drawn.
            edit_page(d, "second.html", |html| {
                let title = html.find("<title id=\"figure-").unwrap();
                let start = title + html[title..].find("</title>").unwrap() + 8;
                let end = start + html[start..].find("</svg>").unwrap();
                format!("{}{}", &html[..start], &html[end..])
            });
        },
        &[
            (
                "an SVG of no size",
                &format!("chapter.html: {FIGURE}: the SVG is not drawn"),
            ),
            (
                "no text alternative",
                &format!(
                    "chapter.html: {FIGURE}: the SVG has no text alternative"
                ),
            ),
            (
                "a hidden caption",
                &format!("chapter.html: {FIGURE}: the caption is not visible"),
            ),
            (
                "black text on a dark theme",
                &format!("chapter.html: coal theme: {FIGURE}: text"),
            ),
            (
                "an SVG that draws nothing",
                &format!("second.html: {FIGURE}: the SVG draws nothing"),
            ),
        ],
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn a_broken_search_index_fails_the_browser_check() {
    fails(
        "browser-search-index",
        &["fast weight"],
        |d| {
            for entry in fs::read_dir(d.join("book")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy();
                if name.starts_with("searchindex") {
                    fs::write(&path, "window.search = {};").unwrap();
                }
            }
        },
        &[(
            "search that never answers",
            "search \"fast weight\": the search bar showed no results",
        )],
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn cut_content_and_small_figure_text_fail_the_browser_check() {
    fails(
        "browser-layout",
        &["fast weight"],
        |d| {
            let words = "words too wide to fit ".repeat(60);
            tamper(
                d,
                "chapter.html",
                "</main>",
                &format!(
                    "<div id=\"cut-box\" style=\"overflow:hidden;\
                     width:300px\"><span style=\"white-space:nowrap\">\
                     {words}</span></div>\
                     <p id=\"wide-line\" style=\"white-space:nowrap\">{words}\
                     </p><div id=\"phone-wide\" style=\"width:600px\">fits \
                     a desktop column, not a phone</div></main>"
                ),
            );
            // Display math that may not scroll: the formula runs out of
            // the column on a phone.
            tamper(
                d,
                "second.html",
                "</main>",
                "<style>.katex-display { overflow: visible !important; }\
                 </style><p><span class=\"katex-display\"><span \
                 class=\"katex\"><span class=\"katex-mathml\"><math><semantics>\
                 <annotation encoding=\"application/x-tex\">x + y + z\
                 </annotation></semantics></math></span><span \
                 class=\"katex-html\" style=\"display:block;white-space:nowrap\">\
                 <span style=\"display:inline-block;width:500px\">x + y + z\
                 </span></span></span></span></p></main>",
            );
            // Figure text shrunk to 5 units in a 560-unit-wide figure.
            edit_page(d, "chapter.html", |html| {
                html.replacen("font-size=\"", "font-size=\"5\" data-was=\"", 1)
            });
        },
        &[
            (
                "a box that hides its content",
                "chapter.html: at 1280 px wide: <div#cut-box> \"words too \
                 wide to fit",
            ),
            (
                "a line wider than the column",
                "chapter.html: at 1280 px wide: <p#wide-line> \"words too \
                 wide to fit",
            ),
            (
                "a block that fits a desktop but not a phone",
                "chapter.html: at 420 px wide: <div#phone-wide> \"fits a \
                 desktop column, not a phone\" is cut",
            ),
            (
                "display math that does not scroll",
                "second.html: at 420 px wide: display math \"x + y + z\" is \
                 cut",
            ),
            (
                "figure text below 12 px",
                "chapter.html: figure figure-causal-attention-heatmap: 1 \
                 text(s) smaller than 12 px at 1280 px wide",
            ),
        ],
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn figure_text_at_either_width_legends_in_two_sizes_and_repeated_math_fail() {
    const FIGURE: &str = "figure figure-causal-attention-heatmap";
    fails(
        "browser-figure-text",
        &["fast weight"],
        |d| {
            edit_page(d, "chapter.html", |html| {
                // The phone drawing's text shrunk to 5 units; on the
                // desktop drawing, two texts made legend entries of two
                // sizes.
                let phone = html.find("figure-phone").expect("a phone drawing");
                let (desktop, phone) = html.split_at(phone);
                let desktop = desktop
                    .replacen("<text ", "<text class=\"legend\" ", 1)
                    .replacen(
                        "<text x=",
                        "<text class=\"legend\" style=\"font-size:30px\" x=",
                        1,
                    );
                format!(
                    "{desktop}{}",
                    phone
                        .replace("font-size=\"", "font-size=\"5\" data-was=\"")
                )
            });
            // In the second chapter, both drawings shown at once.
            tamper(d, "second.html", "book-figure figure-phone", "book-figure");
            // The search index holding a formula twice.
            for entry in fs::read_dir(d.join("book")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy();
                if name.starts_with("searchindex") {
                    let js = fs::read_to_string(&path).unwrap();
                    let said = "A fast weight memory;";
                    assert!(js.contains(said), "{js}");
                    let twice = js.replace(said, "A fast weight memory β β;");
                    fs::write(&path, twice).unwrap();
                }
            }
        },
        &[
            (
                "figure text below 11 px on a phone",
                &format!(
                    "chapter.html: {FIGURE}: 32 text(s) smaller than 11 px at \
                     420 px wide"
                ),
            ),
            (
                "a legend in two sizes",
                &format!(
                    "chapter.html: {FIGURE}: legend entries in 2 sizes at 1280 \
                     px wide"
                ),
            ),
            (
                "both drawings of a figure shown",
                &format!(
                    "second.html: {FIGURE}: 2 drawings shown at 1280 px wide"
                ),
            ),
            (
                "an excerpt that repeats its math",
                "search \"fast weight\": a result's excerpt repeats its math \
                 or shows TeX (\"β\" twice in a row)",
            ),
        ],
    );
}

#[test]
#[ignore = "needs mdbook, node and chromium; run by cargo xtask test"]
fn broken_claim_marks_fail_the_browser_check() {
    fails(
        "browser-claims",
        &["fast weight"],
        |d| {
            edit_page(d, "chapter.html", |html| {
                // The first mark pushed to the start of a line, the
                // second shrunk to a small target; in the store, the first
                // test without its code and the second without its kind,
                // and a result that says "passed" with no record.
                let html = html.replacen(
                    "\u{2060}<sup class=\"claim\"",
                    "<br><sup class=\"claim\"",
                    1,
                );
                let second = "data-tests=\"claim-test-second_check_holds\"><a ";
                let html = html.replacen(
                    second,
                    &format!("{second}style=\"padding:0;margin:0\" "),
                    1,
                );
                let store = html.find("class=\"claim-store\"").unwrap();
                let (head, tail) = html.split_at(store);
                let tail = tail
                    .replacen("<details class=\"claim-body\"", "<details", 1)
                    .replacen("class=\"claim-kind\"", "class=\"kind-gone\"", 2)
                    .replacen(
                        "Result: not run in this build",
                        "Result: passed in the test run of commit 0123",
                        1,
                    );
                format!("{head}{tail}")
            });
        },
        &[
            (
                "a mark starting a line",
                "chapter.html: at 420 px: 1 claim mark(s) start a line, e.g. \
                 mark-claim-0-1",
            ),
            (
                "a target under 24 x 24 px",
                "chapter.html: at 1280 px: 1 claim mark(s) smaller than 24 × \
                 24 px, e.g. mark-claim-0-2",
            ),
            (
                "a test without its body",
                "chapter.html: at 1280 px: the evidence of rows_sum_to_one \
                 lacks the test body",
            ),
            (
                "a panel without its body and kind, opened by a click",
                "claim mark mark-claim-0-1 by click: opened a panel lacking \
                 the test body, the evidence kind",
            ),
            (
                "a panel without the kind, opened by the keyboard",
                "claim mark mark-claim-0-2 by keyboard: opened a panel \
                 lacking the evidence kind",
            ),
            (
                "passed without a record",
                "says rows_sum_to_one passed, but the book was checked \
                 without a record of a test run",
            ),
        ],
    );
}
