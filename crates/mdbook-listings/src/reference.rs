//! `{{#ref figure:NAME}}`, `{{#ref listing:ANCHOR}}` and
//! `{{#ref output:NAME}}`: a link to the numbered item, in this chapter or
//! another one, labelled with its number.

use crate::escape::find_unescaped;
use crate::number::{Index, Kind};
use std::fmt::Write as _;

/// Replace every `{{#ref kind:key}}` in a line of prose with a link.
/// `paths` are the chapters' paths, `here` the index of this chapter.
pub(crate) fn expand(
    text: &str,
    here: usize,
    paths: &[String],
    index: &Index,
    errors: &mut Vec<String>,
) -> String {
    let path = &paths[here];
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = find_unescaped(rest, "{{#ref") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let Some(end) = after.find("}}") else {
            errors.push(format!("{path}: unclosed `{after}`"));
            return out + after;
        };
        let arg = after["{{#ref".len()..end].trim();
        match arg
            .split_once(':')
            .and_then(|(k, key)| Some((Kind::parse(k)?, key)))
        {
            Some((kind, key)) => match index.lookup(kind, key, here) {
                Some((target, label)) => {
                    let page = if *target == here {
                        String::new()
                    } else {
                        relative(path, &paths[*target])
                    };
                    let _ = write!(out, "[{label}]({page}#{})", kind.id(key));
                }
                None => errors.push(format!(
                    "{path}: `{{{{#ref {arg}}}}}` points at no {} shown in \
                     the book",
                    kind.lower()
                )),
            },
            None => errors.push(format!(
                "{path}: `{{{{#ref {arg}}}}}` should read \
                 {{{{#ref figure:NAME}}}}, {{{{#ref listing:ANCHOR}}}} or \
                 {{{{#ref output:NAME}}}}"
            )),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The path of chapter `to` as a link from chapter `from` (both relative
/// to `src/`).
pub(crate) fn relative(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from.split('/').collect();
    let from_dir = &from_dir[..from_dir.len() - 1];
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts = vec![".."; from_dir.len() - common];
    parts.extend(&to_parts[common..]);
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{FIGURE, LISTING, chapter, run, scratch};
    use serde_json::json;

    #[test]
    fn references_link_within_and_across_chapters() {
        let src = scratch("refs");
        let one = format!("See {{{{#ref figure:heat}}}}.\n\n{FIGURE}");
        let two = format!(
            "As {{{{#ref figure:heat}}}} and {{{{#ref listing:add}}}} \
             show.\n{LISTING}"
        );
        let out = run(
            &src,
            vec![
                chapter("One", "one.md", json!([1]), &one),
                chapter("Two", "part/two.md", json!([2]), &two),
            ],
        )
        .unwrap();
        assert!(
            out[0].contains("See [Figure 1.1](#figure-heat)."),
            "{}",
            out[0]
        );
        assert!(
            out[1].contains(
                "As [Figure 1.1](../one.md#figure-heat) and [Listing \
                 2.1](#listing-add) show."
            ),
            "{}",
            out[1]
        );
    }

    #[test]
    fn bad_references_fail() {
        let src = scratch("badrefs");
        let body = "{{#ref figure:nope}} {{#ref table:x}}\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("points at no figure"));
        assert!(errors[1].contains("should read"));
    }

    #[test]
    fn relative_links_climb_out_of_folders() {
        assert_eq!(relative("m3/a.md", "m3/b.md"), "b.md");
        assert_eq!(relative("m3/a.md", "app/n.md"), "../app/n.md");
        assert_eq!(relative("intro.md", "m3/b.md"), "m3/b.md");
    }
}
