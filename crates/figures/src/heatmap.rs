//! Heat maps of attention weights.

use crate::style::{themeable, viridis};
use listings::m3::attention::study::WALKTHROUGH_SEED;
use listings::m3::attention::walkthrough;
use listings::ndarray::Array2;
use plotters::prelude::*;

/// The causal attention weights of the running example, as a heat map.
pub fn causal_attention_heatmap() -> String {
    let (_, read) = walkthrough(WALKTHROUGH_SEED);
    weights_heatmap(&read.weights, true)
}

/// Draw `weights` (N, N) with row t = query t and column j = key j. With
/// `causal`, cells above the diagonal are left empty.
pub fn weights_heatmap(weights: &Array2<f64>, causal: bool) -> String {
    let n = weights.nrows();
    let top = weights.iter().cloned().fold(0.0, f64::max).max(1e-12);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (560, 470)).into_drawing_area();
        let (left, right) = root.split_horizontally(470);
        let span = -0.5..n as f64 - 0.5;
        let rows = n as f64 - 0.5..-0.5; // query 0 at the top
        let mut chart = ChartBuilder::on(&left)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(span, rows)
            .expect("drawing into a string cannot fail");
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("key j")
            .y_desc("query t")
            .x_labels(n)
            .y_labels(n)
            .x_label_formatter(&|x| format!("{}", x.round()))
            .y_label_formatter(&|y| format!("{}", y.round()))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .expect("drawing into a string cannot fail");
        let cells = weights
            .indexed_iter()
            .filter(|((t, j), _)| !causal || j <= t);
        chart
            .draw_series(cells.map(|((t, j), &w)| {
                let (x, y) = (j as f64, t as f64);
                Rectangle::new(
                    [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                    viridis(w / top).filled(),
                )
            }))
            .expect("drawing into a string cannot fail");
        colour_bar(&right, top);
        root.present().expect("drawing into a string cannot fail");
    }
    themeable(&svg)
}

/// A vertical bar from 0 to `top` in the viridis map, labelled.
fn colour_bar(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    top: f64,
) {
    let mut bar = ChartBuilder::on(area)
        .margin_top(10)
        .margin_bottom(50)
        .margin_right(10)
        .y_label_area_size(45)
        .build_cartesian_2d(0.0..1.0, 0.0..top)
        .expect("drawing into a string cannot fail");
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(6)
        .y_label_formatter(&|w| format!("{w:.1}"))
        .label_style(("sans-serif", 13))
        .draw()
        .expect("drawing into a string cannot fail");
    let steps = 64;
    bar.draw_series((0..steps).map(|i| {
        let (lo, hi) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
        Rectangle::new(
            [(0.0, lo * top), (1.0, hi * top)],
            viridis((lo + hi) / 2.0).filled(),
        )
    }))
    .expect("drawing into a string cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_heatmap_draws_one_cell_per_visible_pair() {
        let w = Array2::from_shape_fn(
            (5, 5),
            |(t, j)| if j <= t { 0.2 } else { 0.0 },
        );
        let svg = weights_heatmap(&w, true);
        // 15 visible cells of one colour, none for the 10 future ones.
        let cell = format!("fill=\"#{:02X}{:02X}{:02X}\"", 253, 231, 37);
        assert_eq!(svg.matches(&cell).count(), 15);
    }
}
