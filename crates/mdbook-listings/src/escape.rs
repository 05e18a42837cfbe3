//! Escapes, both ways: mdBook's backslash that keeps a directive from
//! being expanded, and HTML's character references. A leaf: it knows
//! nothing of chapters, directives or the book.

/// The first place `tag` occurs in `text` without a backslash before it.
/// `\{{#name ...}}` is mdBook's escape: its `links` preprocessor removes
/// the backslash and leaves the directive as text, so we leave it alone.
pub(crate) fn find_unescaped(text: &str, tag: &str) -> Option<usize> {
    text.match_indices(tag)
        .map(|(i, _)| i)
        .find(|&i| !text[..i].ends_with('\\'))
}

/// `text` with the characters HTML gives a meaning written as references.
pub(crate) fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaped_tag_is_skipped_and_the_next_one_found() {
        assert_eq!(find_unescaped("a {{#ref x}}", "{{#ref"), Some(2));
        assert_eq!(find_unescaped("\\{{#ref x}}", "{{#ref"), None);
        assert_eq!(
            find_unescaped("\\{{#ref x}} {{#ref y}}", "{{#ref"),
            Some(12)
        );
    }

    #[test]
    fn html_special_characters_become_references() {
        assert_eq!(
            html("a < b & \"c\" > d"),
            "a &lt; b &amp; &quot;c&quot; &gt; d"
        );
    }
}
