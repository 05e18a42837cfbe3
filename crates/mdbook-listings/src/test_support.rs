//! A fake registry, a scratch book folder and a runner, for the tests of
//! every directive.

use crate::book::Book;
use crate::verify::Record;
use crate::{Mode, Registry, process, process_with};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub(crate) struct Fake;

impl Registry for Fake {
    fn figure(&self, name: &str) -> Option<String> {
        (name == "heat")
            .then(|| "<svg viewBox=\"0 0 1 1\">\n<rect/>\n</svg>".into())
    }
    fn figure_names(&self) -> Vec<&'static str> {
        vec!["heat"]
    }
    fn output(&self, name: &str) -> Option<String> {
        (name == "shapes").then(|| "Q: (12, 8)\n".into())
    }
    fn output_names(&self) -> Vec<&'static str> {
        vec!["shapes"]
    }
}

/// A scratch `src/` with one listings file, unique per test.
pub(crate) fn scratch(test: &str) -> PathBuf {
    let root = std::env::temp_dir()
        .join(format!("mdbook-listings-{}-{test}", std::process::id()));
    let src = root.join("src");
    std::fs::create_dir_all(src.join("part")).unwrap();
    std::fs::create_dir_all(root.join("code")).unwrap();
    std::fs::write(
        root.join("code/lib.rs"),
        "// ANCHOR: add\npub fn add() {}\n// ANCHOR_END: add\n\
         // ANCHOR: empty\n\n// ANCHOR_END: empty\n\
         // ANCHOR: main\nfn main() {}\n// ANCHOR_END: main\n",
    )
    .unwrap();
    src
}

pub(crate) fn chapter(
    name: &str,
    path: &str,
    number: Value,
    content: &str,
) -> Value {
    json!({"Chapter": {
        "name": name, "content": content, "number": number,
        "sub_items": [], "path": path, "source_path": path,
        "parent_names": []
    }})
}

/// A book of these chapters, read as mdBook would hand it over.
pub(crate) fn book(items: Vec<Value>) -> Book {
    Book::from_json(json!({ "items": items })).unwrap()
}

pub(crate) fn run(
    src: &Path,
    items: Vec<Value>,
) -> Result<Vec<String>, Vec<String>> {
    let mut book = book(items);
    process(&mut book, src, &Fake, Mode::Render)?;
    Ok(book.chapters().iter().map(|c| c.content.clone()).collect())
}

/// The figure `heat` with its words, as a chapter shows it.
pub(crate) const FIGURE: &str =
    "{{#figure heat\ncaption: Weights <by>\n  row\nalt: a grid\n}}\n";

/// A listing, as a chapter in `src/part/` includes it.
pub(crate) const LISTING: &str =
    "```rust\n{{#include ../../code/lib.rs:add}}\n```\n";

/// [`run`], with the record of a test run.
pub(crate) fn run_recorded(
    src: &Path,
    items: Vec<Value>,
    record: &str,
) -> Result<Vec<String>, Vec<String>> {
    let mut book = book(items);
    let record = Record::parse(record).unwrap();
    process_with(&mut book, src, &Fake, Mode::Render, Some(record))?;
    Ok(book.chapters().iter().map(|c| c.content.clone()).collect())
}
