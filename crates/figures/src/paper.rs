//! Figures of Part II's analytic chapters: crosstalk in the sum rule, the
//! spread of FAVOR+'s estimate, and capacity by feature map and update
//! rule. Data from `listings::paper::capacity`, `listings::paper::feature_maps` and
//! `listings::paper::capacity_sweep`.

use crate::lines::{PALETTE, legend, power_label};
use crate::style::{RULES, series_colour, themeable, viridis};
use listings::paper::capacity::study::crosstalk_study;
use listings::paper::capacity_sweep::PASSES;
use listings::paper::capacity_sweep::study::chapter_curves as capacity_sweep;
use listings::paper::capacity_sweep::study::{MapCurves, NS, THRESHOLD};
use listings::phi::FeatureMap;
use plotters::coord::Shift;
use plotters::prelude::*;

const OK: &str = "drawing into a string cannot fail";

/// One series: a legend, a colour, a marker (0 circle, 1 square,
/// 2 triangle, 3 cross, none for a dashed guide) and its points.
struct Series {
    name: String,
    colour: RGBColor,
    marker: Option<usize>,
    points: Vec<(f64, f64)>,
}

/// Draw series into a chart: solid lines with markers, or dashed guides.
fn draw_series<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    series: &[Series],
) where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for s in series {
        let colour = s.colour;
        let dashed = s.marker.is_none();
        let style = colour.stroke_width(2);
        let drawn = match s.marker {
            Some(_) => chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style)),
            None => chart.draw_series(DashedLineSeries::new(
                s.points.iter().copied(),
                6,
                5,
                style,
            )),
        };
        drawn
            .expect(OK)
            .label(s.name.clone())
            .legend(move |(x, y)| {
                // A dashed guide shows two dashes in the legend, a line one.
                let (gap_from, gap_to) =
                    if dashed { (8, 12) } else { (20, 20) };
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (gap_from, 0)], style)
                    + PathElement::new(vec![(gap_to, 0), (20, 0)], style)
            });
        let fill = colour.filled();
        let points = s.points.iter().copied();
        let marked = match s.marker {
            None => continue,
            Some(0) => {
                chart.draw_series(points.map(|p| Circle::new(p, 4, fill)))
            }
            Some(1) => chart.draw_series(points.map(|p| {
                EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], fill)
            })),
            Some(2) => chart
                .draw_series(points.map(|p| TriangleMarker::new(p, 5, fill))),
            Some(_) => chart.draw_series(
                points.map(|p| Cross::new(p, 5, colour.stroke_width(2))),
            ),
        };
        marked.expect(OK);
    }
}

/// A panel with linear axes.
#[allow(clippy::too_many_arguments)]
fn linear_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    x: (f64, f64),
    y: (f64, f64),
    x_desc: &str,
    y_desc: &str,
    title: Option<&str>,
    series: &[Series],
    legend_at: Option<SeriesLabelPosition>,
) {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56);
    if let Some(title) = title {
        builder.caption(title, ("sans-serif", 16));
    }
    let mut chart = builder.build_cartesian_2d(x.0..x.1, y.0..y.1).expect(OK);
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(10)
        .y_labels(8)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .expect(OK);
    draw_series(&mut chart, series);
    if let Some(position) = legend_at {
        legend(&mut chart, position);
    }
}

/// The widths of the crosstalk figure, and its numbers of associations.
const CROSSTALK_D: [usize; 2] = [16, 64];

/// RMS recall error of the sum rule against n, for random unit keys and
/// for keys that are orthonormal while they fit, at two widths d; dashed,
/// the prediction √((n − 1)/d).
pub fn capacity_crosstalk() -> String {
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
            colour,
            marker: Some(0),
            points: line(&|r| r.rms_error),
        });
        series.push(Series {
            name: format!("orthonormal while they fit, d = {d}"),
            colour: PALETTE[[3, 2][i]],
            marker: Some(1),
            points: line(&|r| r.rms_error_orthonormal),
        });
        series.push(Series {
            name: format!("√((n − 1)/d), d = {d}"),
            colour,
            marker: None,
            points: line(&|r| r.predicted),
        });
    }
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 440)).into_drawing_area();
        linear_panel(
            &root,
            (0.0, 130.0),
            (0.0, 3.0),
            "associations stored n",
            "RMS relative recall error",
            None,
            &series,
            Some(SeriesLabelPosition::UpperLeft),
        );
        root.present().expect(OK);
    }
    themeable(&svg)
}

/// FAVOR+'s relative spread against r, log-log: measured with independent
/// and with orthogonal random features, and the exact value for the first.
pub fn favor_spread_figure() -> String {
    let rows = listings::paper::feature_maps::study::chapter_favor_spread();
    let pick =
        |f: &dyn Fn(&listings::paper::feature_maps::SpreadRow) -> f64| {
            rows.iter().map(|r| (r.r as f64, f(r))).collect()
        };
    let series = [
        Series {
            name: "independent Ω, measured".into(),
            colour: PALETTE[0],
            marker: Some(0),
            points: pick(&|r| r.iid),
        },
        Series {
            name: "independent Ω, exact √(2/r) sinh(‖q+k‖²/2)".into(),
            colour: PALETTE[0],
            marker: None,
            points: pick(&|r| r.exact_iid),
        },
        Series {
            name: "orthogonal Ω, measured".into(),
            colour: PALETTE[2],
            marker: Some(1),
            points: pick(&|r| r.orthogonal),
        },
    ];
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 420)).into_drawing_area();
        let x = (0.8..80.0).log_scale().base(2.0);
        let y = (0.01..1.0).log_scale().base(10.0);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(x, y)
            .expect(OK);
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(BLACK.mix(0.12))
            .x_desc("random features r (p = 2r)")
            .y_desc("spread of the estimate / exp(qᵀk)")
            .x_label_formatter(&|v| power_label(2, *v))
            .y_label_formatter(&|v| power_label(10, *v))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .expect(OK);
        draw_series(&mut chart, &series);
        legend(&mut chart, SeriesLabelPosition::LowerLeft);
        root.present().expect(OK);
    }
    themeable(&svg)
}

/// Colour and marker of a feature map: its colour in every figure of the
/// book, and a marker per kind (circle elu+1, square DPFP, triangle and
/// cross for the two FAVOR+ widths).
fn look(map: FeatureMap) -> (RGBColor, usize) {
    let colour = series_colour(&map.name()).unwrap_or(PALETTE[4]);
    let marker = match map {
        FeatureMap::EluPlusOne => 0,
        FeatureMap::Dpfp(_) => 1,
        FeatureMap::Favor(r) if r < 16 => 2,
        FeatureMap::Favor(_) => 3,
    };
    (colour, marker)
}

/// Three panels of RMS recall error against n, one line per feature map:
/// the sum rule, one pass of the delta rule, and the delta rule replayed.
pub fn capacity_sweep_figure() -> String {
    let curves = capacity_sweep();
    let lines = |f: &dyn Fn(&MapCurves) -> &Vec<f64>| -> Vec<Series> {
        // The threshold the output counts held associations by, dashed.
        let threshold = Series {
            name: format!("threshold {THRESHOLD}"),
            colour: RULES[0],
            marker: None,
            points: vec![(0.0, THRESHOLD), (82.0, THRESHOLD)],
        };
        curves
            .iter()
            .map(|c| {
                let (colour, marker) = look(c.map);
                Series {
                    name: format!("{}, p = {}", c.map.name(), c.p),
                    colour,
                    marker: Some(marker),
                    points: NS
                        .iter()
                        .zip(f(c))
                        .map(|(&n, &e)| (n as f64, e))
                        .collect(),
                }
            })
            .chain([threshold])
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
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 1080)).into_drawing_area();
        let areas = root.split_evenly((3, 1));
        for (i, (area, (title, y_max, series))) in
            areas.iter().zip(&panels).enumerate()
        {
            let legend_at = (i == 1).then_some(SeriesLabelPosition::LowerRight);
            linear_panel(
                area,
                (0.0, 82.0),
                (0.0, *y_max),
                "associations stored n",
                "RMS recall error",
                Some(title),
                series,
                legend_at,
            );
        }
        root.present().expect(OK);
    }
    themeable(&svg)
}

/// The paper's Figure 1: DPFP-1 over the plane, one panel per feature, each
/// a heat map of the feature's value; cells where it is zero stay empty.
pub fn dpfp_regions() -> String {
    let n = 31;
    let extent = 1.0;
    let grids = listings::paper::feature_maps::dpfp_plane(n, extent);
    let titles = ["x₁⁺ x₂⁻", "x₂⁺ x₁⁺", "x₁⁻ x₂⁺", "x₂⁻ x₁⁻"];
    let cell = 2.0 * extent / (n - 1) as f64;
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (620, 620)).into_drawing_area();
        for ((panel, grid), title) in
            root.split_evenly((2, 2)).iter().zip(&grids).zip(titles)
        {
            let span = -extent - cell / 2.0..extent + cell / 2.0;
            let mut chart = ChartBuilder::on(panel)
                .caption(title, ("sans-serif", 17))
                .margin(8)
                .x_label_area_size(34)
                .y_label_area_size(40)
                .build_cartesian_2d(span.clone(), span)
                .expect(OK);
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc("x₁")
                .y_desc("x₂")
                .x_labels(5)
                .y_labels(5)
                .label_style(("sans-serif", 12))
                .axis_desc_style(("sans-serif", 14))
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
        root.present().expect(OK);
    }
    themeable(&svg)
}
