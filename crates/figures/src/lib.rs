//! The book's figures. Each one takes data from an experiment in `listings`
//! and draws it as SVG with plotters. A `{{#figure NAME ...}}` block in a
//! chapter (which holds the figure's caption and text alternative) inlines
//! the SVG, so figures follow the reader's theme: text and axes are drawn in
//! `currentColor`, and colour maps are chosen to read on light and dark pages.
//! Every figure is drawn twice by the same code from the same data: for the
//! desktop column and for a phone's (fewer ticks, panels stacked), and the
//! page shows the one that fits its column (`theme/book.css`).

mod after;
mod cost;
mod feature_map;
mod heatmap;
mod language_model;
mod lines;
mod memory;
mod paper;
mod programmer;
mod rank;
mod retrieval;
mod schedules;
mod speed;
mod state;
mod style;
mod taylor;
mod ticks;

pub use style::{PHONE, PHONE_BELOW, Width, themeable, themeable_at};

/// A named figure: the function that draws it for a width, and the two
/// drawings together as the page holds them. Its caption and its text
/// alternative are written beside it in the chapter that shows it.
pub struct Figure {
    pub name: &'static str,
    pub draw: fn(Width) -> String,
    /// The desktop drawing, then the phone drawing, on lines of their own.
    pub render: fn() -> String,
}

/// Both drawings of a figure, desktop first, as [`Figure::render`] gives
/// them.
pub fn both(draw: fn(Width) -> String) -> String {
    let (desktop, phone) = (draw(Width::Desktop), draw(Width::Phone));
    format!("{}\n{}", desktop.trim_end(), phone.trim_end())
}

/// A [`Figure`] named `$name`, drawn by `$draw`.
macro_rules! figure {
    ($name:literal, $draw:path) => {
        Figure {
            name: $name,
            draw: $draw,
            render: || both($draw),
        }
    };
}

/// Every figure the book can show, by name.
pub const ALL: &[Figure] = &[
    figure!(
        "causal-attention-heatmap",
        heatmap::causal_attention_heatmap
    ),
    figure!("fast-weight-programmer", programmer::fast_weight_programmer),
    figure!("capacity-crosstalk", paper::capacity_crosstalk),
    figure!("favor-spread", paper::favor_spread_figure),
    figure!("dpfp-regions", paper::dpfp_regions),
    figure!("capacity-sweep", paper::capacity_sweep_figure),
    figure!("lm-curves", language_model::lm_curves),
    figure!("attention-cost", cost::attention_cost),
    figure!("kernel-rank", rank::kernel_rank),
    figure!("taylor-features", taylor::taylor_features),
    figure!("memory-writes", memory::memory_writes),
    figure!("delta-rewrite", memory::delta_rewrite),
    figure!("retrieval-setting1", retrieval::setting1),
    figure!("retrieval-setting2", retrieval::setting2),
    figure!("schedules-timing", schedules::schedules_timing),
    figure!("feature-map-capacity", feature_map::feature_map_capacity),
    figure!("speed-accuracy", speed::speed_accuracy_figure),
    figure!("speed-chunk-size", speed::speed_chunk_size_figure),
    figure!("speed-crossover", speed::speed_crossover_figure),
    figure!("after-editing", after::after_editing),
    figure!("after-recall", after::after_recall),
    figure!("after-mqar", after::after_mqar),
    figure!("after-mqar-state", state::after_mqar_state),
    figure!("after-mqar-rewrite", after::after_mqar_rewrite),
];

/// Figures drawn from measurements of time. They differ between builds,
/// and each says where and when it was measured; every other figure is
/// byte-identical from build to build.
pub const MEASURED: &[&str] = &["schedules-timing", "speed-chunk-size"];

impl Figure {
    /// Whether this figure shows measured time (see [`MEASURED`]).
    pub fn measured(&self) -> bool {
        MEASURED.contains(&self.name)
    }
}

/// The figure named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Figure> {
    ALL.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_is_one_svg_block_with_no_blank_line() {
        for fig in ALL {
            let svg = (fig.render)();
            // The desktop drawing, then the phone one.
            let desktop = svg.find("figure-desktop").unwrap_or(usize::MAX);
            let phone = svg.find("figure-phone").unwrap_or(0);
            assert!(desktop < phone, "{}: desktop, then phone", fig.name);
            assert_eq!(svg.matches("<svg").count(), 2, "{}", fig.name);
            assert!(svg.starts_with("<svg"), "{}", fig.name);
            assert!(svg.trim_end().ends_with("</svg>"), "{}", fig.name);
            // A blank line would end the HTML block in Markdown.
            assert!(!svg.contains("\n\n"), "{}", fig.name);
            assert!(!svg.contains('$'), "{}: KaTeX would read a $", fig.name);
            assert!(
                !svg.contains("#000000"),
                "{}: black is not themeable",
                fig.name
            );
            assert!(svg.contains("currentColor"), "{}", fig.name);
        }
    }

    const CHILD: &str = "FIGURES_RENDER_CHILD";

    #[test]
    fn figures_are_byte_identical_across_runs() {
        // Two renders in one process read the studies `listings` memoises
        // and could not differ; a second process starts from nothing, as
        // the next build does.
        let fixed = || ALL.iter().filter(|f| !f.measured());
        let print = |f: &Figure| {
            format!("<<{}>>\n{}<</{}>>\n", f.name, (f.render)(), f.name)
        };
        if std::env::var_os(CHILD).is_some() {
            fixed().for_each(|f| print!("{}", print(f)));
            return;
        }
        let child =
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "tests::figures_are_byte_identical_across_runs",
                    "--exact",
                    "--nocapture",
                ])
                .env(CHILD, "1")
                .output()
                .expect("the test binary runs again");
        let again = String::from_utf8_lossy(&child.stdout);
        for fig in fixed() {
            assert!(
                again.contains(&print(fig)),
                "{} is drawn differently in a new process",
                fig.name
            );
        }
        for name in MEASURED {
            assert!(find(name).is_some(), "{name} is not a figure");
        }
    }

    /// Every `<text>` of an SVG: its attributes and its words (tspans
    /// removed).
    fn texts(svg: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut rest = svg;
        while let Some(at) = rest.find("<text ") {
            let end = rest[at..].find("</text>").expect("closed") + at;
            let (head, body) = rest[at..end].split_once('>').expect("a tag");
            let mut words = String::new();
            let mut inside = false;
            for c in body.chars() {
                match c {
                    '<' => inside = true,
                    '>' => inside = false,
                    c if !inside => words.push(c),
                    _ => {}
                }
            }
            out.push((head.to_string(), words));
            rest = &rest[end..];
        }
        out
    }

    fn attr(head: &str, name: &str) -> Option<String> {
        let key = format!(" {name}=\"");
        let from = head.find(&key)? + key.len();
        Some(head[from..from + head[from..].find('"')?].to_string())
    }

    #[test]
    fn no_text_is_drawn_twice_and_none_shows_markup() {
        for fig in ALL {
            for w in Width::BOTH {
                let svg = (fig.draw)(w);
                let all = texts(&svg);
                for (i, t) in all.iter().enumerate() {
                    if !t.1.trim().is_empty() {
                        assert!(
                            !all[..i].contains(t),
                            "{} ({w:?}): {:?} drawn twice",
                            fig.name,
                            t.1
                        );
                    }
                    // W_Q shows as W with a lowered Q, never "W_Q".
                    assert!(
                        !t.1.contains("_{") && !t.1.contains("^{"),
                        "{} ({w:?}): raw markup in {:?}",
                        fig.name,
                        t.1
                    );
                    assert!(!t.1.contains("W_"), "{}: {:?}", fig.name, t.1);
                }
            }
        }
    }

    #[test]
    fn every_text_is_legible_and_each_legend_has_one_size() {
        for fig in ALL {
            for w in Width::BOTH {
                let svg = (fig.draw)(w);
                let width: f64 = attr(&svg, "viewBox")
                    .and_then(|v| v.split_whitespace().nth(2)?.parse().ok())
                    .expect("a viewBox");
                let shown = width.min(w.column());
                let mut legend = Vec::new();
                for (head, words) in texts(&svg) {
                    if words.trim().is_empty() {
                        continue;
                    }
                    let size: f64 =
                        attr(&head, "font-size").unwrap().parse().unwrap();
                    let px = size * shown / width;
                    // Text holding a sub- or superscript shows it at
                    // SUPERSCRIPT of its size.
                    let raised = has_scripts(&svg, &head)
                        || words.chars().any(|c| "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺".contains(c));
                    let least = w.min_text()
                        / if raised { style::SUPERSCRIPT } else { 1.0 };
                    assert!(
                        px >= least - 1e-9,
                        "{} ({w:?}): {words:?} at {px:.2} px",
                        fig.name
                    );
                    if head.contains("class=\"legend\"") {
                        legend.push((size, words));
                    }
                }
                if let Some((first, _)) = legend.first() {
                    assert!(
                        legend.iter().all(|(s, _)| s == first),
                        "{} ({w:?}): legend sizes {legend:?}",
                        fig.name
                    );
                }
            }
        }
    }

    #[test]
    fn no_text_reaches_past_the_edges_of_its_drawing() {
        // A label that runs past the viewBox is cut off on the page, at
        // either width: the estimated extent of every unrotated text, by
        // its anchor, lies inside the drawing.
        for fig in ALL {
            for w in Width::BOTH {
                let svg = (fig.draw)(w);
                let width: f64 = attr(&svg, "viewBox")
                    .and_then(|v| v.split_whitespace().nth(2)?.parse().ok())
                    .expect("a viewBox");
                for (head, words) in texts(&svg) {
                    if words.trim().is_empty() || head.contains("transform") {
                        continue;
                    }
                    let num = |name| -> f64 {
                        attr(&head, name).and_then(|v| v.parse().ok()).unwrap()
                    };
                    let (x, size) = (num("x"), num("font-size"));
                    // Half an em a character: digits and most letters
                    // of a sans-serif are at least that wide.
                    let shown = words
                        .trim()
                        .replace("&apos;", "'")
                        .replace("&quot;", "\"")
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&amp;", "&");
                    let long = shown.chars().count() as f64 * size / 2.0;
                    let (left, right) = match attr(&head, "text-anchor") {
                        Some(a) if a == "middle" => {
                            (x - long / 2.0, x + long / 2.0)
                        }
                        Some(a) if a == "end" => (x - long, x),
                        _ => (x, x + long),
                    };
                    assert!(
                        left >= -1.0 && right <= width + 1.0,
                        "{} ({w:?}): {words:?} spans {left:.0}..{right:.0} \
                         of 0..{width}",
                        fig.name
                    );
                }
            }
        }
    }

    /// Whether the text element that starts `head` holds a tspan.
    fn has_scripts(svg: &str, head: &str) -> bool {
        let at = svg.find(head).unwrap_or(0);
        let end = svg[at..].find("</text>").map_or(svg.len(), |e| at + e);
        svg[at..end].contains("<tspan")
    }

    #[test]
    fn the_retrieval_legends_name_the_threshold_and_losses_below_the_floor() {
        for w in Width::BOTH {
            let svg = retrieval::setting1(w);
            assert!(svg.contains("class=\"legend\""), "{w:?}");
            assert!(svg.contains("solved: loss &lt; 10⁻³"), "{w:?}");
            // Losses below the floor: said in the legend.
            assert!(svg.contains("on the axis"), "{w:?}");
        }
    }

    #[test]
    fn the_page_switches_to_the_phone_drawing_where_the_figures_crate_says() {
        let css = include_str!("../../../theme/book.css");
        let query =
            format!("@container (max-width: {}px)", PHONE_BELOW as f64 - 0.02);
        assert!(css.contains(&query), "theme/book.css lacks `{query}`");
        assert!(css.contains("svg.figure-phone"));
        // The desktop drawings are never drawn narrower than the switch.
        for fig in ALL {
            let svg = (fig.draw)(Width::Desktop);
            let width: f64 = attr(&svg, "viewBox")
                .and_then(|v| v.split_whitespace().nth(2)?.parse().ok())
                .expect("a viewBox");
            assert!(
                width >= PHONE_BELOW as f64 - 80.0,
                "{}: {width}",
                fig.name
            );
            let phone = (fig.draw)(Width::Phone);
            assert!(
                phone.contains(&format!("viewBox=\"0 0 {PHONE} ")),
                "{}",
                fig.name
            );
        }
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }
}
