//! The book's mdBook preprocessor. It runs before mdBook's own `links`
//! preprocessor, numbers every listing, figure and output of the book,
//! and expands the directives of every chapter. A module per directive:
//!
//! - `listing`: a code block that includes a file by anchor
//!   (`{{#include path:anchor}}` or `{{#rustdoc_include path:anchor}}`)
//!   gets a numbered caption with an id, `Listing 2.1`. `include` reads
//!   the directive and checks that the anchor exists and encloses some
//!   code: mdBook itself would show an empty block.
//! - `figure`: a `{{#figure NAME` block, which holds the figure's
//!   `caption:` and `alt:` text and ends with `}}`, becomes the SVG drawn
//!   by the figure NAME of the `figures` crate, in a `<figure>` with an
//!   id, the text alternative and a numbered caption.
//! - `output`: `{{#output NAME}}` becomes a text block with what the
//!   experiment NAME of `listings::outputs` prints, computed now.
//! - `reference`: `{{#ref figure:NAME}}`, `{{#ref listing:ANCHOR}}` and
//!   `{{#ref output:NAME}}` become links to the numbered item, in this
//!   chapter or another one.
//! - `claim`: `{{#claim TEST ...}}` after a sentence becomes a small link
//!   to its entry in the page that holds `{{#claims}}`, the generated
//!   appendix of every marked sentence with its tests; a mark naming a
//!   test that the workspace does not define fails the build. Each chapter
//!   page ends with a hidden store of its tests' evidence, which a mark
//!   opens on the page; `{{#verification}}` is the report of the test run
//!   the book was built with. `verify` reads that run's record and says
//!   what kind of evidence each test is and how to rerun it.
//!
//! And the machinery: `expand` runs the two passes, numbering every item
//! into `number`'s index and then expanding each chapter through the
//! directives' modules; `make` runs the experiments behind the figures and
//! outputs of a `registry`; `scan` reads a chapter line by line; `chapter`
//! labels the chapters of mdBook's `book` model; `escape`, a leaf, holds
//! mdBook's and HTML's escapes. `orphan` is the reverse of the include
//! check, which the command runs beside [`process`]: it finds the anchors
//! that no chapter includes, in the files around those the chapters do.
//! `katex_guard` is the second pass, after KaTeX. Imports run one way: no
//! module uses a module that uses it.
//!
//! Any unknown name, missing anchor or malformed directive is an error that
//! stops the build and says where it is and what would have been valid.
//! The preprocessor writes no files.

pub mod book;
pub mod claim;
pub mod fnv;
pub mod katex_guard;
pub mod verify;

mod chapter;
mod escape;
mod expand;
mod figure;
mod include;
mod listing;
mod make;
mod number;
mod orphan;
mod output;
mod reference;
mod registry;
mod scan;

#[cfg(test)]
mod test_support;

pub use expand::{Mode, TRY_IT_VAR};
pub use orphan::orphan_anchors;
#[cfg(feature = "book")]
pub use registry::BookRegistry;
pub use registry::{Cached, Registry};
// The book's build (`cargo xtask`) reads which code blocks are listings
// exactly as the preprocessor does.
pub use scan::listing_anchors;

use book::Book;
use claim::Claims;
use expand::Context;
use std::path::Path;

/// Number every item in `book`, expand the directives, and write the
/// edited chapters back into it. `src` is the book's source folder. On
/// failure, every problem found, one per string, and the book unchanged.
///
/// The record of the test run the book is built with is the file
/// `BOOK_TEST_RECORD` names, if it is set ([`verify::Record::from_env`]).
pub fn process(
    book: &mut Book,
    src: &Path,
    registry: &dyn Registry,
    mode: Mode,
) -> Result<(), Vec<String>> {
    let record = verify::Record::from_env().map_err(|e| vec![e])?;
    process_with(book, src, registry, mode, record)
}

/// [`process`] with the record of the test run given.
pub fn process_with(
    book: &mut Book,
    src: &Path,
    registry: &dyn Registry,
    mode: Mode,
    record: Option<verify::Record>,
) -> Result<(), Vec<String>> {
    let chapters = chapter::collect(book);
    let mut errors = Vec::new();
    let index = expand::number_all(&chapters, src, registry, &mut errors);
    let made = make::make_all(&index, registry);
    let claims = Claims::collect(&chapters, src, record, &mut errors);
    let paths: Vec<String> = chapters.iter().map(|c| c.path.clone()).collect();
    let ctx = Context {
        mode,
        paths: &paths,
        index: &index,
        src,
        made: &made,
        claims: &claims,
    };
    let expanded: Vec<String> = chapters
        .iter()
        .enumerate()
        .map(|(here, ch)| expand::expand(&ctx, here, ch, &mut errors))
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut next = expanded.into_iter();
    book.for_each_chapter_mut(|ch| {
        if let Some(content) = next.next() {
            ch.content = content;
        }
    });
    Ok(())
}
