//! The chapters as the preprocessor sees them: in reading order, each
//! with the label its items are numbered under.

use crate::book::Book;

/// One chapter as the preprocessor sees it.
pub(crate) struct Chapter {
    /// "2" for chapter 2, "2.1" for its first section, "A" for the first
    /// appendix (an unnumbered chapter after the numbered ones), "0" for an
    /// unnumbered chapter before them.
    pub(crate) label: String,
    /// The chapter's path in `src/`, e.g. `m3/attention.md`.
    pub(crate) path: String,
    pub(crate) content: String,
}

/// Every chapter and section of `book` in reading order, labelled.
pub(crate) fn collect(book: &Book) -> Vec<Chapter> {
    let mut seen_numbered = false;
    let mut appendix = 0u8;
    book.chapters()
        .into_iter()
        .map(|ch| {
            let number = ch.number.as_deref().unwrap_or_default();
            let label = if !number.is_empty() {
                seen_numbered = true;
                let parts: Vec<String> =
                    number.iter().map(u32::to_string).collect();
                parts.join(".")
            } else if seen_numbered {
                appendix += 1;
                char::from(b'A' + appendix - 1).to_string()
            } else {
                "0".to_string()
            };
            Chapter {
                label,
                path: ch.path.clone().unwrap_or_default(),
                content: ch.content.clone(),
            }
        })
        .collect()
}
