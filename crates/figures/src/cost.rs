//! What softmax attention holds and computes as the sequence grows, next to
//! the fixed-size state of linear attention: counts from `listings::m3::cost`.

use crate::lines::{Axes, Line, Series, looks, panel, stack};
use crate::style::Width;
use listings::m3::cost::{
    decode_flops, fixed_state_floats, fixed_state_step_flops, kv_cache_floats,
    score_matrix_floats,
};

/// Width of keys, queries and values (one head), as in the cost tables.
const D: u64 = 64;

/// The lines of the two panels: floats held against N (score matrix, KV
/// cache, fixed state), and FLOPs of one decoding step against t
/// (softmax with a KV cache, fixed state).
fn cost_lines() -> ([Line; 3], [Line; 2]) {
    // From before the fixed step's p + 1 tokens, so the figure shows the
    // decoding lines cross rather than start together.
    let lengths: Vec<u64> = (4..=18).step_by(2).map(|e| 1 << e).collect();
    let line = |name: &str, style, f: &dyn Fn(u64) -> u64| Line {
        name: name.to_string(),
        style,
        points: lengths.iter().map(|&n| (n as f64, f(n) as f64)).collect(),
    };
    let fixed = "fixed S and z, mp + p";
    let held = [
        line("score matrix, N²", 0, &score_matrix_floats),
        line("KV cache, N(d + m)", 1, &|n| kv_cache_floats(n, D, D)),
        line(fixed, 2, &|_| fixed_state_floats(D, D)),
    ];
    let work = [
        line("softmax with KV cache", 1, &|t| decode_flops(t, D, D)),
        line("fixed S and z", 2, &|_| fixed_state_step_flops(D, D)),
    ];
    (held, work)
}

/// Two log-log panels, one above the other: floats held against N, and
/// FLOPs of one decoding step against the position t of the token.
pub fn attention_cost(w: Width) -> String {
    let (held, work) = cost_lines();
    let (held, work) = (looks(&held), looks(&work));
    let keys = |s: &[Series]| s.iter().map(Series::key).collect::<Vec<_>>();
    let (held_keys, work_keys) = (keys(&held), keys(&work));
    let plot = w.pick(320, 270);
    let axes = |y, x_desc, y_desc| Axes {
        x: (10.0, 4.0e5),
        x_log: Some(2),
        y,
        y_log: 10,
        x_desc,
        y_desc,
    };
    let held_axes = axes((1e2, 1e11), "sequence length N", "floats held");
    let work_axes =
        axes((1e3, 1e8), "position t of the decoded token", "FLOPs");
    let panels = [(&held_keys[..], plot), (&work_keys[..], plot)];
    stack(w.px(640), &panels, w, |i, area| {
        let (axes, series) = if i == 0 {
            (&held_axes, &held)
        } else {
            (&work_axes, &work)
        };
        panel(area, axes, series, w.pick(8, 4), w);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use listings::m3::schedules::loglog_slope;

    #[test]
    fn the_cost_figures_lines_have_slopes_two_one_and_zero_and_cross_once() {
        let (held, work) = cost_lines();
        let slopes = |lines: &[Line]| -> Vec<f64> {
            lines.iter().map(|l| loglog_slope(&l.points)).collect()
        };
        // Top: the score matrix N², the cache N, the fixed state flat.
        for (got, want) in slopes(&held).iter().zip([2.0, 1.0, 0.0]) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
        // Bottom: the softmax step t, the fixed step flat ...
        for (got, want) in slopes(&work).iter().zip([1.0, 0.0]) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
        // ... below it at the first points, above from some point on (the
        // lines cross once, between two drawn points), with a gap that
        // widens at every later point.
        let gaps: Vec<f64> = work[0]
            .points
            .iter()
            .zip(&work[1].points)
            .map(|(s, f)| s.1 - f.1)
            .collect();
        let above = gaps.iter().position(|g| *g > 0.0).expect("they cross");
        assert!(above >= 2, "below at more than one point: {gaps:?}");
        assert!(gaps[..above].iter().all(|g| *g < 0.0), "{gaps:?}");
        assert!(gaps[above..].iter().all(|g| *g > 0.0), "{gaps:?}");
        assert!(gaps[above..].windows(2).all(|w| w[1] > w[0]), "{gaps:?}");
    }
}
