//! `{{#include path:anchor}}` and `{{#rustdoc_include path:anchor}}`: how
//! they are read, and the check that the anchor exists and encloses code.
//! mdBook's own `links` preprocessor, which does the including, would show
//! an empty block instead.
//!
//! This module is public so that the book's build (`cargo xtask`) reads
//! includes exactly as the preprocessor does; see [`listing_anchors`].

use crate::scan::{find_unescaped, scan};
use std::path::{Component, Path, PathBuf};

/// One include directive, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Include<'a> {
    /// The file, relative to the chapter.
    pub path: &'a str,
    /// The anchor after the `:`, if there is one.
    pub anchor: Option<&'a str>,
    /// `{{#rustdoc_include}}`: a runnable example, not library code.
    pub runnable: bool,
}

impl Include<'_> {
    /// The argument as written, `path:anchor`.
    pub fn arg(&self) -> String {
        match self.anchor {
            Some(anchor) => format!("{}:{anchor}", self.path),
            None => self.path.to_string(),
        }
    }
}

/// The include directive in `line`, if it has one that is not escaped
/// (`\{{#include ...}}` is left for mdBook to unescape).
pub fn parse(line: &str) -> Option<Include<'_>> {
    for (tag, runnable) in
        [("{{#include ", false), ("{{#rustdoc_include ", true)]
    {
        let Some(rest) =
            find_unescaped(line, tag).map(|i| &line[i + tag.len()..])
        else {
            continue;
        };
        if let Some(end) = rest.find("}}") {
            let arg = rest[..end].trim();
            let (path, anchor) = match arg.split_once(':') {
                Some((path, anchor)) => (path.trim(), Some(anchor.trim())),
                None => (arg, None),
            };
            return Some(Include {
                path,
                anchor,
                runnable,
            });
        }
    }
    None
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

/// Check that `path` (relative to the chapter) has a non-empty anchor.
/// Returns the file's path relative to the book's root, for the caption.
pub(crate) fn check_anchor(
    src: &Path,
    chapter: &str,
    path: &str,
    anchor: &str,
) -> Result<String, String> {
    if anchor.is_empty()
        || anchor.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return Err(format!(
            "`{path}:{anchor}`: include a listing by its anchor name, not by \
             line numbers"
        ));
    }
    let chapter_dir = Path::new(chapter).parent().unwrap_or(Path::new(""));
    let file = normalize(&src.join(chapter_dir).join(path));
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!("`{path}`: cannot read {}: {e}", file.display())
    })?;
    let marker = |line: &str, tag: &str| {
        line.split_once(tag).map(|(_, rest)| {
            rest.trim()
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or_default()
                .to_string()
        })
    };
    let mut body: Option<Vec<&str>> = None;
    let mut closed = false;
    let mut anchors = Vec::new();
    for line in text.lines() {
        if let Some(name) = marker(line, "ANCHOR_END:") {
            if name == anchor && body.is_some() {
                closed = true;
                break;
            }
        } else if let Some(name) = marker(line, "ANCHOR:") {
            if name == anchor {
                body = Some(Vec::new());
            } else {
                anchors.push(name);
            }
        } else if let Some(b) = body.as_mut() {
            b.push(line);
        }
    }
    let shown = display_path(src, &file);
    match body {
        None => Err(format!(
            "`{path}:{anchor}`: no `ANCHOR: {anchor}` in {shown}; its anchors: {}",
            if anchors.is_empty() {
                "none".to_string()
            } else {
                anchors.join(", ")
            }
        )),
        Some(_) if !closed => Err(format!(
            "`{path}:{anchor}`: `ANCHOR: {anchor}` in {shown} has no `ANCHOR_END: {anchor}`"
        )),
        Some(b) if b.iter().all(|l| l.trim().is_empty()) => Err(format!(
            "`{path}:{anchor}`: the anchor `{anchor}` in {shown} encloses no code"
        )),
        Some(_) => Ok(shown),
    }
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A file's path as the reader should see it: relative to the book's root
/// (the folder that holds `src/`).
fn display_path(src: &Path, file: &Path) -> String {
    let root = normalize(&src.join(".."));
    file.strip_prefix(&root)
        .unwrap_or(file)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{chapter, run, scratch};
    use serde_json::json;

    #[test]
    fn missing_or_empty_anchor_fails_and_names_the_file() {
        let src = scratch("anchors");
        let body = "```rust\n{{#include ../code/lib.rs:ad}}\n```\n\n\
                    ```rust\n{{#include ../code/lib.rs:empty}}\n```\n\n\
                    ```rust\n{{#include ../code/lib.rs}}\n```\n\n\
                    ```rust\n{{#include ../code/nope.rs:add}}\n```\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0]
                .contains("no `ANCHOR: ad` in code/lib.rs; its anchors: add")
        );
        assert!(errors[1].contains("encloses no code"));
        assert!(errors[2].contains("includes a whole file"));
        assert!(errors[3].contains("cannot read"));
    }

    #[test]
    fn listing_anchors_are_the_first_include_of_each_block() {
        let md = "```rust\n{{#include ../a.rs:one}}\n{{#include ../a.rs:two}}\n```\n\
                  {{#include ../a.rs:prose}}\n\
                  ```text\n\\{{#include ../a.rs:escaped}}\n```\n\
                  ~~~rust\n{{#rustdoc_include ../b.rs:three}}\n~~~\n";
        assert_eq!(listing_anchors(md), ["one", "three"]);
    }

    #[test]
    fn an_include_is_read_with_its_anchor_and_kind() {
        assert_eq!(
            parse("{{#include ../a.rs : one }}"),
            Some(Include {
                path: "../a.rs",
                anchor: Some("one"),
                runnable: false
            })
        );
        assert_eq!(
            parse("{{#rustdoc_include b.rs}}").map(|i| (i.anchor, i.runnable)),
            Some((None, true))
        );
        assert_eq!(parse("\\{{#include a.rs:x}}"), None);
    }
}
