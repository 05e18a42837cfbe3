//! Figures of Part II's analytic chapters: crosstalk in the sum rule, the
//! spread of FAVOR+'s estimate, and capacity by feature map and update
//! rule. Data from `listings::paper::capacity`, `listings::paper::feature_maps` and
//! `listings::paper::capacity_sweep`.

use crate::lines::{
    Area, Axes, Key, Keyed, Look, Mark, OK, Series, figure, linear_ticks,
    panel, stack, titled,
};
use crate::style::{
    FAVOR_NARROW, Font, PALETTE, RULES, Width, series_colour, viridis,
};
use listings::paper::capacity::study::crosstalk_study;
use listings::paper::capacity_sweep::PASSES;
use listings::paper::capacity_sweep::study::chapter_curves as capacity_sweep;
use listings::paper::capacity_sweep::study::{MapCurves, NS, THRESHOLD};
use listings::phi::FeatureMap;
use plotters::prelude::*;

/// The legend entries of `series`.
fn keys(series: &[Series]) -> Vec<Key> {
    series.iter().map(Series::key).collect()
}

/// The widths of the crosstalk figure, and its numbers of associations.
const CROSSTALK_D: [usize; 2] = [16, 64];

/// RMS recall error of the sum rule against n, for random unit keys and
/// for keys that are orthonormal while they fit, at two widths d; dashed,
/// the prediction √((n − 1)/d).
pub fn capacity_crosstalk(w: Width) -> String {
    let ns: Vec<usize> = (1..=128).step_by(4).chain([128]).collect();
    let mut series = vec![];
    for (i, &d) in CROSSTALK_D.iter().enumerate() {
        let rows = crosstalk_study(d, &ns, 4);
        let colour = PALETTE[[0, 1][i]];
        let line = |f: &dyn Fn(
            &listings::paper::capacity::study::CrosstalkRow,
        ) -> f64| {
            rows.iter().map(|r| (r.n as f64, f(r))).collect()
        };
        series.push(Series {
            name: format!("random unit keys, d = {d}"),
            look: Look::line(colour, Some(Mark::Circle)),
            points: line(&|r| r.rms_error),
        });
        series.push(Series {
            name: format!("orthonormal while they fit, d = {d}"),
            look: Look::line(PALETTE[[3, 2][i]], Some(Mark::Square)),
            points: line(&|r| r.rms_error_orthonormal),
        });
        series.push(Series {
            name: format!("√((n − 1)/d), d = {d}"),
            look: Look::dashed(colour),
            points: line(&|r| r.predicted),
        });
    }
    let axes = Axes {
        x: (0.0, 130.0),
        x_log: None,
        y: (0.0, 3.0),
        y_log: 0,
        x_desc: "associations stored n",
        y_desc: "RMS relative recall error",
    };
    let keys = keys(&series);
    stack(w.px(640), &[(&keys, w.pick(380, 300))], w, |_, area| {
        panel(area, &axes, &series, w.pick(8, 5), w);
    })
}

/// FAVOR+'s relative spread against r, log-log: measured with independent
/// and with orthogonal random features, and the exact value for the first.
pub fn favor_spread_figure(w: Width) -> String {
    let rows = listings::paper::feature_maps::study::chapter_favor_spread();
    let pick =
        |f: &dyn Fn(&listings::paper::feature_maps::SpreadRow) -> f64| {
            rows.iter().map(|r| (r.r as f64, f(r))).collect()
        };
    let series = [
        Series {
            name: "independent Ω, measured".into(),
            look: Look::line(PALETTE[0], Some(Mark::Circle)),
            points: pick(&|r| r.iid),
        },
        Series {
            name: "independent Ω, exact √(2/r) sinh(‖q+k‖²/2)".into(),
            look: Look::dashed(PALETTE[0]),
            points: pick(&|r| r.exact_iid),
        },
        Series {
            name: "orthogonal Ω, measured".into(),
            look: Look::line(PALETTE[2], Some(Mark::Square)),
            points: pick(&|r| r.orthogonal),
        },
    ];
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    let axes = Axes {
        x: (0.8, 80.0),
        x_log: Some(2),
        y: (lo / 1.25, hi * 1.25),
        y_log: 10,
        x_desc: "random features r (p = 2r)",
        y_desc: "spread of the estimate / exp(qᵀk)",
    };
    let keys = keys(&series);
    stack(w.px(640), &[(&keys, w.pick(360, 300))], w, |_, area| {
        panel(area, &axes, &series, 7, w);
    })
}

/// Colour and marker of a feature map: its colour in every figure of the
/// book, and a marker per kind (circle elu+1, square DPFP, triangle and
/// cross for the two FAVOR+ widths, the narrower in a colour of its own).
fn look(map: FeatureMap) -> (RGBColor, Mark) {
    let colour = series_colour(&map.name()).unwrap_or(PALETTE[4]);
    match map {
        FeatureMap::EluPlusOne => (colour, Mark::Circle),
        FeatureMap::Dpfp(_) => (colour, Mark::Square),
        FeatureMap::Favor(r) if r < 16 => (FAVOR_NARROW, Mark::Triangle),
        FeatureMap::Favor(_) => (colour, Mark::Cross),
    }
}

/// Three panels of RMS recall error against n, one line per feature map:
/// the sum rule, one pass of the delta rule, and the delta rule replayed;
/// one legend above them, the threshold dotted in each.
pub fn capacity_sweep_figure(w: Width) -> String {
    let curves = capacity_sweep();
    let threshold = Series {
        name: format!("threshold {THRESHOLD}"),
        look: Look::dotted(RULES[0]),
        points: vec![(0.0, THRESHOLD), (82.0, THRESHOLD)],
    };
    let lines = |f: &dyn Fn(&MapCurves) -> &Vec<f64>| -> Vec<Series> {
        curves
            .iter()
            .map(|c| {
                let (colour, mark) = look(c.map);
                Series {
                    name: format!("{}, p = {}", c.map.name(), c.p),
                    look: Look::line(colour, Some(mark)),
                    points: NS
                        .iter()
                        .zip(f(c))
                        .map(|(&n, &e)| (n as f64, e))
                        .collect(),
                }
            })
            .chain([threshold.clone()])
            .collect()
    };
    let replay = format!("delta rule, {PASSES} passes");
    let top = |f: &dyn Fn(&MapCurves) -> &Vec<f64>| {
        let max = curves.iter().flat_map(f).fold(0.0_f64, |a, &b| a.max(b));
        (max * 1.1 * 2.0).ceil() / 2.0 // up to the next half
    };
    let sum_top = top(&|c| &c.sum);
    let panels: [(&str, f64, Vec<Series>); 3] = [
        ("sum rule, one pass", sum_top, lines(&|c| &c.sum)),
        ("delta rule, one pass", 1.6, lines(&|c| &c.delta_once)),
        (&replay, 1.6, lines(&|c| &c.delta_replayed)),
    ];
    let keys = keys(&panels[0].2);
    let plot = w.pick(330, 290);
    let layout = [(&keys[..], plot), (&[][..], plot), (&[][..], plot)];
    stack(w.px(640), &layout, w, |i, area| {
        let (title, y_max, series) = &panels[i];
        let area = titled(area, title, w);
        let axes = Axes {
            x: (0.0, 82.0),
            x_log: None,
            y: (0.0, *y_max),
            y_log: 0,
            x_desc: "associations stored n",
            y_desc: "RMS recall error",
        };
        panel(&area, &axes, series, w.pick(9, 5), w);
    })
}

/// The paper's Figure 1: DPFP-1 over the plane, one panel per feature, each
/// a heat map of the feature's value; cells where it is zero stay empty.
pub fn dpfp_regions(w: Width) -> String {
    let n = 31;
    let extent = 1.0;
    let grids = listings::paper::feature_maps::dpfp_plane(n, extent)
        .expect("a grid of 31 finite points a side");
    let titles = [
        "x_{1}^{+} x_{2}^{−}",
        "x_{2}^{+} x_{1}^{+}",
        "x_{1}^{−} x_{2}^{+}",
        "x_{2}^{−} x_{1}^{−}",
    ];
    let cell = 2.0 * extent / (n - 1) as f64;
    let side = w.px(620);
    let ticks = linear_ticks((-extent, extent), w.pick(5, 3));
    figure((side, side), w, |root: &Area| {
        for ((panel, grid), title) in
            root.split_evenly((2, 2)).iter().zip(&grids).zip(titles)
        {
            let panel = titled(panel, title, w);
            let span = -extent - cell / 2.0..extent + cell / 2.0;
            let tick = w.units(Font::Tick);
            let label = w.units(Font::Label) / crate::style::SUPERSCRIPT;
            let mut chart = ChartBuilder::on(&panel)
                .margin(w.pick(8, 4))
                .x_label_area_size((tick * 1.5 + label + 12.0) as u32)
                .y_label_area_size((tick * 2.4 + label + 14.0) as u32)
                .build_cartesian_2d(
                    Keyed::new((span.start, span.end), None, ticks.at.clone()),
                    Keyed::new((span.start, span.end), None, ticks.at.clone()),
                )
                .expect(OK);
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc("x_{1}")
                .y_desc("x_{2}")
                .x_labels(ticks.at.len())
                .y_labels(ticks.at.len())
                .x_label_formatter(&|v| ticks.label(*v))
                .y_label_formatter(&|v| ticks.label(*v))
                .label_style(("sans-serif", w.font(Font::Tick)))
                .axis_desc_style(("sans-serif", w.font(Font::Label)))
                .draw()
                .expect(OK);
            let at =
                |i: usize| extent * (2.0 * i as f64 / (n - 1) as f64 - 1.0);
            chart
                .draw_series(
                    grid.indexed_iter().filter(|(_, f)| **f > 0.0).map(
                        |((i, j), &f)| {
                            let (x, y) = (at(j), at(n - 1 - i));
                            Rectangle::new(
                                [
                                    (x - cell / 2.0, y - cell / 2.0),
                                    (x + cell / 2.0, y + cell / 2.0),
                                ],
                                viridis(f / (extent * extent)).filled(),
                            )
                        },
                    ),
                )
                .expect(OK);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_widths_of_favor_in_one_figure_differ_in_colour_and_marker() {
        let (narrow, wide) =
            (look(FeatureMap::Favor(4)), look(FeatureMap::Favor(16)));
        assert_ne!(narrow.0, wide.0);
        assert_ne!(narrow.1, wide.1);
        // The wider keeps FAVOR+'s colour of every other figure.
        assert_eq!(Some(wide.0), series_colour("favor-64"));
    }
}
