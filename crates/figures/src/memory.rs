//! The fast-weight memory of the running example as it is written, one
//! outer product per token. Data from
//! `listings::m3::fast_weight_memory::study::memory_trace`.

use crate::style::themeable;
use listings::m3::attention::study::WALKTHROUGH_SEED;
use listings::m3::attention::walkthrough;
use listings::m3::fast_weight_memory::study::memory_trace;
use listings::ndarray::{Array2, Axis};
use listings::paper::delta_rule::study::{REWRITE, rewrite_one_key};
use listings::phi::elu_plus_one;
use plotters::prelude::*;

/// The tokens after which the memory is drawn.
pub const STEPS: [usize; 4] = [1, 2, 3, 12];

/// A diverging colour map on [−1, 1]: blue for negative, a mid grey for
/// zero, red for positive. The grey reads on light and dark pages alike.
pub fn diverging(t: f64) -> RGBColor {
    let (blue, grey, red) = (
        (33.0, 102.0, 172.0),
        (150.0, 150.0, 150.0),
        (202.0, 0.0, 32.0),
    );
    let t = t.clamp(-1.0, 1.0);
    let (from, to, f) = if t < 0.0 {
        (grey, blue, -t)
    } else {
        (grey, red, t)
    };
    let mix = |a: f64, b: f64| (a + f * (b - a)).round() as u8;
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

/// S_t: (m, p) of the running example with φ = elu+1, for each t in
/// [`STEPS`], side by side, each on its own colour scale ±max |S_t|.
pub fn memory_writes() -> String {
    let (qkv, _) = walkthrough(WALKTHROUGH_SEED);
    let trace = memory_trace(&elu_plus_one(&qkv.k), &qkv.v)
        .expect("k and v come from one projection");
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 600)).into_drawing_area();
        let panels = root.split_evenly((2, STEPS.len() / 2));
        for (area, t) in panels.iter().zip(STEPS) {
            let s = &trace[t - 1];
            let top = s.fold(0.0_f64, |m, &x| m.max(x.abs()));
            let title = format!("t = {t}, |entries| ≤ {top:.1}");
            draw_matrix(area, s, top, &title, None);
        }
        root.present().expect("drawing into a string cannot fail");
    }
    themeable(&svg)
}

/// One key rewritten, by each rule: the memory before (six associations
/// on one-hot keys), after the sum rule adds the new value at the key, and
/// after the delta rule replaces it; the key's column is outlined. One
/// colour scale for the three. Data from
/// `listings::paper::delta_rule::study::rewrite_one_key`.
pub fn delta_rewrite() -> String {
    let (m, p, key, seed) = REWRITE;
    let r = rewrite_one_key(m, p, key, seed);
    let top = [&r.before, &r.after_sum, &r.after_delta]
        .iter()
        .flat_map(|s| s.iter())
        .fold(0.0_f64, |a, &x| a.max(x.abs()));
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (720, 300)).into_drawing_area();
        // Before, the value written, then the two memories after.
        let (before, rest) = root.split_horizontally(212);
        let (value, rest) = rest.split_horizontally(84);
        let (sum, delta) = rest.split_horizontally(212);
        draw_matrix(&before, &r.before, top, "before", Some(key));
        let v = r.new_value.view().insert_axis(Axis(1)).to_owned();
        draw_matrix(&value, &v, top, "new v", None);
        let titles = [
            format!("sum rule adds at key {key}"),
            format!("delta rule replaces at {key}"),
        ];
        for ((area, s), title) in [sum, delta]
            .iter()
            .zip([&r.after_sum, &r.after_delta])
            .zip(&titles)
        {
            draw_matrix(area, s, top, title, Some(key));
        }
        root.present().expect("drawing into a string cannot fail");
    }
    themeable(&svg)
}

fn draw_matrix(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    s: &Array2<f64>,
    top: f64,
    title: &str,
    outline: Option<usize>,
) {
    let (m, p) = s.dim();
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(title, ("sans-serif", 14))
        .x_label_area_size(34)
        .y_label_area_size(36)
        .build_cartesian_2d(-0.5..p as f64 - 0.5, m as f64 - 0.5..-0.5)
        .expect("drawing into a string cannot fail");
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("feature")
        .y_desc("value")
        .x_labels(p)
        .y_labels(m)
        .x_label_formatter(&|x| format!("{}", x.round()))
        .y_label_formatter(&|y| format!("{}", y.round()))
        .label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 13))
        .draw()
        .expect("drawing into a string cannot fail");
    chart
        .draw_series(s.indexed_iter().map(|((a, b), &x)| {
            let (x0, y0) = (b as f64, a as f64);
            Rectangle::new(
                [(x0 - 0.5, y0 - 0.5), (x0 + 0.5, y0 + 0.5)],
                diverging(x / top).filled(),
            )
        }))
        .expect("drawing into a string cannot fail");
    if let Some(j) = outline {
        let (x0, x1) = (j as f64 - 0.5, j as f64 + 0.5);
        let (y0, y1) = (-0.5, m as f64 - 0.5);
        chart
            .draw_series([Rectangle::new(
                [(x0, y0), (x1, y1)],
                BLACK.stroke_width(3),
            )])
            .expect("drawing into a string cannot fail");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diverging_map_is_grey_at_zero_and_saturates_at_the_ends() {
        assert_eq!(diverging(0.0), RGBColor(150, 150, 150));
        assert_eq!(diverging(-1.0), RGBColor(33, 102, 172));
        assert_eq!(diverging(1.0), RGBColor(202, 0, 32));
        assert_eq!(diverging(5.0), diverging(1.0));
    }
}
