//! How well truncated Taylor features reproduce exp(qᵀk), and how many
//! features they need. Data from
//! `listings::m3::delete_softmax::study::taylor_study`.

use crate::lines::{Axes, Line, panel};
use crate::style::themeable;
use listings::m3::delete_softmax::study::chapter_taylor_study;
use plotters::prelude::*;

/// Error against degree (top) and feature dimension against degree
/// (bottom), both on a logarithmic y axis, for the output `kernel-taylor`.
pub fn taylor_features() -> String {
    let study = chapter_taylor_study();
    let line = |name: String, style, f: &dyn Fn(&_) -> f64| Line {
        name,
        style,
        points: study.rows.iter().map(|r| (r.degree as f64, f(r))).collect(),
    };
    let errors = [
        line("largest over pairs".into(), 3, &|r| r.max_error),
        line("median over pairs".into(), 1, &|r| r.median_error),
    ];
    let (d, wide) = (study.d, study.wide_d);
    let sizes = [
        line(format!("d = {wide}"), 4, &|r| r.wide_dimension as f64),
        line(format!("d = {d}"), 2, &|r| r.dimension as f64),
    ];
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 720)).into_drawing_area();
        let (top, bottom) = root.split_vertically(360);
        let axes = |y, y_desc| Axes {
            x: (-0.5, 12.5),
            x_log: None,
            y,
            y_log: 10,
            x_desc: "degree ℓ",
            y_desc,
        };
        let error_axes = axes((1e-14, 1e4), "relative error of exp(qᵀk)");
        panel(&top, &error_axes, &errors, SeriesLabelPosition::LowerLeft);
        let size_axes = axes((0.5, 1e15), "features p = C(d + n, n)");
        panel(&bottom, &size_axes, &sizes, SeriesLabelPosition::UpperLeft);
        root.present().expect("drawing into a string cannot fail");
    }
    themeable(&svg)
}
