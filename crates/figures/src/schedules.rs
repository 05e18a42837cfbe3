//! The timing figure of "Two faces of one computation": every schedule of
//! linear attention timed on the machine that builds the book. With the
//! chunk-size figure of Appendix E, one of the two figures that differ
//! between builds; it says where, when and on which clock it was measured.

use crate::lines::{Axes, Line, looks, panel_with_notes};
use crate::style::Width;
use listings::m3::schedules::study::FORMS;
use listings::m3::schedules::study::measured_timing;

/// Milliseconds per call against N on log-log axes, one line per form,
/// with its fitted slope in the legend and the machine and date below.
pub fn schedules_timing(w: Width) -> String {
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
    panel_with_notes(
        w.px(640),
        w.pick(400, 320),
        &axes,
        &looks(&lines),
        w.pick(8, 4),
        &study.provenance(),
        w,
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timing_figure_and_its_output_show_one_run() {
        // The legend's slopes are the ones the output prints, and the notes
        // under the plot are the output's provenance lines.
        let svg = schedules_timing(Width::Desktop);
        let output = listings::outputs::find("schedules-timing").unwrap();
        let printed = (output.run)();
        let lines: Vec<&str> = printed.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("slope of log time"))
            .unwrap();
        let slopes: Vec<&str> = lines[at + 1].split_whitespace().collect();
        assert_eq!(slopes.len(), FORMS.len());
        for (form, slope) in FORMS.iter().zip(slopes) {
            let legend = format!("{} (", form.name());
            let entry = svg.find(&legend).unwrap_or_else(|| panic!("{legend}"));
            let tail = &svg[entry..];
            assert!(
                tail[..tail.find('<').unwrap()]
                    .trim_end()
                    .ends_with(&format!("slope {slope}")),
                "{form:?}: {slope}"
            );
        }
        let study = measured_timing();
        for note in study.provenance().lines() {
            assert!(printed.contains(note), "{note}");
            assert!(svg.contains(&escape(note)), "{note}");
        }
        assert!(svg.contains(study.clock.describe()));
    }

    /// The text as an SVG writes it.
    fn escape(text: &str) -> String {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    }
}
