//! The figure of "After the paper": what each update rule does to a memory
//! that is being edited, from the studies in `listings::after::family`.

use crate::lines::{Axes, Key, Line, Series, looks, panel, stack};
use crate::style::Width;
use listings::after::family::study::{chapter_editing, chapter_fading};
use listings::after::recall::model::Mixer;
use listings::after::recall::study::{PAIRS, WIDTH, committed, mean_accuracy};
use listings::after::recall::zoology_study as z;

/// Two panels: the error of reading the latest value of every key against
/// the number n of keys written (d = 64), and what is left of one
/// association after s later writes (d = 64).
pub fn after_editing(w: Width) -> String {
    let editing = chapter_editing();
    let error_lines: Vec<Line> = editing
        .names
        .iter()
        .enumerate()
        .map(|(r, name)| Line {
            name: name.to_string(),
            style: r,
            points: editing
                .counts
                .iter()
                .enumerate()
                .map(|(i, &n)| (n as f64, editing.mean(r, i)))
                .collect(),
        })
        .collect();
    let [_, fading] = chapter_fading();
    let step = fading.d / 8; // a marker every d/8 writes
    let fade_lines: Vec<Line> = fading
        .names
        .iter()
        .enumerate()
        .map(|(r, name)| Line {
            name: name.to_string(),
            style: r,
            points: fading.signal[r]
                .iter()
                .enumerate()
                .step_by(step)
                .map(|(s, &x)| (s as f64, x.max(FLOOR)))
                .collect(),
        })
        .collect();
    let n_max = *editing.counts.last().expect("counts") as f64;
    let s_max = (fading.signal[0].len() - 1) as f64;
    let top_axes = Axes {
        x: (editing.counts[0] as f64 / 1.3, n_max * 1.3),
        x_log: Some(2),
        y: (0.09, 4.0),
        y_log: 10,
        x_desc: "keys written, n (d = 64)",
        y_desc: "error reading the latest values",
    };
    let bottom_axes = Axes {
        x: (0.0, s_max),
        x_log: None,
        y: (FLOOR, 2.0),
        y_log: 10,
        x_desc: "later writes, s (d = 64)",
        y_desc: "share of the first association left",
    };
    let (errors, fades) = (looks(&error_lines), looks(&fade_lines));
    // The same rules in both panels: one legend above them.
    let keys: Vec<Key> = errors.iter().map(Series::key).collect();
    let plot = w.pick(330, 280);
    stack(w.px(640), &[(&keys, plot), (&[], plot)], w, |i, area| {
        if i == 0 {
            panel(area, &top_axes, &errors, 6, w);
        } else {
            panel(area, &bottom_axes, &fades, w.pick(13, 6), w);
        }
    })
}

/// The bottom of the fading panel's axis.
const FLOOR: f64 = 1e-3;

/// The trained comparison, two panels: the share of test questions each
/// one-layer model answers right against the number of pairs n in the
/// sequence, at width d; and each rule's share minus the sum rule's. Means
/// over the committed runs' seeds (`listings/data/recall.tsv`, made by
/// `cargo xtask recall`).
pub fn after_recall(w: Width) -> String {
    let (_, records) = committed();
    let sum = mean_accuracy(&records, Mixer::Sum);
    let line = |i: usize, mixer: Mixer, minus: Option<&[f64]>| Line {
        name: mixer.name().to_string(),
        style: i,
        points: PAIRS
            .iter()
            .zip(mean_accuracy(&records, mixer))
            .enumerate()
            .map(|(j, (&n, a))| (n as f64, a - minus.map_or(0.0, |m| m[j])))
            .collect(),
    };
    let all: Vec<Line> = Mixer::ALL
        .iter()
        .enumerate()
        .map(|(i, &m)| line(i, m, None))
        .collect();
    let rules: Vec<Line> = Mixer::ALL
        .iter()
        .enumerate()
        .filter(|&(_, &m)| m != Mixer::Softmax)
        .map(|(i, &m)| line(i, m, Some(&sum)))
        .collect();
    let gaps = rules.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (low, high) =
        gaps.fold((0.0f64, 0.0f64), |(lo, hi), g| (lo.min(g), hi.max(g)));
    let x = (
        PAIRS[0] as f64 / 1.3,
        *PAIRS.last().expect("pairs") as f64 * 1.3,
    );
    let x_desc = format!("pairs in the sequence, n (d = {WIDTH})");
    let top_axes = Axes {
        x,
        x_log: Some(2),
        y: (0.0, 1.05),
        y_log: 0,
        x_desc: &x_desc,
        y_desc: "share of questions answered right",
    };
    let pad = 0.1 * (high - low).max(0.05);
    let bottom_axes = Axes {
        x,
        x_log: Some(2),
        y: (low - pad, high + pad),
        y_log: 0,
        x_desc: &x_desc,
        y_desc: "minus the sum rule's share",
    };
    let (all, rules) = (looks(&all), looks(&rules));
    // The bottom panel's rules are the top's but softmax: one legend.
    let keys: Vec<Key> = all.iter().map(Series::key).collect();
    let plot = w.pick(330, 280);
    stack(w.px(640), &[(&keys, plot), (&[], plot)], w, |i, area| {
        if i == 0 {
            panel(area, &top_axes, &all, 6, w);
        } else {
            panel(area, &bottom_axes, &rules, 6, w);
        }
    })
}

/// The recall comparison in Zoology's setting, two panels: the share of
/// test queries each two-layer model answers right against its width d,
/// at the training length and at four times it. Lines join the means over
/// seeds at each model's best learning rate; small markers are the seeds
/// themselves. Each model's points sit a little to the side of its width
/// so that they do not hide each other (`listings/data/mqar.tsv`, made by
/// `cargo xtask mqar`).
pub fn after_mqar(w: Width) -> String {
    let (_, records) = z::committed();
    let side = |i: usize| 1.0 + 0.035 * (i as f64 - 3.0);
    let panel_series = |length: usize| -> (Vec<Series>, Vec<Key>) {
        let means: Vec<Line> = Mixer::ALL
            .iter()
            .enumerate()
            .map(|(i, &m)| Line {
                name: m.name().to_string(),
                style: i,
                points: z::WIDTHS
                    .iter()
                    .map(|&d| {
                        let [mean, _, _] = z::spread(&records, m, d, length);
                        (d as f64 * side(i), mean)
                    })
                    .collect(),
            })
            .collect();
        let mut series = looks(&means);
        let keys: Vec<Key> = series.iter().map(Series::key).collect();
        let seeds: Vec<Series> = series
            .iter()
            .zip(Mixer::ALL)
            .enumerate()
            .map(|(i, (s, m))| {
                let mut look = s.look;
                look.stroke = 0;
                look.opacity = 0.5;
                let points = z::WIDTHS
                    .iter()
                    .flat_map(|&d| {
                        let (_, runs) = z::best(&records, m, d);
                        let x = d as f64 * side(i);
                        runs.into_iter().map(move |r| (x, r.accuracy[length]))
                    })
                    .collect();
                Series {
                    name: s.name.clone(),
                    look,
                    points,
                }
            })
            .collect();
        series.extend(seeds);
        (series, keys)
    };
    let (train, keys) = panel_series(0);
    let (long, _) = panel_series(z::LENGTHS.len() - 1);
    let x = (z::WIDTHS[0] as f64 / 1.4, z::WIDTHS[1] as f64 * 1.4);
    let top_desc =
        format!("width d (tested at the training length {})", z::LEN);
    let longest = z::LEN * z::LENGTHS[z::LENGTHS.len() - 1];
    let bottom_desc = format!("width d (tested at length {longest})");
    let axes = |x_desc| Axes {
        x,
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
            panel(area, &top, &train, 4, w);
        } else {
            panel(area, &bottom, &long, 4, w);
        }
    })
}

/// The rewrite variant beside Zoology's task, at the wider width: the
/// share of questions each two-layer model answers right against the
/// test length, means over seeds at each model's best rate. Top: Zoology's
/// task, every key written once (`listings/data/mqar.tsv`); bottom: the
/// rewrite variant, questions about the keys written twice
/// (`listings/data/mqar-rewrite.tsv`, made by `cargo xtask mqar
/// --rewrite`).
pub fn after_mqar_rewrite(w: Width) -> String {
    use listings::after::recall::rewrite_study as rw;
    let d = rw::WIDTHS[rw::WIDTHS.len() - 1];
    let (_, once) = z::committed();
    let (_, twice) = rw::committed();
    let lengths: Vec<f64> =
        z::LENGTHS.iter().map(|&k| (k * z::LEN) as f64).collect();
    let lines = |value: &dyn Fn(Mixer, usize) -> f64| -> Vec<Series> {
        let lines: Vec<Line> = rw::MIXERS
            .iter()
            .enumerate()
            .map(|(i, &m)| Line {
                name: m.name().to_string(),
                style: i,
                points: lengths
                    .iter()
                    .enumerate()
                    .map(|(j, &x)| (x, value(m, j)))
                    .collect(),
            })
            .collect();
        looks(&lines)
    };
    let top = lines(&|m, j| z::spread(&once, m, d, j)[0]);
    let bottom = lines(&|m, j| rw::means(&twice, m, d).twice[j]);
    let keys: Vec<Key> = top.iter().map(Series::key).collect();
    let x = (lengths[0] / 1.3, lengths[lengths.len() - 1] * 1.3);
    let top_desc = format!("test length (d = {d}; Zoology's task)");
    let bottom_desc =
        format!("test length (d = {d}; rewrite variant, keys written twice)");
    let axes = |x_desc| Axes {
        x,
        x_log: Some(2),
        y: (0.0, 1.05),
        y_log: 0,
        x_desc,
        y_desc: "share of questions answered right",
    };
    let (a, b) = (axes(&top_desc), axes(&bottom_desc));
    let plot = w.pick(330, 280);
    stack(w.px(640), &[(&keys, plot), (&[], plot)], w, |i, area| {
        if i == 0 {
            panel(area, &a, &top, 4, w);
        } else {
            panel(area, &b, &bottom, 4, w);
        }
    })
}
