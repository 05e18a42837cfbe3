//! The book's figures. Each one takes data from an experiment in `listings`
//! and draws it as SVG with plotters. A `{{#figure NAME ...}}` block in a
//! chapter (which holds the figure's caption and text alternative) inlines
//! the SVG, so figures follow the reader's theme: text and axes are drawn in
//! `currentColor`, and colour maps are chosen to read on light and dark pages.

mod after;
mod cost;
mod feature_map;
mod heatmap;
mod lines;
mod memory;
mod paper;
mod programmer;
mod rank;
mod retrieval;
mod schedules;
mod speed;
mod style;
mod taylor;

pub use style::themeable;

/// A named figure: the function that draws it. Its caption and its text
/// alternative are written beside it in the chapter that shows it.
pub struct Figure {
    pub name: &'static str,
    pub render: fn() -> String,
}

/// Every figure the book can show, by name.
pub const ALL: &[Figure] = &[
    Figure {
        name: "causal-attention-heatmap",
        render: heatmap::causal_attention_heatmap,
    },
    Figure {
        name: "fast-weight-programmer",
        render: programmer::fast_weight_programmer,
    },
    Figure {
        name: "capacity-crosstalk",
        render: paper::capacity_crosstalk,
    },
    Figure {
        name: "favor-spread",
        render: paper::favor_spread_figure,
    },
    Figure {
        name: "dpfp-regions",
        render: paper::dpfp_regions,
    },
    Figure {
        name: "capacity-sweep",
        render: paper::capacity_sweep_figure,
    },
    Figure {
        name: "attention-cost",
        render: cost::attention_cost,
    },
    Figure {
        name: "kernel-rank",
        render: rank::kernel_rank,
    },
    Figure {
        name: "taylor-features",
        render: taylor::taylor_features,
    },
    Figure {
        name: "memory-writes",
        render: memory::memory_writes,
    },
    Figure {
        name: "delta-rewrite",
        render: memory::delta_rewrite,
    },
    Figure {
        name: "retrieval-setting1",
        render: retrieval::setting1,
    },
    Figure {
        name: "retrieval-setting2",
        render: retrieval::setting2,
    },
    Figure {
        name: "schedules-timing",
        render: schedules::schedules_timing,
    },
    Figure {
        name: "feature-map-capacity",
        render: feature_map::feature_map_capacity,
    },
    Figure {
        name: "speed-accuracy",
        render: speed::speed_accuracy_figure,
    },
    Figure {
        name: "speed-chunk-size",
        render: speed::speed_chunk_size_figure,
    },
    Figure {
        name: "speed-crossover",
        render: speed::speed_crossover_figure,
    },
    Figure {
        name: "after-editing",
        render: after::after_editing,
    },
    Figure {
        name: "after-recall",
        render: after::after_recall,
    },
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

    #[test]
    fn names_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }
}
