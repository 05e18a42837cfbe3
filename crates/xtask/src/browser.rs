//! The browser check: the built book as a reader's browser shows it.
//!
//! `browser/check.mjs` (a Node script, driving Debian's chromium headless
//! through playwright-core) serves `book/` on a port of 127.0.0.1, opens
//! every page and fails on raw `$$`/`\(` left in the text, any
//! `.katex-error`, KaTeX's stylesheet or fonts not in use, a figure whose
//! SVG is not drawn (no size, nothing drawn in it) or has no caption or no
//! text alternative, a broken link or anchor (including the sidebar that
//! mdBook's JavaScript builds), a console error, an uncaught exception or a
//! failed request. Every page is laid out at 1280 px and at 420 px (a
//! phone, in its own tab) and fails on content cut without a scrollbar:
//! an element hiding part of its content, or one whose box or content
//! reaches past the column or the window with no scrolling box around it
//! (display math is named by its TeX). Every figure's text is measured as
//! displayed (font size × the scale at which the page shows the SVG) in the
//! one drawing the page shows (each figure is drawn for the desktop and for
//! a phone) and fails under 12 px at 1280 px wide or under 11 px at 420 px,
//! exponents counted at 0.8 of their text (the same rule `figures::style`
//! draws by), or when a legend's entries differ in size; the sizes are
//! printed per figure. Search results' excerpts must not repeat a formula
//! or show its TeX. It switches every chapter with figures or captions
//! through all five mdBook themes with the theme menu and fails when figure
//! text, captions or links fall below 4.5:1 contrast; checks that the print
//! page holds every chapter with its math and figures (and that figures
//! keep their size in print styles); and types terms into the search bar.
//! It saves screenshots of every chapter (light and navy) and of every
//! figure in the light, coal and navy themes under the screenshots folder.
//!
//! Why Node and playwright-core rather than the DevTools protocol from
//! Rust: playwright-core is one npm package with no dependencies and no
//! install scripts, pinned in package-lock.json next to KaTeX (so `npm ci`
//! installs both), it drives the system's chromium through
//! `executablePath` without downloading a browser, and it gives waiting,
//! element screenshots and console capture that a hand-written websocket
//! client would have to rebuild.

use crate::{Failure, root, setup, step};
use std::path::Path;
use std::process::Command;

/// The script, relative to the workspace root.
pub const SCRIPT: &str = "crates/xtask/browser/check.mjs";

/// What a reader must be able to find with the book's search.
pub const MUST_FIND: [&str; 1] = ["fast weight"];

/// Terms search must find as soon as a chapter's text contains them (the
/// Part II chapters bring "delta rule").
pub const FIND_IF_PRESENT: [&str; 4] =
    ["delta rule", "linear attention", "feature map", "softmax"];

/// Run the browser check on the book built in `book_root/book`, with
/// screenshots in `screenshots`. `must_find` are search terms the book
/// must find. Returns the script's summary line.
pub fn check(
    book_root: &Path,
    screenshots: &Path,
    must_find: &[&str],
) -> Result<String, Failure> {
    let chromium = setup::chromium()?;
    let workspace = root();
    setup::node_packages(&workspace)?;
    step(&format!(
        "browser check: every page of {} in headless {}",
        book_root.join("book").display(),
        chromium.display()
    ));
    let mut args: Vec<String> = vec![
        workspace.join(SCRIPT).display().to_string(),
        "--book".into(),
        book_root.join("book").display().to_string(),
        "--screenshots".into(),
        screenshots.display().to_string(),
        "--chromium".into(),
        chromium.display().to_string(),
    ];
    for term in must_find {
        args.extend(["--must-find".into(), term.to_string()]);
    }
    // The record of the test run the book was built with, if there is one:
    // a page may say "passed" only for a test it holds.
    let record = crate::record::path(book_root);
    if record.exists() {
        args.extend(["--record".into(), record.display().to_string()]);
    }
    for term in FIND_IF_PRESENT {
        args.extend(["--find-if-present".into(), term.to_string()]);
    }
    let out = Command::new("node")
        .args(&args)
        .current_dir(&workspace)
        .output()
        .map_err(|e| {
            Failure(format!(
                "could not start `node` for the browser check: {e}; install \
                 Node.js 20 or newer"
            ))
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    let problems: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("problem: "))
        .collect();
    match out.status.code() {
        Some(0) => Ok(stdout
            .lines()
            .find(|l| l.starts_with("browser check:"))
            .unwrap_or_default()
            .to_string()),
        Some(1) if !problems.is_empty() => Err(Failure(format!(
            "the browser check found {} problem(s) in the rendered book:\n{}",
            problems.len(),
            problems.join("\n")
        ))),
        _ => Err(Failure(format!(
            "the browser check could not run ({}):\n{}",
            out.status,
            stderr.trim()
        ))),
    }
}
