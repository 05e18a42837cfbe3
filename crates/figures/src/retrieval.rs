//! The retrieval chapter's figures, drawn from the committed results of
//! `cargo xtask retrieval` (listings/data/retrieval.tsv) beside the paper's
//! own logged runs (listings/data/paper-retrieval.tsv).

use crate::lines::{
    Area, Axes, Dash, Key, Look, Mark, Series, figure, legend_height, panel,
    titled, with_legend,
};
use crate::style::{PALETTE, Width};
use listings::paper::retrieval::study::{PaperRun, Summary, paper_runs};
use listings::paper::retrieval::sweep::{D, series, setting1_layers};
use listings::paper::retrieval::task::Setting;
use plotters::prelude::*;

/// The bottom of the loss axis. A solved run can reach 1e-8: a loss below
/// the floor is drawn on it, as a triangle pointing down, and the legend
/// says so.
const FLOOR: f64 = 1e-5;

/// The loss the paper counts a run as solved below.
const SOLVED: f64 = 1e-3;

/// One curve of a panel: (n, best loss) points, a colour, dashed for the
/// paper's runs, thin and grey for a guide (a bound, not a run).
struct Curve {
    colour: RGBColor,
    paper: bool,
    guide: bool,
    points: Vec<(f64, f64)>,
}

fn ours(setting: Setting, layer: &str, colour: RGBColor) -> Curve {
    let data = Summary::committed();
    Curve {
        colour,
        paper: false,
        guide: false,
        points: series(&data.records, setting, layer)
            .iter()
            .map(|r| (r.n as f64, r.best_loss))
            .collect(),
    }
}

fn papers(
    runs: &[PaperRun],
    setting: Setting,
    layer: &str,
    colour: RGBColor,
) -> Curve {
    let mut points: Vec<(f64, f64)> = runs
        .iter()
        .filter(|r| r.setting == setting && r.layer == layer)
        // The paper's logs hold NaN where a run diverged: not drawn.
        .filter(|r| r.best_loss.is_finite())
        .map(|r| (r.n as f64, r.best_loss))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Curve {
        colour,
        paper: true,
        guide: false,
        points,
    }
}

/// The series that draw a curve: its line (through the floor where a
/// loss is below it), our runs' points, and a triangle pointing down at
/// each loss below the floor.
fn drawn(c: &Curve) -> Vec<Series> {
    let clamped = c.points.iter().map(|&(n, l)| (n, l.max(FLOOR))).collect();
    let (dash, stroke, opacity) = match (c.guide, c.paper) {
        (true, _) => (Dash::Solid, 1, 0.55),
        (false, true) => (Dash::Dashed, 2, 1.0),
        (false, false) => (Dash::Solid, 2, 1.0),
    };
    let line = Look {
        colour: c.colour,
        dash,
        mark: None,
        stroke,
        opacity,
    };
    let marks = |mark, keep: &dyn Fn(f64) -> bool| Series {
        name: String::new(),
        look: Look {
            mark: Some(mark),
            stroke: 0,
            ..line
        },
        points: c
            .points
            .iter()
            .filter(|p| keep(p.1))
            .map(|&(n, l)| (n, l.max(FLOOR)))
            .collect(),
    };
    let mut out = vec![Series {
        name: String::new(),
        look: line,
        points: clamped,
    }];
    if !c.guide && !c.paper {
        out.push(marks(Mark::Circle, &|l| l >= FLOOR));
    }
    if !c.guide {
        out.push(marks(Mark::Below, &|l| l < FLOOR));
    }
    out
}

/// The solved threshold: dotted, in the text colour, thick enough to
/// read on a dark page.
fn solved_look() -> Look {
    Look {
        opacity: 0.8,
        ..Look::dotted(BLACK)
    }
}

/// The legend entries every panel shares: the solved threshold, and, if
/// some loss of `content` is below the floor, what one looks like.
fn shared_keys(content: &[(String, Vec<Curve>)]) -> Vec<Key> {
    let mut keys = vec![Key {
        label: "solved: loss < 10⁻³".into(),
        look: solved_look(),
    }];
    let below = content
        .iter()
        .flat_map(|(_, curves)| curves.iter().filter(|c| !c.guide))
        .any(|c| c.points.iter().any(|p| p.1 < FLOOR));
    if below {
        keys.push(Key {
            label: "loss < 10⁻⁵: on the axis".into(),
            look: Look {
                stroke: 0,
                ..Look::line(BLACK, Some(Mark::Below))
            },
        });
    }
    keys
}

/// Panels of best loss against n, one per title, under one legend: on the
/// desktop two a row, on a phone one above the other.
fn panels(
    w: Width,
    keys: &[Key],
    n_max: f64,
    content: Vec<(String, Vec<Curve>)>,
) -> String {
    let width = w.px(640);
    let legend = legend_height(keys, width, w);
    let (rows, columns, row) = match w {
        Width::Desktop => (content.len().div_ceil(2), 2, 360),
        Width::Phone => (content.len(), 1, 260),
    };
    let size = (width, legend + rows as u32 * row);
    figure(size, w, |root: &Area| {
        let rest = with_legend(root, keys, w);
        let areas = rest.split_evenly((rows, columns));
        for (area, (title, curves)) in areas.iter().zip(&content) {
            let area = titled(area, title, w);
            let high = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.1))
                .fold(1.0, f64::max);
            let mut series = vec![Series {
                name: String::new(),
                look: solved_look(),
                points: vec![(0.0, SOLVED), (n_max, SOLVED)],
            }];
            for c in curves.iter().filter(|c| c.guide) {
                series.extend(drawn(c));
            }
            for c in curves.iter().filter(|c| !c.guide) {
                series.extend(drawn(c));
            }
            let axes = Axes {
                x: (0.0, n_max),
                x_log: None,
                y: (FLOOR, 10f64.powf((high * 3.0).log10().ceil())),
                y_log: 10,
                x_desc: "keys n",
                y_desc: "best loss",
            };
            panel(&area, &axes, &series, w.pick(4, 5), w);
        }
    })
}

/// The colour of a feature map, the same in every figure of the book.
pub fn map_colour(layer: &str) -> RGBColor {
    crate::style::series_colour(layer).unwrap_or(PALETTE[4])
}

/// Setting 1: one panel per layer, our best loss against n beside the
/// paper's logged runs (dashed), in the layer's colour.
pub fn setting1(w: Width) -> String {
    let runs = paper_runs();
    let content: Vec<(String, Vec<Curve>)> = setting1_layers()
        .into_iter()
        .map(|layer| {
            let name = layer.name();
            let colour = map_colour(&name);
            // The paper's FAVOR+ with as many random features as ours.
            let title = format!("{name}  (p = {})", layer.width(D));
            let curves = vec![
                ours(Setting::Distinct, &name, colour),
                papers(&runs, Setting::Distinct, &name, colour),
            ];
            (title, curves)
        })
        .collect();
    let mut keys = vec![
        Key {
            label: "ours (one seed)".into(),
            look: Look::line(BLACK, Some(Mark::Circle)),
        },
        Key {
            label: "the paper's".into(),
            look: Look::dashed(BLACK),
        },
    ];
    keys.extend(shared_keys(&content));
    panels(w, &keys, 610.0, content)
}

/// Setting 2: one panel per feature map, the sum rule (ours) and the delta
/// rule (ours, and the paper's dashed where it logged one); then the
/// paper's baseline rule, fwm, with DPFP-1 and with tanh, ours and the
/// paper's, above its floor 1/(2n).
pub fn setting2(w: Width) -> String {
    let runs = paper_runs();
    let sum = map_colour("sum");
    let delta = map_colour("delta");
    let fwm = map_colour("fwm");
    let mut content = ["elu+1", "dpfp-1", "dpfp-2", "favor-64"]
        .into_iter()
        .map(|phi| {
            let s = phi.to_string();
            let d = format!("{phi}/delta");
            let mut curves = Vec::new();
            if phi != "favor-64" {
                curves.push(ours(Setting::Repeated, &s, sum));
            }
            curves.push(ours(Setting::Repeated, &d, delta));
            for (layer, colour) in [(&s, sum), (&d, delta)] {
                let c = papers(&runs, Setting::Repeated, layer, colour);
                if !c.points.is_empty() {
                    curves.push(c);
                }
            }
            (phi.to_string(), curves)
        })
        .collect::<Vec<_>>();
    // The paper's baseline rule, one panel per feature map, above the
    // floor its layer norm sets.
    for phi in ["dpfp-1", "tanh"] {
        let layer = format!("{phi}/fwm");
        let floor = Curve {
            colour: BLACK,
            paper: false,
            guide: true,
            points: (2..=21)
                .map(|i| (10.0 * i as f64, 0.05 / i as f64))
                .collect(),
        };
        let curves = vec![
            floor,
            ours(Setting::Repeated, &layer, fwm),
            papers(&runs, Setting::Repeated, &layer, fwm),
        ];
        content.push((format!("{phi}, fwm rule"), curves));
    }
    let rule = |label: &str, colour| Key {
        label: label.into(),
        look: Look::line(colour, Some(Mark::Circle)),
    };
    let mut keys = vec![
        rule("sum rule (ours)", sum),
        rule("delta rule (ours)", delta),
        rule("fwm rule (ours)", fwm),
        Key {
            label: "the paper's run of each".into(),
            look: Look::dashed(BLACK),
        },
        Key {
            label: "fwm's floor 1/(2n)".into(),
            look: Look {
                stroke: 1,
                opacity: 0.55,
                ..Look::line(BLACK, None)
            },
        },
    ];
    keys.extend(shared_keys(&content));
    panels(w, &keys, 210.0, content)
}
