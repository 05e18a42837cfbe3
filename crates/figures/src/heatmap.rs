//! Heat maps of attention weights.

use crate::lines::{Keyed, OK, figure, linear_ticks};
use crate::style::{Font, Width, viridis};
use listings::m3::attention::study::WALKTHROUGH_SEED;
use listings::m3::attention::walkthrough;
use listings::ndarray::Array2;
use plotters::prelude::*;

/// The causal attention weights of the running example, as a heat map.
pub fn causal_attention_heatmap(w: Width) -> String {
    let (_, read) = walkthrough(WALKTHROUGH_SEED);
    weights_heatmap(&read.weights, true, w)
}

/// Draw `weights` (N, N) with row t = query t and column j = key j. With
/// `causal`, cells above the diagonal are left empty.
pub fn weights_heatmap(
    weights: &Array2<f64>,
    causal: bool,
    w: Width,
) -> String {
    let n = weights.nrows();
    let top = weights.iter().cloned().fold(0.0, f64::max).max(1e-12);
    let size = (w.px(560), w.pick(470, 340));
    let cells = (0..n).map(|i| i as f64).collect::<Vec<_>>();
    let tick = w.units(Font::Tick);
    let label = w.units(Font::Label);
    figure(size, w, |root| {
        let (left, right) = root.split_horizontally(size.0 - w.pick(90, 74));
        let span = (-0.5, n as f64 - 0.5);
        let rows = (n as f64 - 0.5, -0.5); // query 0 at the top
        let mut chart = ChartBuilder::on(&left)
            .margin(w.pick(10, 4))
            .x_label_area_size((tick * 1.5 + label + 14.0) as u32)
            .y_label_area_size((tick * 1.3 + label + 18.0) as u32)
            .build_cartesian_2d(
                Keyed::new(span, None, cells.clone()),
                Keyed::new(rows, None, cells.clone()),
            )
            .expect(OK);
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("key j")
            .y_desc("query t")
            .x_labels(n)
            .y_labels(n)
            .x_label_formatter(&|x| format!("{}", x.round()))
            .y_label_formatter(&|y| format!("{}", y.round()))
            .label_style(("sans-serif", w.font(Font::Tick)))
            .axis_desc_style(("sans-serif", w.font(Font::Label)))
            .draw()
            .expect(OK);
        let cells = weights
            .indexed_iter()
            .filter(|((t, j), _)| !causal || j <= t);
        chart
            .draw_series(cells.map(|((t, j), &v)| {
                let (x, y) = (j as f64, t as f64);
                Rectangle::new(
                    [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                    viridis(v / top).filled(),
                )
            }))
            .expect(OK);
        colour_bar(&right, top, w);
    })
}

/// A vertical bar from 0 to `top` in the viridis map, labelled.
fn colour_bar(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    top: f64,
    w: Width,
) {
    let ticks = linear_ticks((0.0, top), w.pick(6, 5));
    let mut bar = ChartBuilder::on(area)
        .margin_top(10)
        .margin_bottom(w.pick(50, 44))
        .margin_right(10)
        .y_label_area_size((w.units(Font::Tick) * 2.2 + 12.0) as u32)
        .build_cartesian_2d(
            0.0..1.0,
            Keyed::new((0.0, top), None, ticks.at.clone()),
        )
        .expect(OK);
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(ticks.at.len())
        .y_label_formatter(&|v| ticks.label(*v))
        .label_style(("sans-serif", w.font(Font::Tick)))
        .draw()
        .expect(OK);
    let steps = 64;
    bar.draw_series((0..steps).map(|i| {
        let (lo, hi) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
        Rectangle::new(
            [(0.0, lo * top), (1.0, hi * top)],
            viridis((lo + hi) / 2.0).filled(),
        )
    }))
    .expect(OK);
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
        let svg = weights_heatmap(&w, true, Width::Desktop);
        // 15 visible cells of one colour, none for the 10 future ones.
        let cell = format!("fill=\"#{:02X}{:02X}{:02X}\"", 253, 231, 37);
        assert_eq!(svg.matches(&cell).count(), 15);
    }
}
