//! Line charts: colours and markers that read on light and dark pages and
//! in grey, and axis labels for logarithmic scales.

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

pub use crate::style::PALETTE;
use crate::style::series_colour;

/// Unicode superscript digits for an integer exponent: 12 → "¹²".
pub fn superscript(n: i32) -> String {
    const DIGITS: [char; 10] =
        ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits = n.unsigned_abs().to_string();
    let sign = if n < 0 { "⁻" } else { "" };
    let body: String = digits
        .chars()
        .map(|c| DIGITS[c.to_digit(10).expect("a digit") as usize])
        .collect();
    format!("{sign}{body}")
}

/// The label of a power of `base` on a log axis: 1024 → "2¹⁰" for base 2.
/// Values that are not powers of `base` get no label.
pub fn power_label(base: u32, value: f64) -> String {
    let exponent = value.log(base as f64).round();
    let power = (base as f64).powf(exponent);
    if (value / power - 1.0).abs() < 1e-9 {
        format!("{base}{}", superscript(exponent as i32))
    } else {
        String::new()
    }
}

/// One series of a line chart: its legend, its colour and marker (an index
/// into [`PALETTE`]), and its points.
pub struct Line {
    pub name: String,
    pub style: usize,
    pub points: Vec<(f64, f64)>,
}

/// The axes of a panel: the range of each, and for a logarithmic axis the
/// base whose powers are labelled (x: `None`, a linear axis of integers;
/// y: 0, a linear axis labelled in tenths, or hundredths if it is short).
pub struct Axes<'s> {
    pub x: (f64, f64),
    pub x_log: Option<u32>,
    pub y: (f64, f64),
    pub y_log: u32,
    pub x_desc: &'s str,
    pub y_desc: &'s str,
}

/// A panel of lines on a logarithmic y axis, and an x axis that is
/// logarithmic or linear as `axes` says; the legend goes to `position`.
pub fn panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    axes: &Axes,
    lines: &[Line],
    position: SeriesLabelPosition,
) {
    let (x, y) = (axes.x.0..axes.x.1, axes.y.0..axes.y.1);
    if axes.y_log == 0 {
        let base = axes.x_log.expect("a linear y axis goes with a log x axis");
        let x = x.log_scale().base(base as f64);
        let mut chart = frame(area).build_cartesian_2d(x, y).expect(OK);
        let x_label = |v: &f64| format!("{v:.0}");
        mesh(&mut chart, axes, 10, &x_label);
        draw(&mut chart, lines, position);
        return;
    }
    let y = y.log_scale().base(axes.y_log as f64);
    match axes.x_log {
        Some(base) => {
            let x = x.log_scale().base(base as f64);
            let mut chart = frame(area).build_cartesian_2d(x, y).expect(OK);
            let x_label = |v: &f64| power_label(base, *v);
            mesh(&mut chart, axes, 10, &x_label);
            draw(&mut chart, lines, position);
        }
        None => {
            let mut chart = frame(area).build_cartesian_2d(x, y).expect(OK);
            let x_label = |v: &f64| format!("{v:.0}");
            mesh(&mut chart, axes, 14, &x_label);
            draw(&mut chart, lines, position);
        }
    }
}

const OK: &str = "drawing into a string cannot fail";

/// A measured figure: a [`panel`] of `size` with `chart_height` pixels for
/// the chart and, below it, one line of small text per line of `notes`
/// (where and when it was measured). Returns the themeable SVG.
pub fn panel_with_notes(
    size: (u32, u32),
    chart_height: u32,
    axes: &Axes,
    lines: &[Line],
    position: SeriesLabelPosition,
    notes: &str,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let (chart, below) = root.split_vertically(chart_height);
        panel(&chart, axes, lines, position);
        let style = ("sans-serif", 13).into_font().color(&BLACK);
        for (i, line) in notes.lines().enumerate() {
            let at = (16, 8 + 18 * i as i32);
            below.draw(&Text::new(line, at, &style)).expect(OK);
        }
        root.present().expect(OK);
    }
    crate::style::themeable(&svg)
}

fn frame<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(72);
    builder
}

fn mesh<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    axes: &Axes,
    x_labels: usize,
    x_label: &dyn Fn(&f64) -> String,
) where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let y_base = axes.y_log;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_labels(x_labels)
        .y_labels(10)
        .x_label_formatter(x_label)
        .y_label_formatter(&|v| match y_base {
            // A linear axis: tenths, or hundredths on a short one.
            0 if axes.y.1 - axes.y.0 < 0.5 => format!("{v:.2}"),
            0 => format!("{v:.1}"),
            base => power_label(base, *v),
        })
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .expect(OK);
}

fn draw<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    lines: &[Line],
    position: SeriesLabelPosition,
) where
    CT: CoordTranslate<From = (f64, f64)>,
{
    // Series named after a feature map or a rule take its colour, the
    // same in every figure, when that tells every line of the panel
    // apart; otherwise (two widths of one map, say) all take their index.
    let named: Vec<Option<RGBColor>> =
        lines.iter().map(|l| series_colour(&l.name)).collect();
    let distinct = named.iter().enumerate().all(|(i, c)| {
        c.is_some_and(|c| named[..i].iter().all(|d| *d != Some(c)))
    });
    for (line, name) in lines.iter().zip(named) {
        let colour = match name {
            Some(c) if distinct => c,
            _ => PALETTE[line.style % PALETTE.len()],
        };
        series(chart, &line.points, line.style, colour, &line.name);
    }
    legend(chart, position);
}

/// Draw one labelled series: a line in `colour` with marker `i`.
pub fn series<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    points: &[(f64, f64)],
    i: usize,
    colour: RGBColor,
    label: &str,
) where
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart
        .draw_series(LineSeries::new(
            points.iter().copied(),
            colour.stroke_width(2),
        ))
        .expect("drawing into a string cannot fail")
        .label(label)
        .legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
        });
    // Markers tell the series apart in grey too: circle, square, triangle,
    // cross, in turn.
    let (fill, points) = (colour.filled(), points.iter().copied());
    let drawn = match i % 4 {
        0 => chart.draw_series(points.map(|p| Circle::new(p, 4, fill))),
        1 => chart.draw_series(points.map(|p| {
            EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], fill)
        })),
        2 => chart.draw_series(points.map(|p| TriangleMarker::new(p, 5, fill))),
        _ => chart.draw_series(
            points.map(|p| Cross::new(p, 5, colour.stroke_width(2))),
        ),
    };
    drawn.expect("drawing into a string cannot fail");
}

/// The legend, transparent so that it sits on light and dark pages.
pub fn legend<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) where
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(TRANSPARENT)
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()
        .expect("drawing into a string cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_get_superscript_labels_and_others_none() {
        assert_eq!(superscript(0), "⁰");
        assert_eq!(superscript(18), "¹⁸");
        assert_eq!(superscript(-3), "⁻³");
        assert_eq!(power_label(2, 1024.0), "2¹⁰");
        assert_eq!(power_label(10, 1e6), "10⁶");
        assert_eq!(power_label(10, 1.0), "10⁰");
        assert_eq!(power_label(10, 3e6), "");
    }
}
