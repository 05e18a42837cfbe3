//! Line charts: colours, dashes and markers that read on light and dark
//! pages and in grey; ticks chosen for the axis (logarithmic axes labelled
//! at every power, or at 1, 2 and 5 times a power when they span little,
//! in `ticks.rs`);
//! legends in a band of their own, above the plot, so that they never
//! cover a point or a line; and each drawn for the desktop or the phone.

use crate::style::{Font, LEGEND_FAMILY, PALETTE, Width, series_colour};
use plotters::coord::Shift;
use plotters::prelude::*;

pub use crate::ticks::linear_ticks;
use crate::ticks::{Ticks, ticks_of};

/// A drawing area of an SVG being drawn.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub const OK: &str = "drawing into a string cannot fail";

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    /// A guide or the paper's runs.
    Dashed,
    /// A threshold.
    Dotted,
}

/// The marker at each point of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Circle,
    Square,
    Triangle,
    Cross,
    /// A point below the axis, drawn on its floor: a triangle pointing down.
    Below,
}

impl Mark {
    /// The markers in turn, so series differ in grey too.
    pub const TURN: [Mark; 4] =
        [Mark::Circle, Mark::Square, Mark::Triangle, Mark::Cross];
}

/// How a series looks, in the plot and in its legend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    pub colour: RGBColor,
    pub dash: Dash,
    pub mark: Option<Mark>,
    /// Line width; 0 for markers alone.
    pub stroke: u32,
    /// 1 for a series; less for a guide drawn in the text colour.
    pub opacity: f64,
}

impl Look {
    /// A solid line 2 wide with marker `mark`.
    pub fn line(colour: RGBColor, mark: Option<Mark>) -> Look {
        Look {
            colour,
            dash: Dash::Solid,
            mark,
            stroke: 2,
            opacity: 1.0,
        }
    }

    /// A dashed line 2 wide, no markers.
    pub fn dashed(colour: RGBColor) -> Look {
        Look {
            dash: Dash::Dashed,
            ..Look::line(colour, None)
        }
    }

    /// A dotted line 2 wide, no markers: thick enough to read on every
    /// theme's page.
    pub fn dotted(colour: RGBColor) -> Look {
        Look {
            dash: Dash::Dotted,
            ..Look::line(colour, None)
        }
    }
}

/// One series of a chart: its legend entry, its look and its points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub look: Look,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// Its legend entry.
    pub fn key(&self) -> Key {
        Key {
            label: self.name.clone(),
            look: self.look,
        }
    }
}

/// A legend entry: a label beside a swatch of the series' look.
#[derive(Debug, Clone)]
pub struct Key {
    pub label: String,
    pub look: Look,
}

/// One series of a line chart, by number: its legend, its colour and
/// marker (an index into [`PALETTE`] and [`Mark::TURN`]), and its points.
pub struct Line {
    pub name: String,
    pub style: usize,
    pub points: Vec<(f64, f64)>,
}

/// The looks of numbered lines. Lines named after a feature map or a rule
/// take its colour, the same in every figure, when that tells every line
/// apart; otherwise (two widths of one map, say) all take their number's.
pub fn looks(lines: &[Line]) -> Vec<Series> {
    let named: Vec<Option<RGBColor>> =
        lines.iter().map(|l| series_colour(&l.name)).collect();
    let distinct = named.iter().enumerate().all(|(i, c)| {
        c.is_some_and(|c| named[..i].iter().all(|d| *d != Some(c)))
    });
    lines
        .iter()
        .zip(named)
        .map(|(line, name)| {
            let colour = match name {
                Some(c) if distinct => c,
                _ => PALETTE[line.style % PALETTE.len()],
            };
            let mark = Mark::TURN[line.style % Mark::TURN.len()];
            Series {
                name: line.name.clone(),
                look: Look::line(colour, Some(mark)),
                points: line.points.clone(),
            }
        })
        .collect()
}

/// The axes of a panel: the range of each; for a logarithmic axis its
/// base (x: `None` is linear; y: 0 is linear); and their labels.
pub struct Axes<'s> {
    pub x: (f64, f64),
    pub x_log: Option<u32>,
    pub y: (f64, f64),
    pub y_log: u32,
    pub x_desc: &'s str,
    pub y_desc: &'s str,
}

/// An estimate of the width of `text` in SVG units at `units` font size
/// (sans-serif averages about half an em a character; a little more keeps
/// the estimate safe).
pub fn text_width(text: &str, units: f64) -> f64 {
    let raised = text.chars().any(|c| "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺".contains(c));
    let size = if raised {
        units / crate::style::SUPERSCRIPT
    } else {
        units
    };
    text.chars().count() as f64 * 0.58 * size
}

/// An axis with its ticks: linear or logarithmic, labelled where
/// [`Ticks`](crate::ticks::Ticks) says (plotters' own logarithmic ticks start at the first
/// power inside the range and skip what lies below it).
pub struct Keyed {
    scale: Scale,
    at: Vec<f64>,
}

enum Scale {
    Linear(plotters::coord::types::RangedCoordf64),
    Log(plotters::coord::combinators::LogCoord<f64>),
}

impl Keyed {
    /// An axis over `range`, logarithmic of `base` or linear, with ticks
    /// at `at`.
    pub fn new(range: (f64, f64), log: Option<u32>, at: Vec<f64>) -> Keyed {
        let scale = match log {
            Some(base) => Scale::Log(
                (range.0..range.1).log_scale().base(base as f64).into(),
            ),
            None => Scale::Linear((range.0..range.1).into()),
        };
        Keyed { scale, at }
    }
}

impl Ranged for Keyed {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        match &self.scale {
            Scale::Linear(s) => s.map(value, limit),
            Scale::Log(s) => s.map(value, limit),
        }
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(
        &self,
        hint: Hint,
    ) -> Vec<f64> {
        // Bold lines and labels at the ticks; no light lines.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.at.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        match &self.scale {
            Scale::Linear(s) => s.range(),
            Scale::Log(s) => s.range(),
        }
    }
}

/// A panel of series on the axes, with ticks and their labels, sized for
/// `w`, with at most `x_ticks` ticks on the x axis (the y axis: as many
/// as fit its height).
pub fn panel(
    area: &Area,
    axes: &Axes,
    series: &[Series],
    x_ticks: usize,
    w: Width,
) {
    let tick = w.units(Font::Tick);
    let height = area.dim_in_pixel().1 as f64;
    let y_max = ((height - 60.0) / (2.4 * tick)).floor().clamp(2.0, 10.0);
    let y_log = (axes.y_log > 0).then_some(axes.y_log);
    let x_ticks = ticks_of(axes.x, axes.x_log, x_ticks);
    let y_ticks = ticks_of(axes.y, y_log, y_max as usize);
    let widest = y_ticks
        .labels
        .iter()
        .map(|l| text_width(l, tick))
        .fold(0.0, f64::max);
    let label = w.units(Font::Label);
    let margin = w.pick(12, 8);
    let mut chart = ChartBuilder::on(area)
        .margin(margin)
        .margin_left(4)
        .margin_right(margin.max(overhang(axes, &x_ticks, tick)))
        .x_label_area_size((tick * 1.5 + label + 16.0) as u32)
        .y_label_area_size((widest + label + 22.0) as u32)
        .build_cartesian_2d(
            Keyed::new(axes.x, axes.x_log, x_ticks.at.clone()),
            Keyed::new(axes.y, y_log, y_ticks.at.clone()),
        )
        .expect(OK);
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_labels(x_ticks.at.len().max(1))
        .y_labels(y_ticks.at.len().max(1))
        .x_label_formatter(&|v| x_ticks.label(*v))
        .y_label_formatter(&|v| y_ticks.label(*v))
        .label_style(("sans-serif", w.font(Font::Tick)))
        .axis_desc_style(("sans-serif", w.font(Font::Label)))
        .draw()
        .expect(OK);
    draw_all(&mut chart, series, w);
}

/// How far the last x tick's label reaches past the right end of the
/// axis, when that tick stands at the end (within 5% of the range): half
/// its width, which a margin narrower than that would clip.
fn overhang(axes: &Axes, ticks: &Ticks, units: f64) -> u32 {
    let (Some(&at), Some(text)) = (ticks.at.last(), ticks.labels.last()) else {
        return 0;
    };
    let place = |v: f64| match axes.x_log {
        Some(_) => v.ln(),
        None => v,
    };
    let (lo, hi) = (place(axes.x.0), place(axes.x.1));
    if (hi - place(at)) > 0.05 * (hi - lo) {
        return 0;
    }
    (text_width(text, units) / 2.0).ceil() as u32 + 2
}

fn draw_all<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    series: &[Series],
    w: Width,
) where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for s in series {
        draw_series(chart, s, w);
    }
}

/// The on and off lengths of a dashed or dotted line.
fn dashes(dash: Dash) -> Option<(u32, u32)> {
    match dash {
        Dash::Solid => None,
        Dash::Dashed => Some((7, 4)),
        Dash::Dotted => Some((3, 3)),
    }
}

/// Draw one series: its line (solid, dashed or dotted) and its markers.
pub fn draw_series<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    s: &Series,
    w: Width,
) where
    CT: CoordTranslate<From = (f64, f64)>,
{
    let look = s.look;
    let style = look.colour.mix(look.opacity).stroke_width(look.stroke);
    let points = s.points.iter().copied();
    if look.stroke > 0 {
        match dashes(look.dash) {
            None => chart.draw_series(LineSeries::new(points, style)),
            Some((on, off)) => {
                chart.draw_series(DashedLineSeries::new(points, on, off, style))
            }
        }
        .expect(OK);
    }
    if let Some(mark) = look.mark {
        draw_marks(chart, &s.points, mark, w.pick(4, 3), look.colour);
    }
}

/// Draw `mark` at each of `points` in `colour`.
fn draw_marks<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    points: &[(f64, f64)],
    mark: Mark,
    size: i32,
    colour: RGBColor,
) where
    CT: CoordTranslate<From = (f64, f64)>,
{
    let fill = colour.filled();
    let at = points.iter().copied();
    match mark {
        Mark::Circle => {
            chart.draw_series(at.map(|p| Circle::new(p, size, fill)))
        }
        Mark::Square => chart.draw_series(at.map(|p| {
            EmptyElement::at(p)
                + Rectangle::new([(-size, -size), (size, size)], fill)
        })),
        Mark::Triangle => chart
            .draw_series(at.map(|p| TriangleMarker::new(p, size + 1, fill))),
        Mark::Cross => chart.draw_series(
            at.map(|p| Cross::new(p, size + 1, colour.stroke_width(2))),
        ),
        Mark::Below => chart.draw_series(
            at.map(|p| EmptyElement::at(p) + Polygon::new(below(size), fill)),
        ),
    }
    .expect(OK);
}

/// The corners of a triangle pointing down, around the origin.
fn below(size: i32) -> Vec<(i32, i32)> {
    vec![(-size - 1, -size), (size + 1, -size), (0, size + 1)]
}

/// Draw `mark` at the pixel `p` of `area` in `colour`.
fn draw_mark(
    area: &Area,
    p: (i32, i32),
    mark: Mark,
    size: i32,
    colour: RGBColor,
) {
    let fill = colour.filled();
    let (x, y) = p;
    match mark {
        Mark::Circle => area.draw(&Circle::new(p, size, fill)),
        Mark::Square => area.draw(&Rectangle::new(
            [(x - size, y - size), (x + size, y + size)],
            fill,
        )),
        Mark::Triangle => area.draw(&TriangleMarker::new(p, size + 1, fill)),
        Mark::Cross => {
            area.draw(&Cross::new(p, size + 1, colour.stroke_width(2)))
        }
        Mark::Below => area.draw(&Polygon::new(
            below(size)
                .into_iter()
                .map(|(a, b)| (x + a, y + b))
                .collect::<Vec<_>>(),
            fill,
        )),
    }
    .expect(OK);
}

/// Draw `title` centred in a band at the top of `area` and return the area
/// below it.
pub fn titled<'a>(area: &Area<'a>, title: &str, w: Width) -> Area<'a> {
    let units = w.units(Font::Title);
    let raised = title.contains("_{") || title.contains("^{");
    let band = (units
        / if raised {
            crate::style::SUPERSCRIPT
        } else {
            1.0
        }
        + 12.0) as u32;
    let (top, rest) = area.split_vertically(band);
    let font = ("sans-serif", w.font(Font::Title))
        .into_font()
        .color(&BLACK)
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Center,
        ));
    let middle = (top.dim_in_pixel().0 as i32 / 2, band as i32 / 2 + 2);
    top.draw(&Text::new(title.to_string(), middle, font))
        .expect(OK);
    rest
}

/// Rows of a legend's entries laid out across `width`: the number of
/// columns and of rows.
fn legend_grid(keys: &[Key], width: u32, w: Width) -> (usize, usize) {
    let tick = w.units(Font::Tick);
    let widest = keys
        .iter()
        .map(|k| SWATCH + 8.0 + text_width(&k.label, tick) + 18.0)
        .fold(0.0, f64::max);
    let columns = ((width as f64 - 2.0 * LEGEND_INSET) / widest.max(1.0))
        .floor()
        .clamp(1.0, keys.len().max(1) as f64) as usize;
    (columns, keys.len().div_ceil(columns))
}

/// Width of a legend's swatch.
const SWATCH: f64 = 30.0;
/// Left inset of a legend.
const LEGEND_INSET: f64 = 14.0;

fn row_height(w: Width) -> f64 {
    (w.units(Font::Tick) / crate::style::SUPERSCRIPT + 4.0).round()
}

/// The height of a legend band holding `keys` across `width`.
pub fn legend_height(keys: &[Key], width: u32, w: Width) -> u32 {
    let (_, rows) = legend_grid(keys, width, w);
    (rows as f64 * row_height(w) + 10.0) as u32
}

/// Draw a legend of `keys` in a band at the top of `area` (its entries in
/// as many columns as fit, filled row by row) and return the area below.
pub fn with_legend<'a>(area: &Area<'a>, keys: &[Key], w: Width) -> Area<'a> {
    let width = area.dim_in_pixel().0;
    let height = legend_height(keys, width, w);
    let (band, rest) = area.split_vertically(height);
    let (columns, _) = legend_grid(keys, width, w);
    let column = (width as f64 - 2.0 * LEGEND_INSET) / columns as f64;
    let font = (LEGEND_FAMILY, w.font(Font::Tick))
        .into_font()
        .color(&BLACK)
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ));
    for (i, key) in keys.iter().enumerate() {
        let (row, col) = (i / columns, i % columns);
        let x = (LEGEND_INSET + col as f64 * column) as i32;
        let y = (6.0 + (row as f64 + 0.5) * row_height(w)) as i32;
        swatch(&band, (x, y), key.look, w);
        band.draw(&Text::new(
            key.label.clone(),
            (x + SWATCH as i32 + 8, y),
            font.clone(),
        ))
        .expect(OK);
    }
    rest
}

/// A legend's swatch of `look` starting at `at`: the line with its dashes
/// and the marker in its middle.
fn swatch(area: &Area, at: (i32, i32), look: Look, w: Width) {
    let (x, y) = at;
    let end = x + SWATCH as i32;
    let style = look
        .colour
        .mix(look.opacity)
        .stroke_width(look.stroke.max(1));
    if look.stroke > 0 {
        match dashes(look.dash) {
            None => {
                area.draw(&PathElement::new(vec![(x, y), (end, y)], style))
                    .expect(OK);
            }
            Some((on, off)) => {
                let mut from = x;
                while from < end {
                    let to = (from + on as i32).min(end);
                    area.draw(&PathElement::new(
                        vec![(from, y), (to, y)],
                        style,
                    ))
                    .expect(OK);
                    from = to + off as i32;
                }
            }
        }
    }
    if let Some(mark) = look.mark {
        let middle = (x + SWATCH as i32 / 2, y);
        draw_mark(area, middle, mark, w.pick(4, 3), look.colour);
    }
}

/// `text` broken into lines of at most `width` units at the note size.
pub fn wrap(text: &str, width: u32, w: Width) -> Vec<String> {
    let units = w.units(Font::Note);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let candidate = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if !line.is_empty() && text_width(&candidate, units) > width as f64
            {
                lines.push(std::mem::take(&mut line));
                line = word.to_string();
            } else {
                line = candidate;
            }
        }
        lines.push(line);
    }
    lines
}

/// The height of the notes `text` wrapped to `width`.
pub fn notes_height(text: &str, width: u32, w: Width) -> u32 {
    let lines = wrap(text, width - 32, w).len() as f64;
    (lines * (w.units(Font::Note) + 6.0) + 14.0) as u32
}

/// Small text under a measured figure (where and when), wrapped.
pub fn notes(area: &Area, text: &str, w: Width) {
    let width = area.dim_in_pixel().0;
    let style = ("sans-serif", w.font(Font::Note)).into_font().color(&BLACK);
    let step = w.units(Font::Note) + 6.0;
    for (i, line) in wrap(text, width - 32, w).iter().enumerate() {
        let at = (16, (6.0 + step * i as f64) as i32);
        area.draw(&Text::new(line.as_str(), at, &style)).expect(OK);
    }
}

/// Draw a figure `size` big for `w` with `draw`, and return its themeable
/// SVG.
pub fn figure(size: (u32, u32), w: Width, draw: impl FnOnce(&Area)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root);
        root.present().expect(OK);
    }
    crate::style::themeable_at(&svg, w)
}

/// A figure of panels one above the other, `width` wide for `w`: each
/// panel is (its legend's entries, empty for none; its plot's height);
/// `draw(i, area)` draws panel i's plot into its area.
pub fn stack(
    width: u32,
    panels: &[(&[Key], u32)],
    w: Width,
    draw: impl Fn(usize, &Area),
) -> String {
    let legend = |keys: &[Key]| {
        if keys.is_empty() {
            0
        } else {
            legend_height(keys, width, w)
        }
    };
    let height = panels.iter().map(|(k, h)| legend(k) + h).sum();
    figure((width, height), w, |root| {
        let mut rest = root.clone();
        for (i, (keys, plot)) in panels.iter().enumerate() {
            let (this, below) = rest.split_vertically(legend(keys) + plot);
            let area = if keys.is_empty() {
                this
            } else {
                with_legend(&this, keys, w)
            };
            draw(i, &area);
            rest = below;
        }
    })
}

/// A measured figure: a legend, a panel and, below it, the notes (where
/// and when it was measured), `width` wide for `w` with a plot
/// `plot_height` high. Returns the themeable SVG.
pub fn panel_with_notes(
    width: u32,
    plot_height: u32,
    axes: &Axes,
    series: &[Series],
    x_ticks: usize,
    notes_text: &str,
    w: Width,
) -> String {
    let keys: Vec<Key> = series.iter().map(Series::key).collect();
    let legend = legend_height(&keys, width, w);
    let below = notes_height(notes_text, width, w);
    let size = (width, legend + plot_height + below);
    figure(size, w, |root| {
        let rest = with_legend(root, &keys, w);
        let (chart, under) = rest.split_vertically(plot_height);
        panel(&chart, axes, series, x_ticks, w);
        notes(&under, notes_text, w);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legend_swatch_shows_the_dashes_of_its_line() {
        let count = |look: Look| {
            let key = Key {
                label: "x".into(),
                look,
            };
            let svg = figure((200, 40), Width::Desktop, |root| {
                with_legend(root, &[key], Width::Desktop);
            });
            svg.matches("<polyline").count()
        };
        assert_eq!(count(Look::line(BLACK, None)), 1);
        assert!(count(Look::dashed(BLACK)) >= 3);
        assert!(count(Look::dotted(BLACK)) > count(Look::dashed(BLACK)));
    }

    #[test]
    fn notes_wrap_to_the_width() {
        let lines = wrap("one two three four five six", 60, Width::Phone);
        assert!(lines.len() > 1, "{lines:?}");
        assert_eq!(lines.join(" "), "one two three four five six");
    }
}
