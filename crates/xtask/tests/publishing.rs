//! The publishing settings agree with each other: book.toml names no
//! repository, and the Pages workflow gives the build its own address and
//! publishes the book its run of the same test command as everyone else
//! built.

use std::fs;
use xtask::root;

#[test]
fn no_repository_address_is_written_into_the_book() {
    // The icons come only from BOOK_REPOSITORY, so no placeholder can
    // reach a page.
    let text = fs::read_to_string(root().join("book.toml")).unwrap();
    for key in ["git-repository-url", "edit-url-template"] {
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with(key)),
            "book.toml sets {key}"
        );
    }
}

#[test]
fn the_pages_workflow_publishes_the_book_its_test_run_built() {
    let flow =
        fs::read_to_string(root().join(".github/workflows/pages.yml")).unwrap();
    let test = flow.find("run: cargo xtask test").expect("runs the test");
    let upload = flow.find("upload-pages-artifact").expect("uploads");
    assert!(test < upload, "test, then upload");
    assert!(
        !flow.contains("run: cargo xtask build"),
        "a second build would carry no record of the tests"
    );
    assert!(flow.contains("path: book\n"));
    let ci = fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("cargo xtask test"), "CI runs the same command");
    let env = &flow[..test];
    for key in [
        "BOOK_REPOSITORY: ${{ github.server_url }}/${{ github.repository }}",
        "BOOK_BRANCH: ${{ github.ref_name }}",
        "MDBOOK_OUTPUT__HTML__SITE_URL:",
    ] {
        assert!(env.contains(key), "{key}");
    }
}

#[test]
fn every_build_recompiles_and_reruns_the_listings() {
    // mdBook starts each preprocessor with `cargo run`, which rebuilds a
    // changed listing before the experiments run again: no stale binary.
    let text = fs::read_to_string(root().join("book.toml")).unwrap();
    let commands: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("command ="))
        .map(|l| l.split('"').nth(1).unwrap())
        .collect();
    assert!(
        !commands.is_empty(),
        "book.toml names no preprocessor command"
    );
    for command in commands {
        assert!(
            command.starts_with("cargo run --quiet --package mdbook-listings"),
            "{command}"
        );
    }
}

#[test]
fn the_book_has_its_notation_registry() {
    // The notation check skips a book without one (the checks' small
    // books); this book must have it, and list it.
    assert!(root().join("src/appendix/notation.md").exists());
    let summary = fs::read_to_string(root().join("src/SUMMARY.md")).unwrap();
    assert!(summary.contains("(appendix/notation.md)"));
}
