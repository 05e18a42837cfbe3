//! The rank of a kernel's Gram matrix as the number of points grows: the
//! exponential kernel keeps gaining rank, a p-dimensional feature map stops
//! at p. Data from `listings::m3::delete_softmax::study::rank_study`.

use crate::lines::{Axes, Line, Series, looks, panel, stack};
use crate::style::Width;
use listings::m3::delete_softmax::taylor_dimension;

/// Numerical rank against N, log-log, one line per kernel.
pub fn kernel_rank(w: Width) -> String {
    let study = listings::m3::delete_softmax::study::chapter_rank_study();
    let line = |name: String, style, f: &dyn Fn(&_) -> usize| Line {
        name,
        style,
        points: study
            .rows
            .iter()
            .map(|r| (r.n as f64, f(r) as f64))
            .collect(),
    };
    let p2 = taylor_dimension(study.d, 2);
    let lines = [
        line("exp(xᵀy/√d)".into(), 0, &|r| r.softmax),
        line(
            format!("exp(xᵀy/τ), τ = {}√d", study.hot_tau_over_sqrt_d),
            1,
            &|r| r.softmax_hot,
        ),
        line(format!("Taylor degree 2, p = {p2}"), 4, &|r| r.taylor2),
        line(format!("elu+1, p = d = {}", study.d), 2, &|r| r.elu),
    ];
    let series = looks(&lines);
    let keys: Vec<_> = series.iter().map(Series::key).collect();
    let axes = Axes {
        x: (3.5, 300.0),
        x_log: Some(2),
        y: (1.0, 512.0),
        y_log: 2,
        x_desc: "number of points N",
        y_desc: "numerical rank of the N × N Gram matrix",
    };
    stack(w.px(640), &[(&keys, w.pick(400, 320))], w, |_, area| {
        panel(area, &axes, &series, 7, w);
    })
}
