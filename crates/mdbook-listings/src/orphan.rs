//! Anchors no chapter includes: the reverse of the include check. An
//! `// ANCHOR: name` in the code the book shows marks a listing; one that
//! no chapter includes is a listing the reader never sees, so its anchor
//! comments only mislead the next person reading the code.
//!
//! The code looked at is every file below each folder a chapter includes
//! from, with the extension of a file a chapter includes (the book's
//! chapters include from `listings/src` and `listings/examples`, so every
//! `.rs` file under them). An anchor counts as included when any
//! `{{#include}}` or `{{#rustdoc_include}}` of any chapter names it,
//! inside a code block or not: a listing, a hidden line of a block that
//! `mdbook test` runs, or a runnable example.

use crate::book::Book;
use crate::chapter::{self, Chapter};
use crate::include;
use crate::scan::{Line, scan};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Every anchor under the folders the chapters of `book` include from
/// that no chapter includes, one message each, naming the file (relative
/// to the book's root, the folder that holds `src`), the line and the
/// anchor. `src` is the book's source folder.
pub fn orphan_anchors(book: &Book, src: &Path) -> Vec<String> {
    check(&chapter::collect(book), src)
}

/// [`orphan_anchors`] of chapters already collected.
fn check(chapters: &[Chapter], src: &Path) -> Vec<String> {
    // (file, Some(anchor)) for an anchor included, (file, None) for a
    // file included whole.
    let mut included: BTreeSet<(PathBuf, Option<&str>)> = BTreeSet::new();
    for ch in chapters {
        for s in scan(&ch.content) {
            if let Line::Include(inc) = s.line {
                let file = include::resolve(src, &ch.path, inc.path);
                included.insert((file, inc.anchor));
            }
        }
    }
    let mut folders: Vec<PathBuf> = included
        .iter()
        .filter_map(|(file, _)| file.parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    // A folder below another is walked with it.
    let tops: Vec<&PathBuf> = folders
        .iter()
        .filter(|f| !folders.iter().any(|g| g != *f && f.starts_with(g)))
        .collect();
    let extensions: BTreeSet<&std::ffi::OsStr> = included
        .iter()
        .filter_map(|(file, _)| file.extension())
        .collect();
    let mut problems = Vec::new();
    for file in tops.iter().flat_map(|top| files_under(top)) {
        if !file.extension().is_some_and(|e| extensions.contains(e))
            || included.contains(&(file.clone(), None))
        {
            continue;
        }
        let Ok(text) = fs::read_to_string(&file) else {
            continue; // not text: no anchors
        };
        for (line, anchor) in include::anchors(&text) {
            if !included.contains(&(file.clone(), Some(anchor.as_str()))) {
                problems.push(format!(
                    "{}:{line}: the anchor `{anchor}` is included by no \
                     chapter; show it where the argument needs it \
                     ({{{{#include path:{anchor}}}}}) or remove its \
                     ANCHOR and ANCHOR_END comments",
                    include::display_path(src, &file)
                ));
            }
        }
    }
    problems
}

/// Every file below `dir`, sorted, skipping folders that hold no source:
/// `target`, `book`, `node_modules` and any whose name starts with a dot.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let skip = ["target", "book", "node_modules"];
                if !name.starts_with('.') && !skip.contains(&name.as_str()) {
                    todo.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::scratch;

    fn chapter(path: &str, content: &str) -> Chapter {
        Chapter {
            label: "1".to_string(),
            path: path.to_string(),
            content: content.to_string(),
        }
    }

    #[test]
    fn an_anchor_no_chapter_includes_fails_and_names_its_file() {
        let src = scratch("orphans");
        // A second file beside the included one, and one a folder down.
        std::fs::create_dir_all(src.join("../code/deeper")).unwrap();
        std::fs::write(
            src.join("../code/deeper/more.rs"),
            "fn a() {}\n// ANCHOR: deep\nfn deep() {}\n// ANCHOR_END: deep\n",
        )
        .unwrap();
        std::fs::write(src.join("../code/notes.txt"), "ANCHOR: text\n")
            .unwrap();
        let listing = "```rust\n{{#include ../../code/lib.rs:add}}\n```\n";
        let hidden = "```rust\n# {{#include ../../code/lib.rs:empty}}\n```\n\
                      ```rust\n{{#rustdoc_include ../../code/lib.rs:main}}\n\
                      ```\nEscaped: \\{{#include ../../code/deeper/more.rs:deep}}\n";
        let problems = check(
            &[
                chapter("part/one.md", listing),
                chapter("part/two.md", hidden),
            ],
            &src,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(
                "code/deeper/more.rs:2: the anchor `deep` is included by no \
                 chapter"
            ),
            "{problems:?}"
        );
        // Without the second chapter, its two anchors are orphans too.
        let problems = check(&[chapter("part/one.md", listing)], &src);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("code/deeper/more.rs:2:"));
        assert!(problems[1].starts_with("code/lib.rs:4: the anchor `empty`"));
        assert!(problems[2].starts_with("code/lib.rs:7: the anchor `main`"));
        // A file included whole includes every anchor in it.
        let whole = "```rust\n{{#include ../../code/lib.rs}}\n```\n";
        let problems = check(&[chapter("part/one.md", whole)], &src);
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn a_book_that_includes_nothing_has_no_orphans() {
        let src = scratch("no-includes");
        assert!(check(&[chapter("one.md", "# One\n")], &src).is_empty());
    }
}
