//! The build's checks, proved: small books with one defect each must fail
//! to build, and the same book without the defect must build. These tests
//! run mdbook, so they are ignored by a plain `cargo test`; `cargo xtask
//! test` runs them after installing the tools (`cargo test -p xtask --
//! --ignored`).

mod common;

use common::{FIGURE, GOOD, fails_with, fixture};
use std::fs;
use xtask::book::{self, Enforce};

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn the_defect_free_book_builds() {
    let dir = fixture("good", "", GOOD);
    let pages = book::build(&dir).expect("the good fixture builds");
    assert!(pages >= 2);
    let html = fs::read_to_string(dir.join("book/chapter.html")).unwrap();
    assert!(html.contains("class=\"katex"), "math was prerendered");
    assert!(html.contains("<svg"), "the figure is inline");
    assert!(html.contains("Listing 1.1"));
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_katex_error_fails_the_build() {
    let broken = GOOD.replace("\\frac{1}{2}", "\\frac{1}{");
    fails_with(&fixture("katex", "", &broken), "KaTeX could not render");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn an_unknown_macro_fails_the_build() {
    let broken = GOOD.replace("$x^2$", "$\\notamacro{x}$");
    fails_with(&fixture("macro", "", &broken), "KaTeX could not render");
}

/// GOOD with a claim mark after its first sentence, a claims appendix,
/// and in the fixture's own sources the test `inline_math_renders`.
fn claims_fixture(name: &str, mark: &str) -> std::path::PathBuf {
    let chapter = GOOD.replace("display:\n", &format!("display. {mark}\n"));
    let dir = fixture(name, "- [Claims](claims.md)\n", &chapter);
    fs::write(
        dir.join("src/claims.md"),
        "# Claims and their tests\n\n{{#claims}}\n",
    )
    .unwrap();
    fs::write(
        dir.join("tests.rs"),
        "#[test]\nfn inline_math_renders() {\n    assert!(true);\n}\n",
    )
    .unwrap();
    dir
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_claim_mark_links_to_the_generated_appendix() {
    let dir = claims_fixture("claims-good", "{{#claim inline_math_renders}}");
    book::build(&dir).expect("a mark naming a test that exists builds");
    let chapter = fs::read_to_string(dir.join("book/chapter.html")).unwrap();
    assert!(
        chapter.contains("href=\"claims.html#claim-0-1\""),
        "{chapter}"
    );
    let page = fs::read_to_string(dir.join("book/claims.html")).unwrap();
    assert!(page.contains("id=\"claim-0-1\""), "{page}");
    assert!(page.contains("tests.rs:2"), "{page}");
    assert!(page.contains("<details class=\"claim-body\">"), "{page}");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_claim_mark_naming_a_missing_test_fails_the_build() {
    // The test renamed: the mark still names the old one.
    fails_with(
        &claims_fixture("claims-renamed", "{{#claim inline_math_rendered}}"),
        "chapter.md: the claim mark names `inline_math_rendered`, but no \
         #[test] fn inline_math_rendered exists in the workspace",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_claim_mark_whose_test_did_not_run_fails_the_test_command() {
    // The fixture's test exists in its sources, so the build passes, but
    // no crate compiles it: `cargo test --workspace -- --list` of this
    // workspace does not list it, and the check says so.
    let dir = claims_fixture("claims-unrun", "{{#claim inline_math_renders}}");
    book::build(&dir).expect("the test exists in the sources");
    let list = std::process::Command::new("cargo")
        .args(["test", "--workspace", "--quiet", "--", "--list"])
        .current_dir(xtask::root())
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains(": test"), "{list}");
    assert_eq!(
        xtask::claims::unrun(&dir, &list).unwrap(),
        ["src/chapter.md: inline_math_renders"]
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_control_character_in_a_chapter_fails_the_build() {
    // "$x^\top$" written through an escape that turned \t into a TAB:
    // KaTeX renders x^ op without a word, so the build must refuse it.
    let broken = GOOD.replace("$x^2$", "$x^\top$");
    fails_with(
        &fixture("control-tab", "", &broken),
        "src/chapter.md:3:11: U+0009 (TAB",
    );
    let broken = GOOD.replace("\\frac{1}{2}", "\u{c}rac{1}{2}");
    fails_with(&fixture("control-ff", "", &broken), "U+000C (form feed");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn an_include_with_a_missing_anchor_fails_the_build() {
    let broken = GOOD.replace("code.rs:shown", "code.rs:hidden");
    fails_with(&fixture("anchor", "", &broken), "no `ANCHOR: hidden`");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn an_anchor_no_chapter_includes_fails_the_build() {
    // A second listing planted beside the one the chapter shows.
    let dir = fixture("orphan-anchor", "", GOOD);
    let code = dir.join("code.rs");
    let mut text = fs::read_to_string(&code).unwrap();
    text.push_str(
        "\n// ANCHOR: unshown\npub fn unshown() {}\n// ANCHOR_END: unshown\n",
    );
    fs::write(&code, text).unwrap();
    fails_with(
        &dir,
        "code.rs:5: the anchor `unshown` is included by no chapter",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn an_unknown_figure_fails_the_build_and_lists_the_known_ones() {
    let broken = GOOD
        .replace("{{#figure causal-attention-heatmap\n", "{{#figure nope\n");
    let dir = fixture("figure", "", &broken);
    fails_with(&dir, "unknown figure `nope`; known figures: ");
    // The list names the real figures, in whatever order figures::ALL has.
    fails_with(&dir, "causal-attention-heatmap");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_figure_without_its_caption_or_text_alternative_fails_the_build() {
    let no_caption =
        GOOD.replace("caption: Causal attention weights,\n  row by row.\n", "");
    fails_with(
        &fixture("figure-caption", "", &no_caption),
        "chapter.md: figure `causal-attention-heatmap` has no caption",
    );
    let no_alt =
        GOOD.replace("alt: A lower triangle of coloured squares.\n", "");
    fails_with(
        &fixture("figure-alt", "", &no_alt),
        "chapter.md: figure `causal-attention-heatmap` has no text alternative",
    );
    let bare = GOOD.replace(FIGURE, "{{#figure causal-attention-heatmap}}\n");
    fails_with(
        &fixture("figure-bare", "", &bare),
        "has no caption and no text alternative",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn an_unknown_output_fails_the_build() {
    let broken =
        GOOD.replace("{{#output attention-walkthrough}}", "{{#output nope}}");
    fails_with(&fixture("output", "", &broken), "unknown output `nope`");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_summary_entry_without_a_file_fails_the_build() {
    let dir = fixture("missing", "- [Missing](missing.md)\n", GOOD);
    fails_with(&dir, "mdbook build failed");
    assert!(!dir.join("src/missing.md").exists(), "no page was created");
}

/// A chapter with a listing (library code, which `mdbook test` must skip)
/// and one runnable block that calls `listings`.
fn tested_block(assertion: &str) -> String {
    format!(
        "# Chapter\n\n```rust,noplayground\n{{{{#include ../code.rs:shown}}}}\n```\n\n\
         ```rust\n# extern crate listings;\n\
         let (_, read) = listings::m3::attention::walkthrough(0);\n\
         # {assertion}\nprintln!(\"{{:?}}\", read.weights.dim());\n```\n"
    )
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn mdbook_test_runs_book_code_against_listings_and_fails_on_a_broken_assert() {
    let good = fixture(
        "tested",
        "",
        &tested_block("assert_eq!(read.weights.dim(), (12, 12));"),
    );
    book::mdbook_test(&good).expect("a true hidden assertion passes");
    let bad = fixture(
        "untested",
        "",
        &tested_block("assert_eq!(read.weights.dim(), (12, 13));"),
    );
    assert!(
        book::mdbook_test(&bad).is_err(),
        "a false hidden assertion must fail"
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_long_answer_or_one_holding_an_output_fails_the_build() {
    let long = format!(
        "{GOOD}\n<details class=\"answer\">\n<summary>Answer</summary>\n\n{}\n\
         </details>\n",
        "word ".repeat(260)
    );
    fails_with(
        &fixture("answer-long", "", &long),
        "a collapsed answer of 261 words of prose (more than 250)",
    );
    let holding = format!(
        "{GOOD}\n<details class=\"answer\">\n<summary>Answer</summary>\n\n\
         Short.\n\n{{{{#output attention-walkthrough}}}}\n\n</details>\n"
    );
    fails_with(
        &fixture("answer-output", "", &holding),
        "a collapsed answer of 2 words of prose holds 1 output",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_line_that_starts_a_list_by_accident_fails_the_build() {
    let broken = format!(
        "{GOOD}\nThe memory's values are all\n1. The test checks it.\n"
    );
    fails_with(
        &fixture("accidental-list", "", &broken),
        ": \"1. The test checks it.\"",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_stray_backslash_before_a_directive_fails_the_build() {
    // mdBook unescapes the first `\{{#` of a line only, and only up to a
    // `}}` on that line.
    let two = format!(
        "{GOOD}\nWrite `\\{{{{#output A}}}}` or `\\{{{{#figure B}}}}`.\n"
    );
    fails_with(
        &fixture("stray-backslash", "", &two),
        "a backslash before `{{#` that mdBook will not remove",
    );
    let block =
        format!("{GOOD}\n```text\n\\{{{{#figure heat\ncaption: C\n}}}}\n```\n");
    fails_with(
        &fixture("stray-backslash-block", "", &block),
        "a backslash before `{{#` that mdBook will not remove, so the reader \
         sees it: `\\{{#figure heat`",
    );
}

/// Build `dir` with `enforce`; it must fail with `expected` in the reason.
fn fails_enforcing(dir: &std::path::Path, enforce: Enforce, expected: &str) {
    match book::build_with(dir, enforce) {
        Ok(_) => panic!("{} built, but should have failed", dir.display()),
        Err(xtask::Failure(why)) => assert!(
            why.contains(expected),
            "{} failed, but not with `{expected}`:\n{why}",
            dir.display()
        ),
    }
}

/// The prose checks enforced, the notation check not.
const PROSE: Enforce = Enforce {
    prose: true,
    notation: false,
};

/// [`GOOD`] with a teaching chapter, `src/m3/taught.md`, holding `text`.
fn teaching_fixture(name: &str, text: &str) -> std::path::PathBuf {
    let dir = fixture(name, "- [Taught](m3/taught.md)\n", GOOD);
    fs::create_dir_all(dir.join("src/m3")).unwrap();
    fs::write(dir.join("src/m3/taught.md"), text).unwrap();
    dir
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_planted_long_sentence_in_a_teaching_chapter_fails_the_build() {
    // 4 + 2 × 20 + 5 = 49 words: "e.g." and "et al." do not end it.
    let long = format!(
        "This sentence runs on,{} e.g. here, et al. too.",
        " and on".repeat(20)
    );
    let text = format!("# Taught\n\nA short sentence first. {long}\n");
    fails_enforcing(
        &teaching_fixture("prose-long-sentence", &text),
        PROSE,
        "src/m3/taught.md:3: a sentence of 49 words (more than 45): \"This \
         sentence runs on, and on",
    );
    // Report only, the same chapter builds; split in two, it passes.
    let dir = teaching_fixture("prose-long-reported", &text);
    book::build_with(
        &dir,
        Enforce {
            prose: false,
            notation: false,
        },
    )
    .expect("a report-only check prints the breach and builds");
    let split = text.replace(" e.g. here", ". Then here");
    book::build_with(&teaching_fixture("prose-split", &split), PROSE)
        .expect("two sentences within the limit build");
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_teaching_chapter_over_its_words_fails_the_build() {
    // Words in code, math, tables and figures do not count.
    let filler = "Eight words of prose in every sentence here. "
        .repeat(xtask::prose::MAX_WORDS / 8);
    let extra = format!(
        "\n\n```text\n{0}\n```\n\n$$\nx\n$$\n\n| {0} |\n|---|\n",
        "code ".repeat(50)
    );
    // 1 + 8 × 312 + 3 = 2500 words.
    let within = format!("# Taught\n\n{filler}Three more words.{extra}");
    book::build_with(&teaching_fixture("prose-words-ok", &within), PROSE)
        .expect("a chapter of exactly the limit builds");
    let over = format!("# Taught\n\n{filler}Four more words here.{extra}");
    fails_enforcing(
        &teaching_fixture("prose-words-over", &over),
        PROSE,
        "src/m3/taught.md: 2501 words of prose (more than 2500)",
    );
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn a_symbol_of_display_math_the_registry_lacks_fails_the_build() {
    let chapter = GOOD.replace(
        "\\frac{1}{2}",
        "\\mathbf{S}_t = \\mathbf{S}_{t-1} + \\beta_t W_t",
    );
    let registry = "# Notation\n\n| $\\mathbf{S}_t$ | memory |\n|---|---|\n\
                    | $\\beta_t$ | write strength |\n";
    let book = |name: &str, registry: &str| {
        let dir =
            fixture(name, "- [Notation](appendix/notation.md)\n", &chapter);
        fs::create_dir_all(dir.join("src/appendix")).unwrap();
        fs::write(dir.join("src/appendix/notation.md"), registry).unwrap();
        dir
    };
    let notation = Enforce {
        prose: false,
        notation: true,
    };
    fails_enforcing(
        &book("notation-missing", registry),
        notation,
        "1 symbol(s) of display math have no entry in \
         src/appendix/notation.md (add each to the registry, or use a \
         symbol it defines):\nW  first in src/chapter.md:6",
    );
    let complete = format!("{registry}| $W$ | slow weights |\n");
    book::build_with(&book("notation-complete", &complete), notation)
        .expect("a registry with every symbol builds");
}

/// The stored body of the first document of the search index of the book
/// built in `dir`.
fn first_search_body(dir: &std::path::Path) -> String {
    let book = dir.join("book");
    let file = fs::read_dir(&book)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("searchindex") && name.ends_with(".js")
        })
        .expect("mdBook wrote a search index");
    let js = fs::read_to_string(file).unwrap();
    let json = xtask::search::json_of_js(&js).expect("mdBook's format");
    let all: serde_json::Value = serde_json::from_str(&json).unwrap();
    all["index"]["documentStore"]["docs"]["0"]["body"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
#[ignore = "needs mdbook and mdbook-katex; run by cargo xtask test"]
fn the_search_index_holds_each_formula_once_and_figures_by_their_alt() {
    let dir = fixture("search-readable", "", GOOD);
    // mdBook alone indexes the MathML, the TeX and the visible HTML of
    // each formula, and every tick label of the figure.
    xtask::run("mdbook", &["build", &dir.display().to_string()], &dir).unwrap();
    let raw = first_search_body(&dir);
    assert!(raw.contains("x 2 x^2 x 2"), "{raw}");
    assert!(raw.contains("\\frac{1}{2}"), "{raw}");
    // The build rewrites the index: each formula once, as its MathML
    // reads, and the figure by its text alternative.
    book::build(&dir).expect("the good fixture builds");
    let body = first_search_body(&dir);
    assert!(body.starts_with("Inline x 2 and display: 1 2 "), "{body}");
    assert!(!body.contains('\\') && !body.contains('^'), "{body}");
    assert!(
        body.contains("A lower triangle of coloured squares."),
        "{body}"
    );
    let ticks: Vec<&str> = raw
        .split_whitespace()
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert!(ticks.len() > 10, "the figure's tick labels: {ticks:?}");
    assert!(
        body.split_whitespace()
            .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
            .count()
            < 6,
        "{body}"
    );
}
