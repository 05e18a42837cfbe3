//! The publishing settings agree with each other: book.toml's repository
//! placeholders, and the Pages workflow that replaces them and runs the
//! same test command as everyone else.

use std::fs;
use xtask::root;

/// The string value of `key = "..."` in book.toml.
fn book_toml(key: &str) -> String {
    let text = fs::read_to_string(root().join("book.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{key} =")))
        .unwrap_or_else(|| panic!("book.toml sets no {key}"));
    line.split('"').nth(1).unwrap().to_string()
}

#[test]
fn the_edit_links_point_into_the_repository_the_book_names() {
    let repo = book_toml("git-repository-url");
    let edit = book_toml("edit-url-template");
    assert!(repo.starts_with("https://github.com/OWNER/"), "{repo}");
    assert_eq!(edit, format!("{repo}/edit/main/{{path}}"));
}

#[test]
fn the_pages_workflow_tests_then_publishes_the_checked_book() {
    let flow =
        fs::read_to_string(root().join(".github/workflows/pages.yml")).unwrap();
    let test = flow.find("run: cargo xtask test").expect("runs the test");
    let build = flow.find("run: cargo xtask build").expect("builds");
    let upload = flow.find("upload-pages-artifact").expect("uploads");
    assert!(
        test < build && build < upload,
        "test, build, upload in order"
    );
    assert!(flow.contains("path: book\n"));
    let ci = fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("cargo xtask test"), "CI runs the same command");
    for key in ["GIT_REPOSITORY_URL", "EDIT_URL_TEMPLATE", "SITE_URL"] {
        assert!(
            flow.contains(&format!("MDBOOK_OUTPUT__HTML__{key}:")),
            "{key}"
        );
    }
    assert!(flow.contains(
        "/${{ github.repository }}/edit/${{ github.ref_name }}/{path}"
    ));
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
