//! `{{#include path:anchor}}` and `{{#rustdoc_include path:anchor}}`: how
//! they are read, and the check that the anchor exists and encloses code.
//! mdBook's own `links` preprocessor, which does the including, would show
//! an empty block instead. Also the reading of a file's anchors, which
//! `orphan` checks the other way round.

use crate::escape::find_unescaped;
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
    let file = resolve(src, chapter, path);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!("`{path}`: cannot read {}: {e}", file.display())
    })?;
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

/// The name after `tag` (`ANCHOR:` or `ANCHOR_END:`) in a line of a file,
/// if the line has the tag, read as mdBook reads it: letters, digits, `_`
/// and `-`.
fn marker(line: &str, tag: &str) -> Option<String> {
    line.split_once(tag).map(|(_, rest)| {
        rest.trim()
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .next()
            .unwrap_or_default()
            .to_string()
    })
}

/// Every anchor a file's `text` opens, with the line of its `ANCHOR:`
/// (from 1). A marker with no name (`ANCHOR: {name}` in a format string,
/// say) opens none.
pub(crate) fn anchors(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.contains("ANCHOR_END:"))
        .filter_map(|(n, line)| Some((n + 1, marker(line, "ANCHOR:")?)))
        .filter(|(_, name)| !name.is_empty())
        .collect()
}

/// The file an include's `path` names, from the chapter at `chapter`
/// (relative to `src`).
pub(crate) fn resolve(src: &Path, chapter: &str, path: &str) -> PathBuf {
    let chapter_dir = Path::new(chapter).parent().unwrap_or(Path::new(""));
    normalize(&src.join(chapter_dir).join(path))
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
pub(crate) fn display_path(src: &Path, file: &Path) -> String {
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
