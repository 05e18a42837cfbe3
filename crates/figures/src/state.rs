//! The figure of recall against state size in "After the paper": the
//! share of queries each two-layer model answers right against the floats
//! its two layers keep, from `listings::after::recall::
//! zoology_state` (the committed files `mqar.tsv` and `mqar-state.tsv`).

use crate::lines::{
    Axes, Dash, Key, Line, Look, Mark, Series, looks, panel, stack,
};
use crate::style::{PALETTE, Width};
use listings::after::recall::model::Mixer;
use listings::after::recall::zoology::Net;
use listings::after::recall::zoology_state as s;
use listings::after::recall::zoology_study as z;

/// Two panels, at the training length and at four times it: accuracy
/// against state (a logarithmic axis) at each model's best rate, means
/// over seeds. A line per rule through its widths, one for softmax
/// through its widths, a dashed line for the windows at one width, and
/// the hybrids as crosses.
pub fn after_mqar_state(w: Width) -> String {
    let records = s::records();
    let series_at = |i: usize| -> Vec<Series> {
        let n = z::LEN * z::LENGTHS[i];
        let point =
            |net: Net| (s::net_state(net, n) as f64, s::mean(&records, net, i));
        let models = s::models();
        let of = |m: Mixer| -> Vec<(f64, f64)> {
            let nets = models.iter().filter(|net| net.mixers == [m; 2]);
            nets.map(|&net| point(net)).collect()
        };
        let mut lines: Vec<Line> = s::RULES
            .iter()
            .chain([&Mixer::Softmax])
            .enumerate()
            .map(|(j, &m)| Line {
                name: m.name().to_string(),
                style: j,
                points: of(m),
            })
            .collect();
        lines.retain(|l| !l.points.is_empty());
        let mut series = looks(&lines);
        series.push(Series {
            name: format!(
                "window, w = {} to {}, d = {}",
                s::WINDOWS[0],
                s::WINDOWS[s::WINDOWS.len() - 1],
                s::WINDOW_WIDTH
            ),
            look: Look {
                dash: Dash::Dashed,
                ..Look::line(PALETTE[4], Some(Mark::Square))
            },
            points: s::WINDOWS.map(|w| point(s::window(w))).to_vec(),
        });
        series.push(Series {
            name: format!("gated delta + window {}", s::HYBRID_WINDOW),
            look: Look {
                stroke: 0,
                ..Look::line(PALETTE[0], Some(Mark::Cross))
            },
            points: s::HYBRID_WIDTHS.map(|d| point(s::hybrid(d))).to_vec(),
        });
        series
    };
    let (train, long) = (series_at(0), series_at(z::LENGTHS.len() - 1));
    let keys: Vec<Key> = train.iter().map(Series::key).collect();
    let xs = train
        .iter()
        .chain(&long)
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) =
        xs.fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let longest = z::LEN * z::LENGTHS[z::LENGTHS.len() - 1];
    let top_desc = format!("floats of state, both layers (length {})", z::LEN);
    let bottom_desc =
        format!("floats of state, both layers (length {longest})");
    let axes = |x_desc| Axes {
        x: (lo / 1.5, hi * 1.5),
        x_log: Some(2),
        y: (0.0, 1.05),
        y_log: 0,
        x_desc,
        y_desc: "share of queries answered right",
    };
    let (top, bottom) = (axes(&top_desc), axes(&bottom_desc));
    let plot = w.pick(330, 280);
    stack(w.px(640), &[(&keys, plot), (&[], plot)], w, |i, area| {
        if i == 0 {
            panel(area, &top, &train, 6, w);
        } else {
            panel(area, &bottom, &long, 6, w);
        }
    })
}
