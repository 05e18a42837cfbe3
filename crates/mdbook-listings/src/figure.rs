//! `{{#figure NAME ...}}`: the SVG drawn by the figure NAME of the
//! `figures` crate, inline (so it follows the reader's theme), in a
//! `<figure>` with the id `figure-NAME`, a numbered caption and a text
//! alternative. The chapter writes the words beside the figure:
//!
//! ```text
//! {{#figure causal-attention-heatmap
//! caption: Causal softmax attention weights of the running example: row t
//!   holds how query t spreads its attention over keys j ≤ t.
//! alt: A 12 by 12 grid of coloured squares filling the lower triangle.
//! }}
//! ```
//!
//! The block opens with `{{#figure NAME` on a line of its own and closes
//! with `}}` on a line of its own. Each field starts with `caption:` or
//! `alt:` at the indentation of the opening line (the beginning of the
//! line, unless the whole block is indented); a line indented further
//! continues the field above it, joined with one space. Both fields are required and are
//! plain text (HTML-escaped, not Markdown). A blank line, an unknown or
//! repeated field, or a missing field is an error.

use crate::escape;
use crate::number::Kind;
use std::fmt::Write as _;

/// A `{{#figure}}` block as written in a chapter.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Block<'a> {
    pub(crate) name: &'a str,
    pub(crate) caption: String,
    pub(crate) alt: String,
    /// How many lines of the chapter the block spans.
    pub(crate) lines: usize,
    /// What is wrong with it, if anything, in words for the author.
    pub(crate) errors: Vec<String>,
}

/// The tag that opens a figure block.
pub(crate) const OPEN: &str = "{{#figure ";

/// Read the figure block that starts at `lines[0]` (which starts with
/// [`OPEN`] once trimmed).
pub(crate) fn parse<'a>(lines: &[&'a str]) -> Block<'a> {
    let head = lines[0].trim()[OPEN.len()..].trim();
    let mut block = Block {
        name: head,
        caption: String::new(),
        alt: String::new(),
        lines: 1,
        errors: Vec::new(),
    };
    if let Some(name) = head.strip_suffix("}}") {
        block.name = name.trim();
        block.errors.push(format!(
            "figure `{}` has no caption and no text alternative; write them \
             beside it:\n{OPEN}{0}\ncaption: ...\nalt: ...\n}}}}",
            block.name
        ));
        return block;
    }
    // A block may be indented as a whole (say, inside a list item): fields
    // start at the opening line's indentation, continuations deeper.
    let indent = |line: &str| line.len() - line.trim_start().len();
    let base = indent(lines[0]);
    let mut seen: Vec<&str> = Vec::new();
    let mut current: Option<&str> = None;
    let mut closed = false;
    for line in &lines[1..] {
        if line.trim().is_empty() {
            break;
        }
        block.lines += 1;
        if line.trim() == "}}" {
            closed = true;
            break;
        }
        if indent(line) > base {
            match current {
                Some(key) => push(field(&mut block, key), line.trim()),
                None => block.errors.push(format!(
                    "figure `{}`: the indented line `{}` continues no field",
                    block.name,
                    line.trim()
                )),
            }
            continue;
        }
        let known = line
            .trim_start()
            .split_once(':')
            .filter(|(key, _)| ["caption", "alt"].contains(key));
        let Some((key, text)) = known else {
            block.errors.push(format!(
                "figure `{}`: `{}` is not a field; a figure block holds \
                 `caption: ...` and `alt: ...` and ends with `}}}}` on its \
                 own line",
                block.name,
                line.trim()
            ));
            current = None;
            continue;
        };
        let key = if key == "caption" { "caption" } else { "alt" };
        if seen.contains(&key) {
            block.errors.push(format!(
                "figure `{}` has two `{key}:` fields",
                block.name
            ));
        }
        seen.push(key);
        current = Some(key);
        let value = field(&mut block, key);
        value.clear();
        push(value, text.trim());
    }
    if !closed {
        block.errors.push(format!(
            "figure `{}`: the block is not closed; end it with `}}}}` on a \
             line of its own, before any blank line",
            block.name
        ));
    }
    for (key, what) in [("caption", "caption"), ("alt", "text alternative")] {
        if field(&mut block, key).is_empty() {
            block.errors.push(format!(
                "figure `{}` has no {what} (`{key}: ...`)",
                block.name
            ));
        }
    }
    block
}

fn field<'b>(block: &'b mut Block<'_>, key: &str) -> &'b mut String {
    if key == "caption" {
        &mut block.caption
    } else {
        &mut block.alt
    }
}

/// Append `words` to a field's text, one space after what it holds.
fn push(value: &mut String, words: &str) {
    if !value.is_empty() && !words.is_empty() {
        value.push(' ');
    }
    value.push_str(words);
}

/// The `<figure>` of figure `name`: the SVG as an image labelled by a
/// `<title>` holding the text alternative, then the numbered caption. A
/// figure drawn twice (for the desktop and for a phone; the page's CSS
/// shows one) gives each drawing the same label: the title of the first.
pub(crate) fn expand(
    out: &mut String,
    block: &Block<'_>,
    label: &str,
    svg: &str,
) {
    let id = Kind::Figure.id(block.name);
    let svg = svg.trim().replace("\n\n", "\n");
    let svg = svg.replace(
        "<svg ",
        &format!("<svg role=\"img\" aria-labelledby=\"{id}-title\" "),
    );
    let svg = match svg.find('>') {
        Some(end) => format!(
            "{}><title id=\"{id}-title\">{}</title>{}",
            &svg[..end],
            escape::html(&block.alt),
            &svg[end + 1..]
        ),
        None => svg,
    };
    let _ = writeln!(
        out,
        "<figure id=\"{id}\" class=\"book-figure\">\n{svg}\n\
         <figcaption><a class=\"caption-label\" href=\"#{id}\">{label}</a>: \
         {}</figcaption>\n</figure>\n",
        escape::html(&block.caption)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{FIGURE, chapter, run, scratch};
    use serde_json::json;

    fn block(text: &str) -> Block<'_> {
        let lines: Vec<&str> = text.lines().collect();
        parse(&lines)
    }

    #[test]
    fn a_block_gives_its_caption_and_alt_with_lines_joined() {
        let b = block(
            "{{#figure heat\ncaption: Rows of\n  weights,\n\tby t.\n\
             alt: A grid.\n}}\nafter\n",
        );
        assert_eq!(b.name, "heat");
        assert_eq!(b.caption, "Rows of weights, by t.");
        assert_eq!(b.alt, "A grid.");
        assert_eq!(b.lines, 6);
        assert!(b.errors.is_empty(), "{:?}", b.errors);
    }

    #[test]
    fn an_indented_block_reads_the_same() {
        let b = block(
            "  {{#figure heat\n  caption: Rows\n    of t.\n  alt: A.\n  }}",
        );
        assert_eq!(
            (b.name, b.caption.as_str(), b.alt.as_str()),
            ("heat", "Rows of t.", "A.")
        );
        assert!(b.errors.is_empty(), "{:?}", b.errors);
    }

    #[test]
    fn a_figure_without_a_caption_or_alt_text_fails() {
        let cases = [
            ("{{#figure heat}}", "no caption and no text alternative"),
            ("{{#figure heat\ncaption: C\n}}", "no text alternative"),
            ("{{#figure heat\nalt: A\n}}", "no caption"),
            ("{{#figure heat\ncaption:\nalt: A\n}}", "no caption"),
        ];
        for (text, expected) in cases {
            let b = block(text);
            assert_eq!(b.name, "heat");
            assert!(
                b.errors.iter().any(|e| e.contains(expected)),
                "{text}: {:?}",
                b.errors
            );
        }
    }

    #[test]
    fn a_malformed_block_fails_and_says_why() {
        let cases = [
            ("{{#figure heat\ncaption: C\nalt: A\n\nText.", "not closed"),
            ("{{#figure heat\ncaption: C\nalt: A", "not closed"),
            (
                "{{#figure heat\ntitle: T\ncaption: C\nalt: A\n}}",
                "not a field",
            ),
            (
                "{{#figure heat\ncaption: C\ncaption: D\nalt: A\n}}",
                "two `caption:`",
            ),
            (
                "{{#figure heat\n  C\ncaption: C\nalt: A\n}}",
                "continues no field",
            ),
        ];
        for (text, expected) in cases {
            let b = block(text);
            assert!(
                b.errors.iter().any(|e| e.contains(expected)),
                "{text}: {:?}",
                b.errors
            );
        }
    }

    #[test]
    fn a_figure_is_its_svg_with_title_and_numbered_caption() {
        let src = scratch("figure");
        let out = run(&src, vec![chapter("One", "one.md", json!([1]), FIGURE)])
            .unwrap();
        assert_eq!(
            out[0],
            "<figure id=\"figure-heat\" class=\"book-figure\">\n\
             <svg role=\"img\" aria-labelledby=\"figure-heat-title\" \
             viewBox=\"0 0 1 1\"><title id=\"figure-heat-title\">a grid\
             </title>\n<rect/>\n</svg>\n<figcaption><a class=\"caption-label\" \
             href=\"#figure-heat\">Figure 1.1</a>: Weights &lt;by&gt; row\
             </figcaption>\n</figure>\n\n"
        );
    }

    #[test]
    fn both_drawings_of_a_figure_are_labelled_by_its_one_title() {
        let block = Block {
            name: "heat",
            caption: "C".into(),
            alt: "A grid".into(),
            lines: 4,
            errors: Vec::new(),
        };
        let mut out = String::new();
        let two = "<svg class=\"figure-desktop\"><rect/></svg>\n\
                   <svg class=\"figure-phone\"><rect/></svg>";
        expand(&mut out, &block, "Figure 1.1", two);
        let label = "<svg role=\"img\" aria-labelledby=\"figure-heat-title\" ";
        assert_eq!(out.matches(label).count(), 2, "{out}");
        assert_eq!(out.matches("<title").count(), 1, "{out}");
        assert!(
            out.contains("figure-desktop\"><title id=\"figure-heat-title\">")
        );
    }

    #[test]
    fn block_errors_name_the_chapter_and_stop_the_build() {
        let src = scratch("figure-errors");
        let body = "{{#figure heat\ncaption: C\n}}\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("one.md: figure `heat` has no text"));
    }
}
