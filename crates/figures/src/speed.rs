//! The figures of the appendix "Where speed comes from": how far each f32
//! schedule strays from an f64 reference as N grows, and the time of the
//! chunkwise form against its chunk size (measured while the book builds).

use crate::lines::{
    Axes, Key, Line, Series, looks, notes, notes_height, panel,
    panel_with_notes, stack,
};
use crate::style::Width;
use listings::appendix::speed::study::{
    chapter_accuracy, measured_chunk_sizes,
};

/// Worst row-relative error of the f32 recurrent and chunkwise forms
/// against the f64 recurrence, against N, on log-log axes.
pub fn speed_accuracy_figure(w: Width) -> String {
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
    let series = looks(&lines);
    let keys: Vec<Key> = series.iter().map(Series::key).collect();
    stack(w.px(640), &[(&keys, w.pick(360, 300))], w, |_, area| {
        panel(area, &axes, &series, w.pick(7, 4), w);
    })
}

/// Milliseconds per call of the f32 chunkwise form against C on log-log
/// axes, with the f32 recurrence as a flat line, and where and when.
pub fn speed_chunk_size_figure(w: Width) -> String {
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
        w.px(640),
        w.pick(360, 300),
        &axes,
        &looks(&lines),
        w.pick(10, 5),
        &study.provenance(),
        w,
    )
}

/// Time against N for the fastest form of each family, softmax and linear
/// attention, at both widths: the whole sequence (prefill) above, one
/// generated token (decode) below, each crossover marked by a vertical
/// line; read from the committed bench file, with where and when.
pub fn speed_crossover_figure(w: Width) -> String {
    use listings::appendix::speed::Crossover;
    use listings::appendix::speed::committed::{CrossoverData, Family, Phase};
    let data = CrossoverData::committed();
    let mut panels = Vec::new();
    for (phase, x_desc, y_desc, scale, x_name) in [
        (
            Phase::Prefill,
            "sequence length N",
            "ms per sequence",
            1e3,
            "N",
        ),
        (
            Phase::Decode,
            "tokens t in the cache, the new one included",
            "µs per generated token",
            1e6,
            "t",
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
        // Each crossover: a short vertical mark through the linear line
        // where the two families meet.
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
        let series = looks(&lines);
        let keys: Vec<Key> = series.iter().map(Series::key).collect();
        let axes = (n_lo / 1.4, n_hi * 1.4, y, x_desc, y_desc);
        panels.push((keys, series, axes));
    }
    let notes_text = format!(
        "measured {} on {}\none thread, f32, fastest form of each family; \
         `{}`",
        data.date, data.machine, data.command
    );
    let width = w.px(640);
    let plot = w.pick(330, 280);
    let mut layout: Vec<(&[Key], u32)> =
        panels.iter().map(|(k, _, _)| (&k[..], plot)).collect();
    layout.push((&[], notes_height(&notes_text, width, w)));
    stack(width, &layout, w, |i, area| {
        let Some((_, series, (x0, x1, y, x_desc, y_desc))) = panels.get(i)
        else {
            notes(area, &notes_text, w);
            return;
        };
        let axes = Axes {
            x: (*x0, *x1),
            x_log: Some(2),
            y: *y,
            y_log: 10,
            x_desc,
            y_desc,
        };
        panel(area, &axes, series, w.pick(9, 5), w);
    })
}
