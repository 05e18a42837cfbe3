//! How well truncated Taylor features reproduce exp(qᵀk), and how many
//! features they need. Data from
//! `listings::m3::delete_softmax::study::taylor_study`.

use crate::lines::{Axes, Line, Series, looks, panel, stack};
use crate::style::Width;
use listings::m3::delete_softmax::study::chapter_taylor_study;

/// Error against degree (top) and feature dimension against degree
/// (bottom), both on a logarithmic y axis, for the output `kernel-taylor`.
pub fn taylor_features(w: Width) -> String {
    let study = chapter_taylor_study();
    let line = |name: String, style, f: &dyn Fn(&_) -> f64| Line {
        name,
        style,
        points: study.rows.iter().map(|r| (r.degree as f64, f(r))).collect(),
    };
    let errors = looks(&[
        line("largest over pairs".into(), 3, &|r| r.max_error),
        line("median over pairs".into(), 1, &|r| r.median_error),
    ]);
    let (d, wide) = (study.d, study.wide_d);
    let sizes = looks(&[
        line(format!("d = {wide}"), 4, &|r| r.wide_dimension as f64),
        line(format!("d = {d}"), 2, &|r| r.dimension as f64),
    ]);
    let keys = |s: &[Series]| s.iter().map(Series::key).collect::<Vec<_>>();
    let (error_keys, size_keys) = (keys(&errors), keys(&sizes));
    let axes = |y, y_desc| Axes {
        x: (-0.5, 12.5),
        x_log: None,
        y,
        y_log: 10,
        x_desc: "degree ℓ",
        y_desc,
    };
    let error_axes = axes((1e-14, 1e4), "relative error of exp(qᵀk)");
    let size_axes = axes((0.5, 1e15), "features p = C(d + ℓ, ℓ)");
    let plot = w.pick(330, 280);
    let panels = [(&error_keys[..], plot), (&size_keys[..], plot)];
    stack(w.px(640), &panels, w, |i, area| {
        let (axes, series) = if i == 0 {
            (&error_axes, &errors)
        } else {
            (&size_axes, &sizes)
        };
        panel(area, axes, series, w.pick(13, 7), w);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_degree_is_l_on_the_axis_and_in_the_feature_count() {
        for w in Width::BOTH {
            let svg = taylor_features(w);
            assert!(svg.contains("degree ℓ"), "{w:?}");
            assert!(svg.contains("C(d + ℓ, ℓ)"), "{w:?}");
            assert!(!svg.contains("C(d + n"), "{w:?}");
        }
    }
}
