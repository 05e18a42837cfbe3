//! The second pass, after mdbook-katex: protect the prerendered math from
//! the Markdown parser.
//!
//! mdbook-katex replaces each formula with HTML, and its MathML half keeps
//! the TeX source (`<annotation>`) and symbol names (`<mtext>one_hot</mtext>`)
//! as text. Text between inline HTML tags is still Markdown, so an `_` in
//! one formula can pair with an `_` in the next and turn everything between
//! into emphasis, breaking both formulas; a `\{` loses its backslash. Inside
//! every KaTeX element we write the characters Markdown acts on as HTML
//! character references, which the browser shows unchanged.

/// Escape Markdown's active characters inside every KaTeX element of
/// `content` (from `<span class="katex` to its matching `</span>`).
pub fn guard(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(start) = rest.find("<span class=\"katex") {
        out.push_str(&rest[..start]);
        let end =
            matching_close(&rest[start..]).map_or(rest.len(), |e| start + e);
        for c in rest[start..end].chars() {
            match c {
                '_' => out.push_str("&#95;"),
                '*' => out.push_str("&#42;"),
                '\\' => out.push_str("&#92;"),
                '`' => out.push_str("&#96;"),
                '[' => out.push_str("&#91;"),
                ']' => out.push_str("&#93;"),
                _ => out.push(c),
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The byte just past the `</span>` that closes the `<span` at the start of
/// `html`, counting nested spans.
fn matching_close(html: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < html.len() {
        let here = &html[i..];
        if here.starts_with("<span") {
            depth += 1;
            i += 5;
        } else if here.starts_with("</span>") {
            depth -= 1;
            i += 7;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += here.chars().next().map_or(1, char::len_utf8);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_characters_inside_math_become_references() {
        let html = "a_b <span class=\"katex\"><span><annotation>x_{t} \\{</annotation>\
                    </span></span> c_d";
        let out = guard(html);
        assert_eq!(
            out,
            "a_b <span class=\"katex\"><span><annotation>x&#95;{t} &#92;{\
             </annotation></span></span> c_d"
        );
    }

    #[test]
    fn display_math_and_several_formulas_are_all_guarded() {
        let html = "<span class=\"katex-display\"><span class=\"katex\">*_</span>\
                    </span> and <span class=\"katex\">[`]</span>";
        let out = guard(html);
        assert!(!out.contains('_') && !out.contains('*') && !out.contains('`'));
        assert!(out.contains(" and "));
        assert_eq!(out.matches("</span>").count(), 3);
    }
}
