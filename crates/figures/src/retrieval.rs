//! The retrieval chapter's figures, drawn from the committed results of
//! `cargo xtask retrieval` (listings/data/retrieval.tsv) beside the paper's
//! own logged runs (listings/data/paper-retrieval.tsv).

use crate::lines::{PALETTE, power_label};
use crate::style::themeable;
use listings::paper::retrieval::study::{PaperRun, Summary, paper_runs};
use listings::paper::retrieval::sweep::{D, series, setting1_layers};
use listings::paper::retrieval::task::Setting;
use plotters::prelude::*;

const OK: &str = "drawing into a string cannot fail";
/// Losses are drawn no lower than this (a solved run can reach 1e-8).
const FLOOR: f64 = 1e-5;

/// One curve of a panel: (n, best loss) points, a colour, dashed for the
/// paper's runs, thin and grey for a guide (a bound, not a run).
struct Curve {
    label: String,
    colour: RGBColor,
    paper: bool,
    guide: bool,
    points: Vec<(f64, f64)>,
}

/// Text sizes in the SVG's own pixels. The figures are drawn 640 pixels
/// wide, the width the page shows them at, so these are the sizes a
/// reader sees on a desktop: all at least 14.
const TICKS: u32 = 15;
const LEGEND: u32 = 14;
const TITLE: u32 = 17;

fn ours(setting: Setting, layer: &str, label: &str, colour: RGBColor) -> Curve {
    let data = Summary::committed();
    Curve {
        label: label.to_string(),
        colour,
        paper: false,
        guide: false,
        points: series(&data.records, setting, layer)
            .iter()
            .map(|r| (r.n as f64, r.best_loss.max(FLOOR)))
            .collect(),
    }
}

fn papers(
    runs: &[PaperRun],
    setting: Setting,
    layer: &str,
    label: &str,
    colour: RGBColor,
) -> Curve {
    let mut points: Vec<(f64, f64)> = runs
        .iter()
        .filter(|r| r.setting == setting && r.layer == layer)
        // The paper's logs hold NaN where a run diverged: not drawn.
        .filter(|r| r.best_loss.is_finite())
        .map(|r| (r.n as f64, r.best_loss.max(FLOOR)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Curve {
        label: label.to_string(),
        colour,
        paper: true,
        guide: false,
        points,
    }
}

/// A grid of panels, one per title, each with its curves, the solved
/// threshold (loss 10⁻³) as a dotted line, and a legend. Losses run from
/// `FLOOR` to 30, or to a panel's own top; the band above the curves holds
/// the legend.
fn panels(
    size: (u32, u32),
    grid: (usize, usize),
    n_max: f64,
    content: Vec<(String, Vec<Curve>)>,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let areas = root.split_evenly(grid);
        let row = size.1 as f64 / grid.0 as f64;
        for (area, (title, curves)) in areas.iter().zip(&content) {
            let y_top = legend_room(curves, row);
            let y = (FLOOR..y_top).log_scale().base(10.0);
            let mut chart = ChartBuilder::on(area)
                .margin(8)
                .caption(title, ("sans-serif", TITLE))
                .x_label_area_size(40)
                .y_label_area_size(56)
                .build_cartesian_2d(0.0..n_max, y)
                .expect(OK);
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .bold_line_style(BLACK.mix(0.12))
                .x_desc("keys n")
                .y_desc("best loss")
                .x_labels(4)
                .y_labels(5)
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter(&|v| power_label(10, *v))
                .label_style(("sans-serif", TICKS))
                .axis_desc_style(("sans-serif", TICKS))
                .draw()
                .expect(OK);
            let solved = vec![(0.0, 1e-3), (n_max, 1e-3)];
            let line = BLACK.mix(0.6).stroke_width(1);
            chart
                .draw_series(DashedLineSeries::new(solved, 2, 3, line))
                .expect(OK)
                .label("solved: 10⁻³")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], line)
                });
            for c in curves.iter().filter(|c| c.guide) {
                let style = BLACK.mix(0.45).stroke_width(1);
                chart
                    .draw_series(LineSeries::new(
                        c.points.iter().copied(),
                        style,
                    ))
                    .expect(OK)
                    .label(&c.label)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], style)
                    });
            }
            for c in curves.iter().filter(|c| !c.guide) {
                let style = c.colour.stroke_width(2);
                let legend_style = style;
                if c.paper {
                    chart
                        .draw_series(DashedLineSeries::new(
                            c.points.iter().copied(),
                            6,
                            4,
                            style,
                        ))
                        .expect(OK)
                        .label(&c.label)
                        .legend(move |(x, y)| {
                            EmptyElement::at((x, y))
                                + PathElement::new(
                                    vec![(0, 0), (7, 0)],
                                    legend_style,
                                )
                                + PathElement::new(
                                    vec![(12, 0), (20, 0)],
                                    legend_style,
                                )
                        });
                } else {
                    chart
                        .draw_series(LineSeries::new(
                            c.points.iter().copied(),
                            style,
                        ))
                        .expect(OK)
                        .label(&c.label)
                        .legend(move |(x, y)| {
                            EmptyElement::at((x, y))
                                + PathElement::new(
                                    vec![(0, 0), (20, 0)],
                                    legend_style,
                                )
                                + Circle::new((10, 0), 3, legend_style.filled())
                        });
                    let fill = c.colour.filled();
                    chart
                        .draw_series(
                            c.points.iter().map(|&p| Circle::new(p, 3, fill)),
                        )
                        .expect(OK);
                }
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(TRANSPARENT)
                .border_style(BLACK.mix(0.4))
                .label_font(("sans-serif", LEGEND))
                .draw()
                .expect(OK);
        }
        root.present().expect(OK);
    }
    themeable(&svg)
}

/// The top of a panel's loss axis that leaves a band above its highest
/// curve for the legend: the legend's share f of the plot's height must
/// cover the decades above the curves, log(top / high) ≥ f log(top / FLOOR).
fn legend_room(curves: &[Curve], row: f64) -> f64 {
    let high = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(0.5, f64::max);
    // Rows of the legend (the curves and the solved line), in pixels of a
    // plot that is the row less its title and axis labels.
    let legend = (curves.len() + 1) as f64 * (LEGEND as f64 + 5.0) + 16.0;
    let f = legend / (row - 80.0);
    let (h, lo) = (high.log10(), FLOOR.log10());
    10f64.powf((h - f * lo) / (1.0 - f) + 0.3)
}

/// The colour of a feature map, the same in every figure of the book.
pub fn map_colour(layer: &str) -> RGBColor {
    crate::style::series_colour(layer).unwrap_or(PALETTE[4])
}

/// Setting 1: one panel per layer, our best loss against n beside the
/// paper's logged runs (dashed).
pub fn setting1() -> String {
    let runs = paper_runs();
    let content = setting1_layers()
        .into_iter()
        .map(|layer| {
            let name = layer.name();
            let colour = map_colour(&name);
            // The paper's FAVOR+ with as many random features as ours.
            let title = format!("{name}  (p = {})", layer.width(D));
            let curves = vec![
                ours(Setting::Distinct, &name, "ours", colour),
                papers(&runs, Setting::Distinct, &name, "paper's", colour),
            ];
            (title, curves)
        })
        .collect();
    panels((640, 1140), (3, 2), 610.0, content)
}

/// Setting 2: one panel per feature map, the sum rule (ours) and the delta
/// rule (ours, and the paper's dashed where it logged one); then the
/// paper's baseline rule, fwm, with DPFP-1 and with tanh, ours and the
/// paper's, above its floor 1/(2n).
pub fn setting2() -> String {
    let runs = paper_runs();
    let sum = map_colour("sum");
    let delta = map_colour("delta");
    let content = ["elu+1", "dpfp-1", "dpfp-2", "favor-64"]
        .into_iter()
        .map(|phi| {
            let s = phi.to_string();
            let d = format!("{phi}/delta");
            let mut curves = Vec::new();
            if phi != "favor-64" {
                curves.push(ours(Setting::Repeated, &s, "sum", sum));
            }
            curves.push(ours(Setting::Repeated, &d, "delta", delta));
            for (layer, label, colour) in
                [(&s, "paper's sum", sum), (&d, "paper's delta", delta)]
            {
                let c = papers(&runs, Setting::Repeated, layer, label, colour);
                if !c.points.is_empty() {
                    curves.push(c);
                }
            }
            (phi.to_string(), curves)
        })
        .collect::<Vec<_>>();
    let mut content = content;
    // The paper's baseline rule, one panel per feature map, above the
    // floor its layer norm sets.
    let fwm = map_colour("fwm");
    for phi in ["dpfp-1", "tanh"] {
        let layer = format!("{phi}/fwm");
        let floor = Curve {
            label: "floor 1/(2n)".to_string(),
            colour: BLACK,
            paper: false,
            guide: true,
            points: (2..=21)
                .map(|i| (10.0 * i as f64, 0.05 / i as f64))
                .collect(),
        };
        let curves = vec![
            floor,
            ours(Setting::Repeated, &layer, "fwm", fwm),
            papers(&runs, Setting::Repeated, &layer, "paper's fwm", fwm),
        ];
        content.push((format!("{phi}, fwm rule"), curves));
    }
    panels((640, 1140), (3, 2), 210.0, content)
}
