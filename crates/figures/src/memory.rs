//! The fast-weight memory of the running example as it is written, one
//! outer product per token. Data from
//! `listings::m3::fast_weight_memory::study::memory_trace`.

use crate::lines::{Area, Keyed, OK, figure, titled};
use crate::style::{Font, Width};
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
/// [`STEPS`], two by two, each on its own colour scale ±max |S_t|.
pub fn memory_writes(w: Width) -> String {
    let (qkv, _) = walkthrough(WALKTHROUGH_SEED);
    let trace = memory_trace(&elu_plus_one(&qkv.k), &qkv.v)
        .expect("k and v come from one projection");
    let size = (w.px(640), w.pick(600, 470));
    figure(size, w, |root| {
        let panels = root.split_evenly((2, STEPS.len() / 2));
        for (area, t) in panels.iter().zip(STEPS) {
            let s = &trace[t - 1];
            let top = s.fold(0.0_f64, |m, &x| m.max(x.abs()));
            // On a phone the title takes two lines.
            let titles = match w {
                Width::Desktop => {
                    vec![format!("t = {t}, |entries| ≤ {top:.1}")]
                }
                Width::Phone => {
                    vec![format!("t = {t}"), format!("|entries| ≤ {top:.1}")]
                }
            };
            draw_matrix(area, s, top, &titles, None, w);
        }
    })
}

/// One key rewritten, by each rule: the memory before (six associations
/// on one-hot keys), after the sum rule adds the new value at the key, and
/// after the delta rule replaces it; the key's column is outlined. One
/// colour scale for the three. Data from
/// `listings::paper::delta_rule::study::rewrite_one_key`. On a phone, the
/// before and the value above, the two rules below.
pub fn delta_rewrite(w: Width) -> String {
    let (m, p, key, seed) = REWRITE;
    let r = rewrite_one_key(m, p, key, seed);
    let top = [&r.before, &r.after_sum, &r.after_delta]
        .iter()
        .flat_map(|s| s.iter())
        .fold(0.0_f64, |a, &x| a.max(x.abs()));
    let v = r.new_value.view().insert_axis(Axis(1)).to_owned();
    let size = (w.px(720), w.pick(300, 560));
    let titles: [Vec<String>; 2] = match w {
        Width::Desktop => [
            vec![format!("sum rule adds at key {key}")],
            vec![format!("delta rule replaces at {key}")],
        ],
        Width::Phone => [
            vec!["sum rule".into(), format!("adds at key {key}")],
            vec!["delta rule".into(), format!("replaces at {key}")],
        ],
    };
    figure(size, w, |root: &Area| {
        let (first, second) = match w {
            Width::Desktop => {
                let (before, rest) = root.split_horizontally(212);
                let (value, rest) = rest.split_horizontally(84);
                let (sum, delta) = rest.split_horizontally(212);
                draw_matrix(
                    &before,
                    &r.before,
                    top,
                    &["before".into()],
                    Some(key),
                    w,
                );
                draw_matrix(&value, &v, top, &["new v".into()], None, w);
                (sum, delta)
            }
            Width::Phone => {
                let (upper, lower) = root.split_vertically(size.1 / 2);
                let (before, value) = upper.split_horizontally(250);
                let (value, _) = value.split_horizontally(96);
                draw_matrix(
                    &before,
                    &r.before,
                    top,
                    &["before".into()],
                    Some(key),
                    w,
                );
                draw_matrix(&value, &v, top, &["new v".into()], None, w);
                lower.split_horizontally(size.0 / 2)
            }
        };
        for ((area, s), title) in [first, second]
            .iter()
            .zip([&r.after_sum, &r.after_delta])
            .zip(&titles)
        {
            draw_matrix(area, s, top, title, Some(key), w);
        }
    })
}

fn draw_matrix(
    area: &Area,
    s: &Array2<f64>,
    top: f64,
    titles: &[String],
    outline: Option<usize>,
    w: Width,
) {
    let (m, p) = s.dim();
    let mut area = area.clone();
    for title in titles {
        area = titled(&area, title, w);
    }
    let tick = w.units(Font::Tick);
    let label = w.units(Font::Label);
    let columns: Vec<f64> = (0..p).map(|i| i as f64).collect();
    let rows: Vec<f64> = (0..m).map(|i| i as f64).collect();
    let mut chart = ChartBuilder::on(&area)
        .margin(w.pick(8, 4))
        .x_label_area_size((tick * 1.4 + label + 10.0) as u32)
        .y_label_area_size((tick * 0.8 + label + 16.0) as u32)
        .build_cartesian_2d(
            Keyed::new((-0.5, p as f64 - 0.5), None, columns),
            Keyed::new((m as f64 - 0.5, -0.5), None, rows),
        )
        .expect(OK);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("feature")
        .y_desc("value")
        .x_labels(p)
        .y_labels(m)
        .x_label_formatter(&|x| format!("{}", x.round()))
        .y_label_formatter(&|y| format!("{}", y.round()))
        .label_style(("sans-serif", w.font(Font::Tick)))
        .axis_desc_style(("sans-serif", w.font(Font::Label)))
        .draw()
        .expect(OK);
    chart
        .draw_series(s.indexed_iter().map(|((a, b), &x)| {
            let (x0, y0) = (b as f64, a as f64);
            Rectangle::new(
                [(x0 - 0.5, y0 - 0.5), (x0 + 0.5, y0 + 0.5)],
                diverging(x / top).filled(),
            )
        }))
        .expect(OK);
    if let Some(j) = outline {
        let (x0, x1) = (j as f64 - 0.5, j as f64 + 0.5);
        let (y0, y1) = (-0.5, m as f64 - 0.5);
        chart
            .draw_series([Rectangle::new(
                [(x0, y0), (x1, y1)],
                BLACK.stroke_width(3),
            )])
            .expect(OK);
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
