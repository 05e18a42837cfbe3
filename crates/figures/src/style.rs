//! Colours, text sizes, and the post-processing that lets an SVG follow
//! the page theme and keeps its text legible as the page shows it.

use plotters::style::RGBColor;

/// The widest the page shows a figure, in CSS px: the width of the book's
/// content column on a desktop (mdBook's `--content-max-width`). A figure
/// drawn W units wide is shown min(W, COLUMN) px wide (`theme/book.css`
/// lets it grow to its own width, never past the column).
pub const COLUMN: f64 = 750.0;

/// The width every figure is also drawn at for a phone: the content column
/// of a page 420 px wide. The page shows this drawing instead of the
/// desktop one when its column is narrower than [`PHONE_BELOW`]
/// (`theme/book.css`, a container query on the figure).
pub const PHONE: u32 = 380;

/// The column width, in CSS px, below which the page shows the phone
/// drawing (keep equal to the container query in `theme/book.css`).
pub const PHONE_BELOW: u32 = 620;

/// The smallest text a figure may show, in CSS px at 100% zoom on a
/// desktop; the browser check measures every figure against it.
pub const MIN_TEXT_PX: f64 = 12.0;

/// The smallest text of a phone drawing, as shown in a page 420 px wide
/// (the browser check requires 11 px there).
pub const PHONE_MIN_TEXT_PX: f64 = 11.5;

/// Unicode superscripts (the exponents of log-axis labels, `10⁻³`) are
/// drawn at about this fraction of their text's size, so text holding one
/// is made 1/SUPERSCRIPT larger for its exponent to reach [`MIN_TEXT_PX`].
/// The browser check uses the same fraction, as it does for the sub- and
/// superscripts written `_{…}` and `^{…}` (see [`themeable_at`]).
pub const SUPERSCRIPT: f64 = 0.8;

/// What a figure is drawn for: the desktop column, or a phone's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Desktop,
    Phone,
}

impl Width {
    /// Both drawings, in the order the page holds them.
    pub const BOTH: [Width; 2] = [Width::Desktop, Width::Phone];

    pub fn phone(self) -> bool {
        self == Width::Phone
    }

    /// The drawing's width in SVG units: `desktop` for the desktop one,
    /// [`PHONE`] for the phone one.
    pub fn px(self, desktop: u32) -> u32 {
        match self {
            Width::Desktop => desktop,
            Width::Phone => PHONE,
        }
    }

    /// Pick the desktop or the phone value.
    pub fn pick<T>(self, desktop: T, phone: T) -> T {
        match self {
            Width::Desktop => desktop,
            Width::Phone => phone,
        }
    }

    /// The size of a kind of text, as plotters takes it (plotters writes
    /// font-size = size / 1.24), so that the SVG says `units`.
    pub fn font(self, text: Font) -> f64 {
        let units = match (text, self) {
            (Font::Tick, Width::Desktop) => 12.5,
            (Font::Tick, Width::Phone) => 12.0,
            (Font::Label, Width::Desktop) => 13.0,
            (Font::Label, Width::Phone) => 12.0,
            (Font::Title, Width::Desktop) => 14.0,
            (Font::Title, Width::Phone) => 13.0,
            (Font::Note, Width::Desktop) => 12.5,
            (Font::Note, Width::Phone) => 12.0,
        };
        units * 1.24
    }

    /// The text size in SVG units of a kind of text (see [`Width::font`]).
    pub fn units(self, text: Font) -> f64 {
        self.font(text) / 1.24
    }

    /// The smallest text this drawing may show, in CSS px.
    pub fn min_text(self) -> f64 {
        self.pick(MIN_TEXT_PX, PHONE_MIN_TEXT_PX)
    }

    /// The widest the page shows this drawing, in CSS px.
    pub fn column(self) -> f64 {
        self.pick(COLUMN, PHONE as f64)
    }
}

/// The kinds of text in a figure, by size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Font {
    /// Tick labels and legend entries.
    Tick,
    /// Axis labels and words in a diagram.
    Label,
    /// Panel titles.
    Title,
    /// Notes under a measured figure (where and when).
    Note,
}

/// The font family that marks a legend entry while plotters draws it;
/// [`themeable_at`] turns it into `sans-serif` and `class="legend"`, so the
/// browser check can find every legend entry and compare their sizes.
pub const LEGEND_FAMILY: &str = "book-legend";

/// The font size, in the figure's own units, at which text shows `px` CSS
/// px in the page, for a figure drawn `width` units wide for `at`.
pub fn font_size(width: f64, px: f64, at: Width) -> f64 {
    px * width / width.min(at.column())
}

/// [`themeable_at`] for the desktop drawing.
pub fn themeable(svg: &str) -> String {
    themeable_at(svg, Width::Desktop)
}

/// Plotters draws text and axes in black; the book's pages may be dark.
/// Replace black with `currentColor`, which takes the page's text colour;
/// let the SVG scale to the column width (never wider than drawn) and mark
/// it as the desktop or the phone drawing (`figure-desktop`,
/// `figure-phone`); raise every text below the drawing's least size as
/// shown to that size, the entries of a legend all to one size; drop a
/// text drawn twice at one place; mark legend entries `class="legend"`;
/// and write `_{…}` and `^{…}` inside a text as a lowered or raised
/// `<tspan>` at [`SUPERSCRIPT`] of the text's size.
pub fn themeable_at(svg: &str, at: Width) -> String {
    let svg = svg.replace("#000000", "currentColor").replace("\n\n", "\n");
    match (svg.find("<svg"), svg.find('>')) {
        (Some(start), Some(end)) => {
            let head = &svg[start..end];
            let view_box = attribute(head, "viewBox").unwrap_or_default();
            let width = view_box
                .split_whitespace()
                .nth(2)
                .and_then(|w| w.parse::<f64>().ok())
                .unwrap_or(COLUMN);
            let class = at.pick("figure-desktop", "figure-phone");
            format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" \
                 viewBox=\"{view_box}\" class=\"book-figure {class}\" \
                 style=\"max-width: {width}px\">{}",
                legible(&svg[end + 1..], width, at)
            )
        }
        _ => svg,
    }
}

/// Whether the words of a text hold a raised or lowered part: a Unicode
/// superscript, or `_{` / `^{`.
fn raised(words: &str) -> bool {
    words.chars().any(|c| "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺".contains(c))
        || words.contains("_{")
        || words.contains("^{")
}

/// One `<text …>words</text>` of a figure, as read.
struct TextElement<'a> {
    /// From `<text` up to (not including) `</text>`.
    element: &'a str,
    /// The words, as written.
    words: &'a str,
    /// Its font size, as written.
    size: Option<&'a str>,
    legend: bool,
}

fn read_text(element: &str) -> TextElement<'_> {
    const KEY: &str = "font-size=\"";
    let words = element.split_once('>').map_or("", |(_, w)| w);
    let size = element.find(KEY).and_then(|k| {
        let from = k + KEY.len();
        let len = element[from..].find('"')?;
        Some(&element[from..from + len])
    });
    let legend = element.contains(&format!("font-family=\"{LEGEND_FAMILY}\""));
    TextElement {
        element,
        words,
        size,
        legend,
    }
}

/// The `<text>` elements of a figure's body: see [`themeable_at`].
fn legible(body: &str, width: f64, at: Width) -> String {
    // A hair above the limit, so rounding in the browser stays clear.
    let least = |words: &str| {
        let px = at.min_text() / if raised(words) { SUPERSCRIPT } else { 1.0 };
        font_size(width, px + 0.05, at)
    };
    // Every legend entry at the size its largest need sets.
    let mut legend_size: f64 = 0.0;
    let mut rest = body;
    while let Some(at) = rest.find("<text ") {
        let Some(close) = rest[at..].find("</text>") else {
            break;
        };
        let text = read_text(&rest[at..at + close]);
        if text.legend {
            let size = text.size.and_then(|s| s.parse().ok());
            legend_size =
                legend_size.max(least(text.words)).max(size.unwrap_or(0.0));
        }
        rest = &rest[at + close..];
    }
    let mut out = String::with_capacity(body.len());
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find("<text ") {
        let Some(close) = rest[at..].find("</text>") else {
            break;
        };
        out.push_str(&rest[..at]);
        let text = read_text(&rest[at..at + close]);
        rest = &rest[at + close + "</text>".len()..];
        if !text.words.trim().is_empty() && seen.contains(&text.element) {
            continue; // the same words at the same place, drawn twice
        }
        seen.push(text.element);
        let size: f64 = text.size.and_then(|s| s.parse().ok()).unwrap_or(0.0);
        let want = if text.legend {
            legend_size
        } else {
            size.max(least(text.words))
        };
        let mut element = text.element.to_string();
        if let Some(written) = text.size
            && want > size
        {
            element = element.replacen(
                &format!("font-size=\"{written}\""),
                &format!("font-size=\"{want:.2}\""),
                1,
            );
        }
        if text.legend {
            element = element.replacen(
                &format!("font-family=\"{LEGEND_FAMILY}\""),
                "font-family=\"sans-serif\" class=\"legend\"",
                1,
            );
        }
        out.push_str(&scripts(&element));
        out.push_str("</text>");
    }
    out.push_str(rest);
    out
}

/// A text element with each `_{…}` and `^{…}` of its words made a
/// `<tspan>` at [`SUPERSCRIPT`] of the size, lowered or raised.
fn scripts(element: &str) -> String {
    let Some((head, words)) = element.split_once('>') else {
        return element.to_string();
    };
    if !words.contains("_{") && !words.contains("^{") {
        return element.to_string();
    }
    let mut out = format!("{head}>");
    let mut rest = words;
    while let Some(i) = rest.find(['_', '^']) {
        let (before, from) = rest.split_at(i);
        if !from[1..].starts_with('{') {
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 1..];
            continue;
        }
        let Some(close) = from.find('}') else { break };
        out.push_str(before);
        let shift = if from.starts_with('_') {
            "sub"
        } else {
            "super"
        };
        out.push_str(&format!(
            "<tspan baseline-shift=\"{shift}\" font-size=\"{:.0}%\">{}</tspan>",
            SUPERSCRIPT * 100.0,
            &from[2..close]
        ));
        rest = &from[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The colour of a named series, the same in every figure of the book: a
/// feature map (elu+1, DPFP-ν, FAVOR+, softmax) or an update rule (sum,
/// delta). The name may carry details after a comma, a slash or a space
/// (`"elu+1, p = 8"`, `"dpfp-2/delta"`, `"FAVOR+ r=16"`, `"favor-64"`).
/// `None` for a series that has no colour of its own.
pub fn series_colour(name: &str) -> Option<RGBColor> {
    // The rules of "After the paper", by their whole names.
    let later = [
        "fixed decay",
        "scalar decay",
        "diagonal gates",
        "gated delta",
    ];
    if let Some(i) = later.iter().position(|r| name.eq_ignore_ascii_case(r)) {
        return Some(LATER_RULES[i]);
    }
    let key = name
        .split([',', '/', ' ', '('])
        .next()
        .unwrap_or(name)
        .to_lowercase();
    let i = match key.as_str() {
        "elu+1" => 0,
        "dpfp-1" => 1,
        "dpfp-2" => 2,
        "dpfp-3" => 3,
        k if k.starts_with("favor") => 4,
        "softmax" => 5,
        "sum" => return Some(RULES[0]),
        "delta" => return Some(RULES[1]),
        "fwm" => return Some(RULES[2]),
        _ => return None,
    };
    Some(PALETTE[i])
}

/// Okabe–Ito colours of middle lightness, distinct for readers with
/// colour-vision deficiencies and visible on white and on near-black; the
/// feature maps take them in the order of [`series_colour`].
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(230, 159, 0),   // orange: elu+1
    RGBColor(86, 180, 233),  // sky blue: DPFP-1
    RGBColor(0, 158, 115),   // bluish green: DPFP-2
    RGBColor(213, 94, 0),    // vermillion: DPFP-3
    RGBColor(204, 121, 167), // reddish purple: FAVOR+
    RGBColor(0, 114, 178),   // blue: softmax
];

/// A second colour for FAVOR+, for the narrower of two widths drawn in
/// one figure (the capacity sweep's r = 4 beside r = 16): a purple no
/// other series uses.
pub const FAVOR_NARROW: RGBColor = RGBColor(150, 80, 190);

/// The rules that came after the paper, in the order of the chapter's
/// table after the sum and delta rules: fixed decay, scalar decay,
/// diagonal gates, gated delta.
pub const LATER_RULES: [RGBColor; 4] = [
    RGBColor(120, 94, 240), // violet
    RGBColor(200, 50, 110), // raspberry
    RGBColor(100, 150, 30), // olive green
    RGBColor(0, 130, 150),  // dark cyan
];

/// The update rules, in colours no feature map uses: the sum rule grey,
/// the delta rule a dark yellow (Okabe–Ito's yellow, darkened to read on
/// white), the fwm rule brown.
pub const RULES: [RGBColor; 3] = [
    RGBColor(140, 140, 140), // grey: the sum rule
    RGBColor(190, 170, 0),   // dark yellow: the delta rule
    RGBColor(165, 105, 60),  // brown: the fwm rule of Schlag et al. 2021b
];

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let from = tag.find(&key)? + key.len();
    let len = tag[from..].find('"')?;
    Some(&tag[from..from + len])
}

/// The viridis colour map at t ∈ [0, 1]: dark blue to yellow, readable on
/// white and on near-black, and in order for readers with colour-vision
/// deficiencies. Linear interpolation between nine published stops.
pub fn viridis(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix =
        |a: u8, b: u8| (a as f64 + f * (b as f64 - a as f64)).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_hits_its_end_stops_and_clamps() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(7.0), viridis(1.0));
    }

    #[test]
    fn small_text_is_raised_to_the_least_legible_size_as_shown() {
        // 1500 units shown 750 px wide: text must be 24 units for 12 px.
        let svg = "<svg viewBox=\"0 0 1500 100\"><text font-size=\"10\">\
                   1</text><text font-size=\"30\">2</text><text \
                   font-size=\"10\">10⁻³</text></svg>";
        let out = themeable(svg);
        assert!(out.contains("font-size=\"24.10\">1<"), "{out}");
        assert!(out.contains("font-size=\"30\">2<"), "{out}");
        assert!(out.contains("font-size=\"30.10\">10⁻³<"), "{out}");
        assert!(out.contains("style=\"max-width: 1500px\""), "{out}");
    }

    #[test]
    fn legend_entries_take_one_size_and_a_class() {
        let svg = format!(
            "<svg viewBox=\"0 0 640 100\"><text font-family=\"{LEGEND_FAMILY}\" \
             font-size=\"10\">solved: 10⁻³</text><text font-family=\"\
             {LEGEND_FAMILY}\" font-size=\"10\">ours</text><text \
             font-family=\"sans-serif\" font-size=\"10\">tick</text></svg>"
        );
        let out = themeable(&svg);
        let legend = "font-family=\"sans-serif\" class=\"legend\" \
                      font-size=\"15.05\"";
        assert_eq!(out.matches(legend).count(), 2, "{out}");
        assert!(out.contains("font-size=\"12.05\">tick<"), "{out}");
        assert!(!out.contains(LEGEND_FAMILY), "{out}");
    }

    #[test]
    fn a_text_drawn_twice_at_one_place_is_kept_once() {
        let svg = "<svg viewBox=\"0 0 640 100\"><text x=\"1\" \
                   font-size=\"13\">10⁰</text><text x=\"1\" \
                   font-size=\"13\">10⁰</text><text x=\"2\" \
                   font-size=\"13\">10⁰</text></svg>";
        let out = themeable(svg);
        assert_eq!(out.matches(">10⁰</text>").count(), 2, "{out}");
    }

    #[test]
    fn sub_and_superscripts_become_tspans_and_raise_their_text() {
        let svg = "<svg viewBox=\"0 0 380 100\"><text font-size=\"13\">\
                   W_{Q} and k_{t}^{⊤}</text></svg>";
        let out = themeable_at(svg, Width::Phone);
        assert!(out.contains("class=\"book-figure figure-phone\""), "{out}");
        let size = format!("{:.2}", PHONE_MIN_TEXT_PX / SUPERSCRIPT + 0.05);
        assert!(
            out.contains(&format!(
                "font-size=\"{size}\">W<tspan baseline-shift=\"sub\" \
                 font-size=\"80%\">Q</tspan> and k<tspan \
                 baseline-shift=\"sub\" font-size=\"80%\">t</tspan><tspan \
                 baseline-shift=\"super\" font-size=\"80%\">⊤</tspan></text>"
            )),
            "{out}"
        );
    }

    #[test]
    fn each_series_has_one_colour_whatever_its_details() {
        let elu = series_colour("elu+1");
        assert!(elu.is_some());
        for name in ["elu+1, p = 8", "elu+1/delta", "ELU+1 (ours)"] {
            assert_eq!(series_colour(name), elu, "{name}");
        }
        assert_eq!(series_colour("FAVOR+ r=16"), series_colour("favor-64"));
        assert_eq!(series_colour("DPFP-2, p = 32"), series_colour("dpfp-2"));
        assert_ne!(series_colour("dpfp-1"), series_colour("dpfp-2"));
        assert_ne!(series_colour("sum"), series_colour("delta"));
        // Every rule of "After the paper" has a colour of its own.
        let rules = ["sum", "fixed decay", "scalar decay", "diagonal gates"];
        let rules = rules.into_iter().chain(["delta", "gated delta"]);
        let colours: Vec<RGBColor> = rules
            .map(|r| series_colour(r).expect("a rule's colour"))
            .collect();
        for (i, c) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(c), "{i}");
            assert!(!PALETTE.contains(c), "{i}");
        }
        assert_eq!(series_colour("recurrent, f32"), None);
    }

    #[test]
    fn themeable_swaps_black_for_current_color_and_drops_fixed_size() {
        let svg = "<svg width=\"10\" height=\"5\" viewBox=\"0 0 10 5\">\
                   <text fill=\"#000000\">x</text></svg>";
        let out = themeable(svg);
        assert!(out.contains("viewBox=\"0 0 10 5\""));
        assert!(!out.contains("width=\"10\""));
        assert!(out.contains("fill=\"currentColor\""));
    }
}
