//! `{{#figure NAME}}`, on a line of its own: the SVG drawn by the figure
//! NAME of the `figures` crate, inline (so it follows the reader's theme),
//! in a `<figure>` with the id `figure-NAME`, a numbered caption and a
//! text alternative.

use crate::escape;
use crate::number::Kind;
use std::fmt::Write as _;

/// A drawn figure with its words.
pub struct FigureData {
    pub caption: String,
    pub alt: String,
    pub svg: String,
}

/// The `<figure>` of figure `name`: the SVG as an image labelled by a
/// `<title>` holding the text alternative, then the numbered caption.
pub(crate) fn expand(
    out: &mut String,
    name: &str,
    label: &str,
    fig: &FigureData,
) {
    let id = Kind::Figure.id(name);
    let svg = fig.svg.trim().replace("\n\n", "\n");
    let svg = svg.replacen(
        "<svg ",
        &format!("<svg role=\"img\" aria-labelledby=\"{id}-title\" "),
        1,
    );
    let svg = match svg.find('>') {
        Some(end) => format!(
            "{}><title id=\"{id}-title\">{}</title>{}",
            &svg[..end],
            escape(&fig.alt),
            &svg[end + 1..]
        ),
        None => svg,
    };
    let _ = writeln!(
        out,
        "<figure id=\"{id}\" class=\"book-figure\">\n{svg}\n\
         <figcaption><a class=\"caption-label\" href=\"#{id}\">{label}</a>: \
         {}</figcaption>\n</figure>\n",
        escape(&fig.caption)
    );
}
