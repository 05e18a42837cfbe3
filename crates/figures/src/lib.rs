//! The book's figures. Each one takes data from an experiment in `listings`
//! and draws it as SVG with plotters. `{{#figure NAME}}` in a chapter inlines
//! the SVG, so figures follow the reader's theme: text and axes are drawn in
//! `currentColor`, and colour maps are chosen to read on light and dark pages.

mod cost;
mod feature_map;
mod heatmap;
mod lines;
mod memory;
mod paper;
mod rank;
mod retrieval;
mod schedules;
mod speed;
mod style;
mod taylor;

pub use style::themeable;

/// A named figure: its caption, a text alternative for screen readers, and
/// the function that draws it.
pub struct Figure {
    pub name: &'static str,
    pub caption: &'static str,
    pub alt: &'static str,
    pub render: fn() -> String,
}

/// Every figure the book can show, by name.
pub const ALL: &[Figure] = &[
    Figure {
        name: "causal-attention-heatmap",
        caption: "Causal softmax attention weights of the running example: \
              row t holds how query t spreads its attention over keys \
              j ≤ t. The empty upper triangle is the future, weight 0.",
        alt: "A 12 by 12 grid of coloured squares filling the lower triangle \
          and the diagonal; the upper triangle is empty. Each row's \
          colours sum to one; early rows are bright on few cells, late \
          rows spread over many.",
        render: heatmap::causal_attention_heatmap,
    },
    Figure {
        name: "capacity-crosstalk",
        caption: "The sum rule's recall error as associations pile up: RMS of \
            ‖S k_i − v_i‖ / ‖v_i‖ over all n stored pairs, unit values. With \
            random unit keys the error grows from the second association on, \
            along √((n − 1)/d) (dashed); keys that are orthonormal while they \
            fit recall exactly up to n = d and then join the random ones.",
        alt: "A line chart of recall error against n from 1 to 128, for \
            widths 16 and 64. The random-key lines rise from zero like \
            square-root curves, the one for width 16 steeper, each on top \
            of its dashed prediction. The orthonormal-key lines lie on zero \
            until n equals the width, then jump up and approach the \
            random-key lines.",
        render: paper::capacity_crosstalk,
    },
    Figure {
        name: "favor-spread",
        caption: "How far FAVOR+'s estimate of exp(qᵀk) strays from it, \
            relative to exp(qᵀk), over many draws of the random projection, \
            against the number of random features r, on log-log axes. With \
            independent Gaussian entries the spread follows its exact value \
            √(2/r) sinh(‖q + k‖²/2) (dashed), halving when r grows \
            fourfold; orthogonal random features spread less.",
        alt: "A log-log chart with r from 1 to 64. The measured spread for \
            independent projections falls in a straight line of slope one \
            half, on top of a dashed line; the spread for orthogonal \
            projections lies below it from r = 2 on.",
        render: paper::favor_spread_figure,
    },
    Figure {
        name: "capacity-sweep",
        caption: "Recall error of random associations against their number n, \
            per feature map (colour follows p; circles elu+1, squares DPFP, \
            crosses FAVOR+), keys of width d = 8 mapped \
            by φ and scaled to unit length. Top: the sum rule. Middle: one \
            pass of the delta rule with β = 1. Bottom: the delta rule \
            writing the same associations again and again; its error stays \
            near zero longer the larger p is.",
        alt: "Three stacked line charts of error against n from 1 to 80, six \
            lines each. Top: every line rises at once and keeps rising \
            past 1. Middle: the lines rise at once but more slowly, \
            levelling near 1. Bottom: the lines stay near zero for a while \
            and then rise: elu+1, DPFP-1 and the FAVOR+ lines early, DPFP-2 \
            later, DPFP-3 last.",
        render: paper::capacity_sweep_figure,
    },
    Figure {
        name: "attention-cost",
        caption: "What one head of softmax attention holds and computes as the \
            sequence grows (d = m = 64), on log-log axes. Top: the N × N \
            score matrix grows as N², the KV cache as N, the fixed-size \
            state of the next chapters not at all. Bottom: decoding \
            token t reads all t cached tokens, so its cost grows with t; \
            a step of the fixed state costs the same at every t.",
        alt: "Two log-log plots, one above the other. Top, floats held \
            against sequence length: a steep straight line for the score \
            matrix, a line of half its slope for the KV cache, and a \
            flat line for the fixed state. Bottom, FLOPs per decoded \
            token against position: a rising straight line for softmax \
            with a KV cache, crossing above a flat line for the fixed \
            state early on.",
        render: cost::attention_cost,
    },
    Figure {
        name: "kernel-rank",
        caption: "Numerical rank of the N × N Gram matrix of four kernels on N \
            random points in d = 4, on log-log axes. The exponential \
            kernel gains rank with every point, at the softmax's \
            temperature and at a high one where its weights are nearly \
            uniform; a feature map with p features stops at p.",
        alt: "A log-log plot of rank against number of points. The line \
            for exp at the softmax's temperature runs along the \
            diagonal, rank equal to N; the line for the hot exp kernel \
            follows it and bends slightly below at the largest N. The \
            degree-2 Taylor line rises and levels off at 15, the elu+1 \
            line levels off at 4.",
        render: rank::kernel_rank,
    },
    Figure {
        name: "taylor-features",
        caption: "Truncated Taylor features of exp(qᵀk), degree by degree. \
            Top: relative error on random query–key pairs at the \
            softmax's scale; the typical pair converges fast, the pair \
            with the largest score lags far behind. Bottom: the number \
            of features, C(d + n, n), for keys of width 4 and 64.",
        alt: "Two plots, one above the other, against degree from 0 to 12 \
            on a logarithmic y axis. Top: the median error falls in a \
            straight line by about one power of ten per degree; the \
            largest error first rises, then falls slowly and stays above \
            0.1. Bottom: the number of features climbs to about 2 \
            thousand for width 4 and past 10 to the 13 for width 64.",
        render: taylor::taylor_features,
    },
    Figure {
        name: "memory-writes",
        caption: "The fast-weight memory S_t of the running example (φ = \
            elu+1, m = p = 8) after 1, 2, 3 and all 12 tokens; red \
            positive, blue negative, grey zero, each panel scaled to its \
            largest entry. After one token it is one outer product \
            v₁φ(k₁)ᵀ: every row is a multiple of the same row φ(k₁)ᵀ. \
            Each token adds one more.",
        alt: "Four 8 by 8 grids of coloured cells, two by two; rows are \
            value entries and columns features. The first grid shows \
            clean stripes: rows that are scaled copies of one pattern. \
            The second and third mix two and three such patterns; the \
            last, after twelve tokens, shows no visible stripe \
            structure.",
        render: memory::memory_writes,
    },
    Figure {
        name: "retrieval-setting1",
        caption: "Setting 1 (every key once): the best evaluation loss each \
            trained model reached, against the number of keys n, on a log \
            scale; keys of width d = 8. A run is solved at the paper's \
            target loss of one in a thousand. Drawn from the committed \
            results of cargo xtask retrieval.",
        alt: "Six lines of loss against n. Softmax stays at the bottom for \
            every n. The linear layers stay low for small n and then rise \
            to a plateau; FAVOR+ rises first, then elu+1 and DPFP-1 \
            together, then DPFP-2, then DPFP-3: among the deterministic \
            maps, the wider the feature map, the later the rise.",
        render: retrieval::setting1,
    },
    Figure {
        name: "retrieval-setting2",
        caption: "Setting 2 (keys repeat with new values): best evaluation \
            loss against the number of keys n for the sum and the delta \
            rule with elu+1 and DPFP-1, and softmax, on a log scale; \
            d = 8. Drawn from the committed results of cargo xtask \
            retrieval.",
        alt: "Five lines of loss against n. The two delta-rule lines start \
            at the bottom and rise with n; the sum-rule lines and softmax \
            stay high for every n.",
        render: retrieval::setting2,
    },
    Figure {
        name: "schedules-timing",
        caption: "Time per call of each schedule of linear attention (φ = \
            elu+1, d = p = m = 32, chunks of C = 64 tokens) against the \
            sequence length, on log-log axes, measured while this copy of \
            the book was built. A form that builds the N × N scores should \
            climb with slope 2, one that carries a fixed-size state with \
            slope 1; the legend gives the slope each line was measured at, \
            the lines under the plot the machine, the date and the clock.",
        alt: "A log-log plot of milliseconds per call against sequence \
            length, with five lines: scores first and parallel N×N climb \
            steeply, memory first, recurrent and chunkwise less steeply. \
            Two lines of text under the plot say on which processor, on \
            which date and with which clock the times were taken.",
        render: schedules::schedules_timing,
    },
    Figure {
        name: "feature-map-capacity",
        caption: "Reading back n stored associations (random keys of width \
            d = 8, values of width 8, every key queried, median over keys \
            and ten seeds). Top: the sum rule of linear attention, each φ \
            against softmax attention, which keeps every key. Bottom: the \
            best memory of the same size, S fitted by least squares; it is \
            exact to rounding (drawn at the floor) up to n = p and no \
            further.",
        alt: "Two plots, one above the other, of median error against the \
            number of stored associations on logarithmic axes. Top: the \
            softmax line starts near zero and rises slowly; the elu+1 line \
            sits close to 1 from the start; the three DPFP lines start \
            lower and climb towards 1. Bottom: each feature map's line \
            stays on the floor of the axis and jumps up to near 1 just \
            after its p: 8 for elu+1, 16, 32 and 48 for DPFP-1, -2, -3.",
        render: feature_map::feature_map_capacity,
    },
    Figure {
        name: "speed-accuracy",
        caption: "How far the f32 schedules stray from the f64 recurrence on \
            the same inputs: the worst relative error of an output row, worst \
            of the seeds, against the sequence length, on log-log axes \
            (φ = elu+1, d = m = 32).",
        alt: "A log-log chart of error against N from 256 to 16384 with two \
            lines, recurrent and chunkwise, both rising slowly with N; the \
            chunkwise line lies at or a little below the recurrent line.",
        render: speed::speed_accuracy_figure,
    },
    Figure {
        name: "speed-chunk-size",
        caption: "Time per call of the f32 chunkwise form against its chunk \
            size C, on log-log axes, measured while this copy of the book \
            was built, beside the f32 recurrence (flat: it has no chunks). \
            Small chunks pay per call of a matrix product; large ones pay \
            for the C × C score block of each chunk.",
        alt: "A log-log chart of milliseconds against chunk size from 2 to \
            1024. The chunkwise line falls from small C to a minimum at a \
            middling C and rises again for large C; a flat line marks the \
            recurrent form.",
        render: speed::speed_chunk_size_figure,
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

    #[test]
    fn figures_are_byte_identical_across_runs() {
        for fig in ALL.iter().filter(|f| !f.measured()) {
            assert_eq!((fig.render)(), (fig.render)(), "{}", fig.name);
        }
        for name in MEASURED {
            assert!(find(name).is_some(), "{name} is not a figure");
        }
    }

    #[test]
    fn names_are_unique_and_captions_present() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(!a.caption.is_empty() && !a.alt.is_empty());
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }
}
