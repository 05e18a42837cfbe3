//! The capacity figure of "The feature map φ": how well n stored
//! associations are read back, by the sum rule that linear attention uses
//! and by the best memory of the same size, for softmax and for each
//! feature map of the sweep in `listings::m3::feature_map::study`.

use crate::lines::{Axes, Line, Series, looks, panel, stack};
use crate::style::Width;
use listings::m3::feature_map::recall::Map;
use listings::m3::feature_map::study::chapter_sweep;

/// Two panels, one above the other, against the number n of stored
/// associations: the median error of the sum rule's reads (softmax: of
/// its reads), and of the best m × p memory's reads.
pub fn feature_map_capacity(w: Width) -> String {
    let sweep = chapter_sweep();
    let name = |map: Map| match map.p(sweep.d) {
        Some(p) => format!("{}, p = {p}", map.name()),
        None => format!("{}, keeps all n keys", map.name()),
    };
    let lines = |best: bool| -> Vec<Line> {
        sweep
            .maps
            .iter()
            .enumerate()
            .filter(|&(_, &map)| !best || map.p(sweep.d).is_some())
            .map(|(i, &map)| Line {
                name: name(map),
                style: i,
                // Reads exact to rounding are drawn at the axis floor.
                points: sweep
                    .curve(map, best)
                    .into_iter()
                    .map(|(n, e)| (n, e.max(FLOOR)))
                    .collect(),
            })
            .collect()
    };
    let (sum_rule, best) = (looks(&lines(false)), looks(&lines(true)));
    let n_max = sweep.rows.last().map_or(2.0, |r| r.n as f64);
    let axes = |y, y_desc| Axes {
        x: (1.5, n_max * 1.4),
        x_log: Some(2),
        y,
        y_log: 10,
        x_desc: "associations stored, n",
        y_desc,
    };
    let lowest = sum_rule
        .iter()
        .flat_map(|l| &l.points)
        .fold(1.0_f64, |lo, p| lo.min(p.1));
    let floor = 10f64.powf(lowest.log10().floor());
    let top_axes = axes((floor, 1e1), "median error, sum rule");
    let bottom_axes = axes((FLOOR, 1e4), "median error, best m × p memory");
    // The second panel's maps are the first's but softmax: one legend.
    let keys: Vec<_> = sum_rule.iter().map(Series::key).collect();
    let plot = w.pick(330, 280);
    stack(w.px(640), &[(&keys, plot), (&[], plot)], w, |i, area| {
        let (axes, series) = if i == 0 {
            (&top_axes, &sum_rule)
        } else {
            (&bottom_axes, &best)
        };
        panel(area, axes, series, w.pick(8, 4), w);
    })
}

/// The bottom of the error axes: errors below it are rounding.
const FLOOR: f64 = 1e-16;
