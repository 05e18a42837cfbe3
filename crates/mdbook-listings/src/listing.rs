//! Listings: a fenced code block whose first line includes a file by
//! anchor gets a numbered caption above it, `Listing 2.1: name (path)`,
//! with the id `listing-ANCHOR`. Under `mdbook test`, blocks of library
//! code are marked `ignore`.

use crate::include::{self, Include};
use crate::number::{Kind, Numbering};
use crate::{Context, Mode, escape};
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

/// Write the caption of the listing that the code block opened by `fence`
/// includes, then the fence itself (marked `ignore` for rustdoc when the
/// listing is library code and the book is being tested).
pub(crate) fn expand(
    out: &mut String,
    fence: &str,
    include: Include<'_>,
    ctx: &Context<'_>,
) {
    if let Some(anchor) = include.anchor {
        caption(out, ctx, include.path, anchor);
    }
    if ctx.mode == Mode::Test && !include.runnable {
        // A listing is a fragment of the library, tested by `cargo test`;
        // rustdoc cannot compile it on its own.
        out.push_str(fence.trim_end());
        out.push_str(",ignore\n");
    } else {
        out.push_str(fence);
        out.push('\n');
    }
}

fn caption(out: &mut String, ctx: &Context<'_>, path: &str, anchor: &str) {
    let chapter = &ctx.paths[ctx.here];
    let (Some((_, label)), Ok(file)) = (
        ctx.index.lookup(Kind::Listing, anchor, ctx.here),
        include::check_anchor(ctx.src, chapter, path, anchor),
    ) else {
        return; // reported while numbering
    };
    let id = Kind::Listing.id(anchor);
    let _ = writeln!(
        out,
        "<p class=\"listing-caption\" id=\"{id}\"><a class=\"caption-label\" \
         href=\"#{id}\">{label}</a>: <code>{anchor}</code> \
         <span class=\"listing-source\">({})</span></p>\n",
        escape(&file)
    );
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
