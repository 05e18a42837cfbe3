//! Colours and the post-processing that lets an SVG follow the page theme.

use plotters::style::RGBColor;

/// Plotters draws text and axes in black; the book's pages may be dark.
/// Replace black with `currentColor`, which takes the page's text colour,
/// and let the SVG scale to the column width.
pub fn themeable(svg: &str) -> String {
    let svg = svg.replace("#000000", "currentColor").replace("\n\n", "\n");
    match (svg.find("<svg"), svg.find('>')) {
        (Some(start), Some(end)) => {
            let head = &svg[start..end];
            let view_box = attribute(head, "viewBox").unwrap_or_default();
            format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" \
                 viewBox=\"{view_box}\" class=\"book-figure\">{}",
                &svg[end + 1..]
            )
        }
        _ => svg,
    }
}

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
    fn themeable_swaps_black_for_current_color_and_drops_fixed_size() {
        let svg = "<svg width=\"10\" height=\"5\" viewBox=\"0 0 10 5\">\
                   <text fill=\"#000000\">x</text></svg>";
        let out = themeable(svg);
        assert!(out.contains("viewBox=\"0 0 10 5\""));
        assert!(!out.contains("width=\"10\""));
        assert!(out.contains("fill=\"currentColor\""));
    }
}
