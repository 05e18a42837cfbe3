//! The timing figure of "Two faces of one computation": every schedule of
//! linear attention timed on the machine that builds the book. The only
//! kind of figure that differs between builds; it says where and when it
//! was measured.

use crate::lines::{Axes, Line, panel};
use crate::style::themeable;
use listings::schedules::{FORMS, measured_timing};
use plotters::prelude::*;

/// Milliseconds per call against N on log-log axes, one line per form,
/// with its fitted slope in the legend and the machine and date below.
pub fn schedules_timing() -> String {
    let study = measured_timing();
    let lines: Vec<Line> = FORMS
        .iter()
        .enumerate()
        .map(|(i, &form)| Line {
            name: format!(
                "{} ({}), slope {:.2}",
                form.name(),
                if form.causal() {
                    "causal"
                } else {
                    "non-causal"
                },
                study.slope(form)
            ),
            style: i,
            points: study
                .curve(form)
                .iter()
                .map(|&(n, s)| (n, s * 1e3))
                .collect(),
        })
        .collect();
    let (x_lo, x_hi) = range(lines.iter().flat_map(|l| &l.points).map(|p| p.0));
    let (y_lo, y_hi) = range(lines.iter().flat_map(|l| &l.points).map(|p| p.1));
    let axes = Axes {
        x: (x_lo / 1.3, x_hi * 1.3),
        x_log: Some(2),
        y: (decade_below(y_lo), 10.0 * decade_above(y_hi)),
        y_log: 10,
        x_desc: "sequence length N",
        y_desc: "milliseconds per call",
    };
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640, 470)).into_drawing_area();
        let (chart, notes) = root.split_vertically(420);
        panel(&chart, &axes, &lines, SeriesLabelPosition::UpperLeft);
        let style = ("sans-serif", 13).into_font().color(&BLACK);
        for (i, line) in study.provenance().lines().enumerate() {
            let at = (16, 8 + 18 * i as i32);
            notes.draw(&Text::new(line, at, &style)).expect(OK);
        }
        root.present().expect(OK);
    }
    themeable(&svg)
}

const OK: &str = "drawing into a string cannot fail";

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// The power of ten at or below x.
fn decade_below(x: f64) -> f64 {
    10f64.powf(x.log10().floor())
}

/// The power of ten at or above x.
fn decade_above(x: f64) -> f64 {
    10f64.powf(x.log10().ceil())
}
