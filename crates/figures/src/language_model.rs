//! The language-model chapter's validation curves: the median over seeds
//! of each layer that did not diverge, with the lowest and highest seed
//! as thin dotted lines of its colour.

use crate::lines::{Axes, Line, Look, Series, looks, panel, stack};
use crate::style::Width;
use listings::paper::language_model::study::{MIXERS, committed};
use listings::summary::Spread;

/// Validation bits per byte against training steps, from step 100 on.
pub fn lm_curves(w: Width) -> String {
    let (_, records) = committed();
    let mut lines = Vec::new();
    let mut spreads = Vec::new();
    for (i, (name, _)) in MIXERS.iter().enumerate() {
        let runs: Vec<_> = records
            .iter()
            .filter(|r| r.name == *name && r.diverged_at.is_none())
            .collect();
        if runs.is_empty() {
            continue;
        }
        let steps: Vec<usize> = runs[0]
            .curve
            .iter()
            .map(|c| c.0)
            .filter(|&s| s >= 100)
            .collect();
        let at = |s: usize| -> Spread {
            let xs: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.curve.iter().find(|c| c.0 == s))
                .map(|c| c.1)
                .collect();
            Spread::of(&xs)
        };
        let points = |f: &dyn Fn(&Spread) -> f64| -> Vec<(f64, f64)> {
            steps.iter().map(|&s| (s as f64, f(&at(s)))).collect()
        };
        lines.push(Line {
            name: name.to_string(),
            style: i,
            points: points(&|s| s.median),
        });
        spreads.push((points(&|s| s.min), points(&|s| s.max)));
    }
    let medians = looks(&lines);
    let keys: Vec<_> = medians.iter().map(Series::key).collect();
    let mut all = medians.clone();
    for (m, (lo, hi)) in medians.iter().zip(spreads) {
        for points in [lo, hi] {
            all.push(Series {
                name: String::new(),
                look: Look::dotted(m.look.colour),
                points,
            });
        }
    }
    let (lo, hi) = all
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let axes = Axes {
        x: (100.0, 1000.0),
        x_log: None,
        y: ((lo * 10.0).floor() / 10.0, (hi * 10.0).ceil() / 10.0),
        y_log: 0,
        x_desc: "training step",
        y_desc: "validation bits per byte",
    };
    let plot = w.pick(360, 300);
    stack(w.px(640), &[(&keys[..], plot)], w, |_, area| {
        panel(area, &axes, &all, w.pick(10, 5), w);
    })
}
