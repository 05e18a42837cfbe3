//! Recall against state size in Zoology's setting: the six rules at two
//! more widths, sliding-window attention at several windows, and a
//! hybrid of a gated-delta layer and a window layer. The state each
//! model keeps, the plan, the data file `cargo xtask mqar --state` writes
//! (in the format of `mqar.tsv`, read beside it), and what the chapter
//! prints (output `after-mqar-state`) and draws from both files.

use crate::after::recall::model::Mixer;
use crate::after::recall::zoology::Net;
use crate::after::recall::zoology_study::{
    self as z, BUDGET, LEN, LENGTHS, LRS, Record, Run, SEEDS, VOCAB,
};
use crate::table::Table;

// ANCHOR: state_floats
/// Floats one layer keeps while it generates, after n tokens: a rule's
/// memory S, d × d whatever its gates (they are made from each token,
/// not kept); a window's last w keys and values, 2 w d; softmax
/// attention's n keys and values, 2 n d.
pub fn state_floats(mixer: Mixer, d: usize, n: usize) -> usize {
    match mixer {
        Mixer::Window(w) => 2 * w.min(n) * d,
        Mixer::Softmax => 2 * n * d,
        _ => d * d,
    }
}
// ANCHOR_END: state_floats

/// Floats both layers of a model keep after n tokens.
pub fn net_state(net: Net, n: usize) -> usize {
    net.mixers.iter().map(|&m| state_floats(m, net.d, n)).sum()
}

/// The six rules: every mixer of [`Mixer::ALL`] but softmax, the last.
pub const RULES: &[Mixer] = Mixer::ALL.split_last().expect("mixers").1;

/// The widths this study adds to `mqar.tsv`'s (16 and 32).
pub const RULE_WIDTHS: [usize; 2] = [8, 64];
/// The widest models train at one rate only, the best of [`LRS`] for
/// every rule at both widths of `mqar.tsv`, to keep the sweep's budget.
pub const WIDE_LRS: [f64; 1] = [1e-2];
/// The width of every sliding-window model.
pub const WINDOW_WIDTH: usize = 16;
/// The windows w of the sliding-window models.
pub const WINDOWS: [usize; 4] = [4, 8, 16, 32];
/// The window of the hybrid's attention layer.
pub const HYBRID_WINDOW: usize = 8;
/// The widths of the hybrid.
pub const HYBRID_WIDTHS: [usize; 3] = [8, 16, 32];

/// The hybrid: the gated delta rule in the first layer, sliding-window
/// attention in the second, the order of each group of layers in
/// Qwen3-Next and Kimi Linear (linear layers first, attention last).
pub fn hybrid(d: usize) -> Net {
    Net {
        mixers: [Mixer::GatedDelta, Mixer::Window(HYBRID_WINDOW)],
        vocab: VOCAB,
        d,
    }
}

/// A window model of width [`WINDOW_WIDTH`].
pub fn window(w: usize) -> Net {
    Net::new(Mixer::Window(w), VOCAB, WINDOW_WIDTH)
}

/// Every run, the costliest models first.
pub fn plan() -> Vec<Run> {
    let mut nets: Vec<(Net, &[f64])> = Vec::new();
    for &m in RULES {
        nets.push((Net::new(m, VOCAB, RULE_WIDTHS[1]), &WIDE_LRS));
    }
    for &d in HYBRID_WIDTHS.iter().rev() {
        nets.push((hybrid(d), &LRS));
    }
    for &w in WINDOWS.iter().rev() {
        nets.push((window(w), &LRS));
    }
    for m in Mixer::ALL {
        nets.push((Net::new(m, VOCAB, RULE_WIDTHS[0]), &LRS));
    }
    let mut runs = Vec::new();
    for (net, lrs) in nets {
        for seed in SEEDS {
            for &lr in lrs {
                runs.push(Run {
                    net,
                    lr,
                    seed,
                    budget: BUDGET,
                });
            }
        }
    }
    runs
}

/// The learning rates as the data file records them.
pub fn rates_line() -> String {
    format!(
        "Rates: {LRS:?}, the best kept per model and width, except width {} (the rules only): {WIDE_LRS:?}.",
        RULE_WIDTHS[1]
    )
}

/// The committed results of `cargo xtask mqar --state`.
pub const COMMITTED: &str = include_str!("../../../data/mqar-state.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    z::parse_tsv(COMMITTED)
        .expect("listings/data/mqar-state.tsv is well formed")
}

/// The records of both files: `mqar.tsv` (widths 16 and 32) and this
/// study's.
pub fn records() -> Vec<Record> {
    let mut all = z::committed().1;
    all.extend(committed().1);
    all
}

/// The runs of one model at its best learning rate (the highest mean
/// accuracy over seeds at the training length, among the rates it was
/// trained at), and that rate.
pub fn best<'a>(records: &'a [Record], net: Net) -> (f64, Vec<&'a Record>) {
    let name = net.name();
    let at = |lr: f64| -> Vec<&'a Record> {
        records
            .iter()
            .filter(|r| r.mixer == name && r.d == net.d && r.lr == lr)
            .collect()
    };
    let mean = |rs: &[&Record]| {
        rs.iter().map(|r| r.accuracy[0]).sum::<f64>() / rs.len().max(1) as f64
    };
    let lr = LRS
        .into_iter()
        .filter(|&lr| !at(lr).is_empty())
        .max_by(|&a, &b| mean(&at(a)).total_cmp(&mean(&at(b))))
        .unwrap_or(f64::NAN);
    (lr, at(lr))
}

/// Mean accuracy over seeds at length index `i`, at the best rate.
pub fn mean(records: &[Record], net: Net, i: usize) -> f64 {
    let (_, runs) = best(records, net);
    runs.iter().map(|r| r.accuracy[i]).sum::<f64>() / runs.len().max(1) as f64
}

/// Every model the chapter compares, in the table's order: each rule at
/// every width, softmax at every width, the windows, the hybrids.
pub fn models() -> Vec<Net> {
    let mut widths: Vec<usize> = z::WIDTHS.into_iter().collect();
    widths.extend(RULE_WIDTHS);
    widths.sort();
    let mut nets = Vec::new();
    for m in Mixer::ALL {
        for &d in &widths {
            if m != Mixer::Softmax || d < RULE_WIDTHS[1] {
                nets.push(Net::new(m, VOCAB, d));
            }
        }
    }
    nets.extend(WINDOWS.map(window));
    nets.extend(HYBRID_WIDTHS.map(hybrid));
    nets
}

/// The comparison as the chapter prints it.
pub struct StateTable {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl std::fmt::Display for StateTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "share of test queries answered right, mean over seeds {SEEDS:?} at the best rate; \
             state: floats both layers keep at the training length {LEN}; \
             the rules and softmax at widths {:?} from mqar.tsv, the rest from mqar-state.tsv",
            z::WIDTHS
        )?;
        let mut table = Table::new().left("model", 24).gap("  ");
        table = table.right("d", 3).right("state", 6).right("lr", 6);
        for k in LENGTHS {
            table = table.right(&format!("{}", k * LEN), 6);
        }
        for net in models() {
            let (lr, _) = best(&self.records, net);
            let mut row = vec![
                net.name(),
                net.d.to_string(),
                net_state(net, LEN).to_string(),
                lr.to_string(),
            ];
            for i in 0..LENGTHS.len() {
                row.push(format!("{:.3}", mean(&self.records, net, i)));
            }
            table.row(row);
        }
        writeln!(f, "{table}")?;
        for line in self.comments.iter().skip(2) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// Output `after-mqar-state`: the committed comparison.
pub fn state_table() -> String {
    let (comments, _) = committed();
    StateTable {
        comments,
        records: records(),
    }
    .to_string()
}
