//! The retrieval chapter's figures, drawn from the committed results of
//! `cargo xtask retrieval` (listings/data/retrieval.tsv).

use crate::lines::{Axes, Line, panel};
use crate::style::themeable;
use listings::paper::retrieval::sweep::{
    Summary, series, setting1_layers, setting2_layers,
};
use listings::paper::retrieval::task::Setting;
use plotters::prelude::*;

/// Final (best) evaluation loss against the number of keys n, one line
/// per layer, on a log scale.
fn loss_vs_keys(setting: Setting, layers: Vec<String>) -> String {
    let data = Summary::committed();
    let lines: Vec<Line> = layers
        .iter()
        .enumerate()
        .map(|(i, name)| Line {
            name: name.clone(),
            style: i,
            points: series(&data.records, setting, name)
                .iter()
                .map(|r| (r.n as f64, r.best_loss.max(1e-6)))
                .collect(),
        })
        .collect();
    let n_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 420)).into_drawing_area();
        let axes = Axes {
            x: (0.0, n_max * 1.05),
            x_log: None,
            // Losses stay above 1e-4: the band below holds the legend.
            y: (1e-6, 1.0),
            y_log: 10,
            x_desc: "number of keys n",
            y_desc: "best evaluation loss",
        };
        panel(&root, &axes, &lines, SeriesLabelPosition::LowerRight);
        root.present().expect("drawing into a string cannot fail");
    }
    themeable(&svg)
}

/// Setting 1: capacity by feature map (sum rule) and softmax.
pub fn setting1() -> String {
    loss_vs_keys(
        Setting::Distinct,
        setting1_layers().iter().map(|l| l.name()).collect(),
    )
}

/// Setting 2: the sum rule against the delta rule.
pub fn setting2() -> String {
    loss_vs_keys(
        Setting::Repeated,
        setting2_layers().iter().map(|l| l.name()).collect(),
    )
}
