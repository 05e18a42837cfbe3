//! Reading a chapter line by line: which lines are code fences, includes,
//! `{{#output}}` lines, `{{#figure}}` blocks or prose, and which lie
//! inside a fenced code block, where directives are left alone.

use crate::figure;
use crate::include::{self, Include};

/// A line of a chapter, classified.
pub(crate) enum Line<'a> {
    /// A fence that opens or closes a code block.
    Fence,
    /// `{{#include path:anchor}}` or `{{#rustdoc_include path:anchor}}`.
    Include(Include<'a>),
    /// `{{#output NAME}}` alone on a line.
    Output(&'a str),
    /// A `{{#figure NAME ...}}` block, which may span several lines.
    Figure(figure::Block<'a>),
    /// Anything else.
    Text,
}

/// The lines (numbered from 1) where a reader would see a backslash
/// before a directive. mdBook's `links` preprocessor unescapes
/// `\{{#...}}` with one pattern per line that runs from the first
/// `\{{#` to the line's last `}}`: a second escaped directive on the
/// line keeps its backslash, and so does one with no `}}` after it on
/// its line (the first line of a figure block, say). Inside a code block
/// no directive but `{{#include}}` needs the backslash at all.
pub(crate) fn stray_backslashes(content: &str) -> Vec<(usize, String)> {
    const ESCAPED: &str = "\\{{#";
    content
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let mut at = line.match_indices(ESCAPED).map(|(i, _)| i);
            match (at.next(), at.next()) {
                (None, _) => false,
                (Some(_), Some(_)) => true,
                (Some(first), None) => !line[first..].contains("}}"),
            }
        })
        .map(|(n, line)| (n + 1, line.trim().to_string()))
        .collect()
}

fn classify(line: &str) -> Line<'_> {
    let t = line.trim();
    if t.starts_with("```") || t.starts_with("~~~") {
        return Line::Fence;
    }
    if let Some(include) = include::parse(t) {
        return Line::Include(include);
    }
    if let Some(name) = t
        .strip_prefix("{{#output ")
        .and_then(|r| r.strip_suffix("}}"))
    {
        return Line::Output(name.trim());
    }
    Line::Text
}

/// A line of a chapter with what the preprocessor needs to know about it.
pub(crate) struct Scanned<'a> {
    pub(crate) text: &'a str,
    pub(crate) line: Line<'a>,
    /// Inside a fenced code block (fences included). A figure block is
    /// only ever read outside one.
    pub(crate) inside: bool,
    /// For a fence that opens a block: the block's first include, the one
    /// that makes the block a listing.
    pub(crate) first_include: Option<Include<'a>>,
}

pub(crate) fn scan(content: &str) -> Vec<Scanned<'_>> {
    let lines: Vec<&str> = content.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut inside = false;
    let mut i = 0;
    while i < lines.len() {
        let text = lines[i];
        if !inside && text.trim_start().starts_with(figure::OPEN) {
            let block = figure::parse(&lines[i..]);
            i += block.lines;
            out.push(Scanned {
                text,
                line: Line::Figure(block),
                inside,
                first_include: None,
            });
            continue;
        }
        let line = classify(text);
        let is_fence = matches!(line, Line::Fence);
        let first_include = if is_fence && !inside {
            lines[i + 1..]
                .iter()
                .map(|l| classify(l))
                .take_while(|l| !matches!(l, Line::Fence))
                .find_map(|l| match l {
                    Line::Include(include) => Some(include),
                    _ => None,
                })
        } else {
            None
        };
        let was_inside = inside;
        if is_fence {
            inside = !inside;
        }
        out.push(Scanned {
            text,
            line,
            inside: was_inside || inside,
            first_include,
        });
        i += 1;
    }
    out
}

/// The anchor of the first include in each fenced code block of a
/// chapter's Markdown, in order: the listings the preprocessor captions
/// (`<p class="listing-caption" id="listing-ANCHOR">`).
pub fn listing_anchors(markdown: &str) -> Vec<String> {
    scan(markdown)
        .into_iter()
        .filter_map(|s| s.first_include?.anchor.map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::listing_anchors;
    use crate::test_support::{chapter, run, scratch};
    use serde_json::json;

    #[test]
    fn listing_anchors_are_the_first_include_of_each_block() {
        let md = "```rust\n{{#include ../a.rs:one}}\n{{#include ../a.rs:two}}\n```\n\
                  {{#include ../a.rs:prose}}\n\
                  ```text\n\\{{#include ../a.rs:escaped}}\n```\n\
                  ~~~rust\n{{#rustdoc_include ../b.rs:three}}\n~~~\n";
        assert_eq!(listing_anchors(md), ["one", "three"]);
    }

    #[test]
    fn directives_inside_code_blocks_are_left_alone() {
        let src = scratch("fenced");
        let body = "```text\n{{#figure nothing}}\n{{#ref figure:x}}\n```\n";
        let out = run(&src, vec![chapter("One", "one.md", json!([1]), body)])
            .unwrap();
        assert_eq!(out[0], body);
    }

    #[test]
    fn a_backslash_mdbook_would_leave_in_the_page_is_an_error() {
        let src = scratch("stray");
        let body = "Fine: `\\{{#output A}}`.\n\
                    Two: `\\{{#output A}}` or `\\{{#figure B}}`.\n\
                    ```text\n\\{{#figure heat\ncaption: C\n```\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("one.md:2: a backslash"), "{errors:?}");
        assert!(errors[1].starts_with("one.md:4: a backslash"), "{errors:?}");
    }

    #[test]
    fn escaped_directives_are_left_for_mdbook_to_unescape() {
        let src = scratch("escaped");
        // One escaped directive per line: mdBook unescapes only the first.
        let body = "Write `\\{{#output NAME}}`\nor \\{{#ref figure:X}}.\n\
                    ```text\n\\{{#include ../code/lib.rs:nope}}\n```\n";
        let out = run(&src, vec![chapter("One", "one.md", json!([1]), body)])
            .unwrap();
        assert_eq!(out[0], body);
    }
}
