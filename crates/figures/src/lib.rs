//! The book's figures. Each one takes data from an experiment in `listings`
//! and draws it as SVG with plotters. `{{#figure NAME}}` in a chapter inlines
//! the SVG, so figures follow the reader's theme: text and axes are drawn in
//! `currentColor`, and colour maps are chosen to read on light and dark pages.

mod heatmap;
mod style;

pub use style::themeable;

/// A named figure: its caption, a text alternative for screen readers, and
/// the function that draws it.
pub struct Figure {
    pub name: &'static str,
    pub caption: &'static str,
    pub alt: &'static str,
    pub render: fn() -> String,
}

/// Every figure the book can show, by name.
pub const ALL: &[Figure] = &[Figure {
    name: "causal-attention-heatmap",
    caption: "Causal softmax attention weights of the running example: \
              row t holds how query t spreads its attention over keys \
              j ≤ t. The empty upper triangle is the future, weight 0.",
    alt: "A 12 by 12 grid of coloured squares filling the lower triangle \
          and the diagonal; the upper triangle is empty. Each row's \
          colours sum to one; early rows are bright on few cells, late \
          rows spread over many.",
    render: heatmap::causal_attention_heatmap,
}];

/// The figure named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Figure> {
    ALL.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_is_one_svg_block_with_no_blank_line() {
        for fig in ALL {
            let svg = (fig.render)();
            assert!(svg.starts_with("<svg"), "{}", fig.name);
            assert!(svg.trim_end().ends_with("</svg>"), "{}", fig.name);
            // A blank line would end the HTML block in Markdown.
            assert!(!svg.contains("\n\n"), "{}", fig.name);
            assert!(!svg.contains('$'), "{}: KaTeX would read a $", fig.name);
            assert!(
                !svg.contains("#000000"),
                "{}: black is not themeable",
                fig.name
            );
            assert!(svg.contains("currentColor"), "{}", fig.name);
        }
    }

    #[test]
    fn figures_are_byte_identical_across_runs() {
        for fig in ALL {
            assert_eq!((fig.render)(), (fig.render)(), "{}", fig.name);
        }
    }

    #[test]
    fn names_are_unique_and_captions_present() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(!a.caption.is_empty() && !a.alt.is_empty());
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }
}
