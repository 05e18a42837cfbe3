//! The figures of the appendix "Where speed comes from": how far each f32
//! schedule strays from an f64 reference as N grows, and the time of the
//! chunkwise form against its chunk size (measured while the book builds).

use crate::lines::{Axes, Line, panel, panel_with_notes};
use crate::style::themeable;
use listings::appendix::speed::study::{
    chapter_accuracy, measured_chunk_sizes,
};
use plotters::prelude::*;

const OK: &str = "drawing into a string cannot fail";

/// Worst row-relative error of the f32 recurrent and chunkwise forms
/// against the f64 recurrence, against N, on log-log axes.
pub fn speed_accuracy_figure() -> String {
    let study = chapter_accuracy();
    let curve =
        |f: fn(&listings::appendix::speed::study::AccuracyRow) -> f64| {
            study.rows.iter().map(|r| (r.n as f64, f(r))).collect()
        };
    let lines = [
        Line {
            name: "recurrent, f32".to_string(),
            style: 0,
            points: curve(|r| r.recurrent),
        },
        Line {
            name: format!("chunkwise, f32, C = {}", study.chunk),
            style: 1,
            points: curve(|r| r.chunkwise),
        },
    ];
    let n_max = study.rows.last().map_or(1.0, |r| r.n as f64);
    let n_min = study.rows.first().map_or(1.0, |r| r.n as f64);
    let axes = Axes {
        x: (n_min / 1.4, n_max * 1.4),
        x_log: Some(2),
        y: (1e-8, 1e-5),
        y_log: 10,
        x_desc: "sequence length N",
        y_desc: "worst row-relative error",
    };
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 400)).into_drawing_area();
        panel(&root, &axes, &lines, SeriesLabelPosition::UpperLeft);
        root.present().expect(OK);
    }
    themeable(&svg)
}

/// Milliseconds per call of the f32 chunkwise form against C on log-log
/// axes, with the f32 recurrence as a flat line, and where and when.
pub fn speed_chunk_size_figure() -> String {
    let study = measured_chunk_sizes();
    let points: Vec<(f64, f64)> = study
        .chunks
        .iter()
        .map(|&(c, s)| (c as f64, s * 1e3))
        .collect();
    let (c_lo, c_hi) = (points[0].0, points[points.len() - 1].0);
    let recurrent = study.recurrent * 1e3;
    let lines = [
        Line {
            name: "chunkwise, f32".to_string(),
            style: 1,
            points: points.clone(),
        },
        Line {
            name: "recurrent, f32 (no chunks)".to_string(),
            style: 0,
            points: vec![(c_lo, recurrent), (c_hi, recurrent)],
        },
    ];
    let all = points.iter().map(|p| p.1).chain([recurrent]);
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    let axes = Axes {
        x: (c_lo / 1.4, c_hi * 1.4),
        x_log: Some(2),
        y: (
            10f64.powf(lo.log10().floor()),
            10f64.powf(hi.log10().ceil() + 0.5),
        ),
        y_log: 10,
        x_desc: "chunk size C",
        y_desc: "milliseconds per call",
    };
    panel_with_notes(
        (640, 450),
        400,
        &axes,
        &lines,
        SeriesLabelPosition::UpperRight,
        &study.provenance(),
    )
}

/// Time against N for the fastest form of each family, softmax and linear
/// attention, at both widths: the whole sequence (prefill) above, one
/// generated token (decode) below, each crossover marked by a vertical
/// line; read from the committed bench file, with where and when.
pub fn speed_crossover_figure() -> String {
    use listings::appendix::speed::Crossover;
    use listings::appendix::speed::committed::{CrossoverData, Family, Phase};
    let data = CrossoverData::committed();
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 860)).into_drawing_area();
        let (top, rest) = root.split_vertically(380);
        let (bottom, below) = rest.split_vertically(400);
        for (area, phase, x_desc, y_desc, scale, x_name, legend) in [
            (
                &top,
                Phase::Prefill,
                "sequence length N",
                "ms per sequence",
                1e3,
                "N",
                SeriesLabelPosition::UpperLeft,
            ),
            (
                &bottom,
                Phase::Decode,
                "tokens t in the cache, the new one included",
                "µs per generated token",
                1e6,
                "t",
                SeriesLabelPosition::UpperLeft,
            ),
        ] {
            let mut lines = Vec::new();
            let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
            let (mut n_lo, mut n_hi) = (f64::INFINITY, 0.0f64);
            for (d, styles) in data.widths().into_iter().zip([[3, 5], [0, 2]]) {
                for (family, style, name) in [
                    (Family::Softmax, styles[0], "softmax"),
                    (Family::Linear, styles[1], "linear"),
                ] {
                    let points: Vec<(f64, f64)> = data
                        .best(phase, family, d)
                        .iter()
                        .map(|&(n, _, s)| (n as f64, s * scale))
                        .collect();
                    for &(n, y) in &points {
                        (lo, hi) = (lo.min(y), hi.max(y));
                        (n_lo, n_hi) = (n_lo.min(n), n_hi.max(n));
                    }
                    lines.push(Line {
                        name: format!("{name}, d = {d}"),
                        style,
                        points,
                    });
                }
            }
            let y = (
                10f64.powf(lo.log10().floor()),
                10f64.powf(hi.log10().ceil()),
            );
            // Each crossover: a short vertical mark through the linear
            // line where the two families meet.
            for (d, style) in data.widths().into_iter().zip([4, 1]) {
                if let Crossover::At(n) = data.crossover(phase, d) {
                    let linear = data.best(phase, Family::Linear, d);
                    let at = linear.iter().find(|b| b.0 as f64 >= n);
                    let y_at = at.map_or(y.0, |b| b.2 * scale);
                    lines.push(Line {
                        name: format!(
                            "linear faster from {x_name} ≈ {n:.0}, d = {d}"
                        ),
                        style,
                        points: vec![(n, y_at / 6.0), (n, y_at * 6.0)],
                    });
                }
            }
            let axes = Axes {
                x: (n_lo / 1.4, n_hi * 1.4),
                x_log: Some(2),
                y,
                y_log: 10,
                x_desc,
                y_desc,
            };
            panel(area, &axes, &lines, legend);
        }
        let style = ("sans-serif", 13).into_font().color(&BLACK);
        let notes = [
            format!("measured {} on {}", data.date, data.machine),
            format!(
                "one thread, f32, fastest form of each family; `{}`",
                data.command
            ),
        ];
        for (i, line) in notes.iter().enumerate() {
            let at = (16, 16 + 18 * i as i32);
            below.draw(&Text::new(line.as_str(), at, &style)).expect(OK);
        }
        root.present().expect(OK);
    }
    themeable(&svg)
}
