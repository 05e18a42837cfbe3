//! Colours, text sizes, and the post-processing that lets an SVG follow
//! the page theme and keeps its text legible as the page shows it.

use plotters::style::RGBColor;

/// The widest the page shows a figure, in CSS px: the width of the book's
/// content column on a desktop (mdBook's `--content-max-width`). A figure
/// drawn W units wide is shown min(W, COLUMN) px wide (`theme/book.css`
/// lets it grow to its own width, never past the column).
pub const COLUMN: f64 = 750.0;

/// The smallest text a figure may show, in CSS px at 100% zoom on a
/// desktop; the browser check measures every figure against it.
pub const MIN_TEXT_PX: f64 = 12.0;

/// Unicode superscripts (the exponents of log-axis labels, `10⁻³`) are
/// drawn at about this fraction of their text's size, so text holding one
/// is made 1/SUPERSCRIPT larger for its exponent to reach [`MIN_TEXT_PX`].
/// The browser check uses the same fraction.
pub const SUPERSCRIPT: f64 = 0.8;

/// The font size, in the figure's own units, at which text shows `px` CSS
/// px in the page, for a figure drawn `width` units wide.
pub fn font_size(width: f64, px: f64) -> f64 {
    px * width / width.min(COLUMN)
}

/// Plotters draws text and axes in black; the book's pages may be dark.
/// Replace black with `currentColor`, which takes the page's text colour,
/// let the SVG scale to the column width (never wider than drawn), and
/// raise every text below [`MIN_TEXT_PX`] as shown to that size.
pub fn themeable(svg: &str) -> String {
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
            format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" \
                 viewBox=\"{view_box}\" class=\"book-figure\" \
                 style=\"max-width: {width}px\">{}",
                legible(&svg[end + 1..], width)
            )
        }
        _ => svg,
    }
}

/// Every `<text font-size="…">` of a figure `width` units wide, raised to
/// at least [`MIN_TEXT_PX`] as shown (1/[`SUPERSCRIPT`] more for text with
/// an exponent).
fn legible(body: &str, width: f64) -> String {
    const KEY: &str = "font-size=\"";
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find("<text ") {
        let Some(close) = rest[at..].find("</text>") else {
            break;
        };
        let element = &rest[at..at + close];
        out.push_str(&rest[..at]);
        let words = element.split_once('>').map_or("", |(_, w)| w);
        let raised = words.chars().any(|c| "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺".contains(c));
        let px = MIN_TEXT_PX / if raised { SUPERSCRIPT } else { 1.0 };
        // A hair above the limit, so rounding in the browser stays clear.
        let least = font_size(width, px + 0.05);
        let sized = element.find(KEY).and_then(|k| {
            let from = k + KEY.len();
            let len = element[from..].find('"')?;
            let size: f64 = element[from..from + len].parse().ok()?;
            (size < least).then(|| {
                format!(
                    "{}{:.2}{}",
                    &element[..from],
                    least,
                    &element[from + len..]
                )
            })
        });
        out.push_str(sized.as_deref().unwrap_or(element));
        rest = &rest[at + close..];
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
