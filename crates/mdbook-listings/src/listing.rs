//! Listings: a fenced code block whose first line includes a file by
//! anchor gets a numbered caption above it, `Listing 2.1: name (path)`,
//! with the id `listing-ANCHOR`. Under `mdbook test`, blocks of library
//! code are marked `ignore`.

use crate::escape;
use crate::include::{self, Include};
use crate::number::{Kind, Numbering};
use std::fmt::Write as _;
use std::path::Path;

/// Number the listing a code block includes, after checking its anchor.
pub(crate) fn number(
    numbering: &mut Numbering<'_>,
    src: &Path,
    chapter: &str,
    include: Include<'_>,
    errors: &mut Vec<String>,
) {
    match include.anchor {
        Some(anchor) => {
            match include::check_anchor(src, chapter, include.path, anchor) {
                Ok(_) => numbering.add(Kind::Listing, anchor, errors),
                Err(e) => errors.push(format!("{chapter}: {e}")),
            }
        }
        None => errors.push(format!(
            "{chapter}: `{}` includes a whole file; include a listing by \
             its anchor, path:anchor",
            include.arg()
        )),
    }
}

/// The caption above the listing `anchor`, labelled `label` ("Listing
/// 2.1"), which comes from `file` (relative to the book's root).
pub(crate) fn caption(out: &mut String, anchor: &str, label: &str, file: &str) {
    let id = Kind::Listing.id(anchor);
    let _ = writeln!(
        out,
        "<p class=\"listing-caption\" id=\"{id}\"><a class=\"caption-label\" \
         href=\"#{id}\">{label}</a>: <code>{anchor}</code> \
         <span class=\"listing-source\">({})</span></p>\n",
        escape::html(file)
    );
}

/// The fence that opens a listing's code block, marked `ignore` when
/// rustdoc is not to compile it: under `mdbook test`, a listing of library
/// code is a fragment of the library, tested by `cargo test`, which
/// rustdoc cannot compile on its own.
pub(crate) fn fence(out: &mut String, fence: &str, ignore: bool) {
    if ignore {
        out.push_str(fence.trim_end());
        out.push_str(",ignore\n");
    } else {
        out.push_str(fence);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{Fake, book, chapter, scratch};
    use crate::{Mode, process};
    use serde_json::json;

    #[test]
    fn under_mdbook_test_listings_are_ignored_and_examples_run() {
        let src = scratch("testmode");
        let body = "```rust,noplayground\n{{#include ../code/lib.rs:add}}\n```\n\
                    ```rust\n{{#rustdoc_include ../code/lib.rs:main}}\n```\n";
        let mut book = book(vec![chapter("One", "one.md", json!([1]), body)]);
        process(&mut book, &src, &Fake, Mode::Test).unwrap();
        let out = &book.chapters()[0].content;
        assert!(
            out.contains("```rust,noplayground,ignore\n{{#include"),
            "{out}"
        );
        assert!(out.contains("```rust\n{{#rustdoc_include"), "{out}");
    }
}
