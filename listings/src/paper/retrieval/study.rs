//! What the chapter prints about its sweep: the plan's settings, the
//! committed data file read back, the paper's own logged runs beside it,
//! and the tables of capacities and boundary runs; one `pub fn` per
//! `{{#output}}` ([`plan`], [`summary`], [`boundaries`]).

use crate::data_file;
use crate::paper::retrieval::model::Layer;
use crate::paper::retrieval::sweep::{
    D, GIVE_UP_AFTER, Record, SEEDS, SETTING1_MAX, SETTING2_MAX, STEP,
    boundary, budget, budget_for, capacity, lanes, series, setting1_layers,
    setting2_layers, top_for,
};
use crate::paper::retrieval::task::Setting;
use crate::table::Table;
use std::fmt;

/// The data file's line that records the budget its runs were made with.
pub fn budget_line() -> String {
    let b = budget();
    let mut exceptions = String::new();
    for (layer, _) in lanes() {
        let x = budget_for(layer);
        if x != b && !exceptions.contains(&layer.name()) {
            exceptions += &format!(
                " {}: batch {}, lr {}, at most {} steps.",
                layer.name(),
                x.batch,
                x.lr,
                x.max_steps
            );
        }
    }
    format!(
        "Budget: batch {}, lr {}, evaluated every {} steps on {} sequences \
         of up to {} queries, stop at loss {} or after more than {} \
         evaluations without improvement or {} steps.",
        b.batch,
        b.lr,
        b.eval_every,
        b.eval_sequences,
        b.max_queries,
        b.target_loss,
        b.patience,
        b.max_steps
    ) + &exceptions
}

/// Records in the data file's order: by lane as [`lanes`] lists them, then
/// seed, then n.
pub fn sort_records(records: &mut [Record]) {
    let all = lanes();
    records.sort_by_key(|r| {
        let lane = all
            .iter()
            .position(|(l, s)| l.name() == r.layer && s.name() == r.setting);
        (lane, r.seed, r.n)
    });
}

const HEADER: &str = "setting\tlayer\tn\td\tp\tseed\tbest_loss\tsteps\tstop";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.6e}\t{}\t{}",
            r.setting,
            r.layer,
            r.n,
            r.d,
            r.p,
            r.seed,
            r.best_loss,
            r.steps,
            r.stop
        )
    });
    data_file::write(comments, HEADER, lines)
}

/// Read the data file back: its comment lines and its records.
pub fn parse_tsv(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let (comments, lines) = data_file::read(text, HEADER)?;
    let records = lines
        .iter()
        .map(|f| {
            Ok(Record {
                setting: f.fields[0].to_string(),
                layer: f.fields[1].to_string(),
                n: f.get(2, "n")?,
                d: f.get(3, "d")?,
                p: f.get(4, "p")?,
                seed: f.get(5, "seed")?,
                best_loss: f.get(6, "loss")?,
                steps: f.get(7, "steps")?,
                stop: f.fields[8].to_string(),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask retrieval`.
pub const COMMITTED: &str = include_str!("../../../data/retrieval.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/retrieval.tsv is well formed")
}

/// One run of the paper's own logs (`listings/data/paper-retrieval.tsv`).
#[derive(Clone, Debug, PartialEq)]
pub struct PaperRun {
    pub setting: Setting,
    /// Our name for the paper's layer (`linear` → `elu+1`, `ours` → delta).
    pub layer: String,
    pub n: usize,
    pub steps: usize,
    pub best_loss: f64,
    pub solved: bool,
}

/// The paper's logged runs, as committed.
pub const PAPER: &str = include_str!("../../../data/paper-retrieval.tsv");

/// The paper's logged runs at d = 64, with our layer names.
pub fn paper_runs() -> Vec<PaperRun> {
    let mut runs = Vec::new();
    for line in PAPER.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 || f[3] != "64" {
            continue;
        }
        let phi = match f[1] {
            "linear" => "elu+1".to_string(),
            "softmax" => "softmax".to_string(),
            "tanh" => "tanh".to_string(),
            other => {
                match (other.strip_prefix("dpfp"), other.strip_prefix("favor"))
                {
                    (Some(nu), _) => format!("dpfp-{nu}"),
                    (_, Some(r)) => format!("favor-{r}"),
                    _ => other.to_string(),
                }
            }
        };
        let layer = match f[2] {
            "ours" => format!("{phi}/delta"),
            "fwm" => format!("{phi}/fwm"),
            _ => phi,
        };
        runs.push(PaperRun {
            setting: if f[0] == "1" {
                Setting::Distinct
            } else {
                Setting::Repeated
            },
            layer,
            n: f[4].parse().expect("S is a number"),
            steps: f[6].parse().expect("last_step is a number"),
            best_loss: f[8].parse().expect("best_loss is a number"),
            solved: f[10] != "-",
        });
    }
    runs
}

/// The paper's capacity for a layer: the largest n it solved (0 if none)
/// among the sizes we also train (up to 600 in Setting 1, 100 in Setting
/// 2), or `None` if the paper did not run it.
pub fn paper_capacity(setting: Setting, layer: &str) -> Option<usize> {
    let top = match setting {
        Setting::Distinct => SETTING1_MAX,
        Setting::Repeated => SETTING2_MAX,
    };
    let runs: Vec<PaperRun> = paper_runs()
        .into_iter()
        .filter(|r| r.setting == setting && r.layer == layer && r.n <= top)
        .collect();
    if runs.is_empty() {
        return None;
    }
    Some(
        runs.iter()
            .filter(|r| r.solved)
            .map(|r| r.n)
            .max()
            .unwrap_or(0),
    )
}

/// What the chapter prints about the sweep: how it was made, and the
/// capacity of every layer in each setting, ours beside the paper's.
pub struct Summary {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl Summary {
    /// The summary of the committed data file.
    pub fn committed() -> Summary {
        let (comments, records) = committed();
        Summary { comments, records }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.comments {
            writeln!(f, "{c}")?;
        }
        let settings = [
            (Setting::Distinct, setting1_layers()),
            (Setting::Repeated, setting2_layers()),
        ];
        for (setting, layers) in settings {
            let title = match setting {
                Setting::Distinct => "Setting 1, every key once",
                Setting::Repeated => "Setting 2, keys repeat",
            };
            let top = match setting {
                Setting::Distinct => SETTING1_MAX,
                Setting::Repeated => SETTING2_MAX,
            };
            writeln!(f, "\n{title} (d = {D}, n up to {top}):")?;
            let mut table = Table::new()
                .right("layer", 14)
                .right("p", 4)
                .right("capacity", 8)
                .right("paper's", 7)
                .right("capacity/p", 10)
                .right("runs", 4);
            for layer in layers {
                let name = layer.name();
                let p = layer.width(D);
                let ours = capacity(&self.records, setting, &name);
                let paper = paper_capacity(setting, &name)
                    .map_or("-".to_string(), |c| c.to_string());
                let runs = self
                    .records
                    .iter()
                    .filter(|r| r.setting == setting.name() && r.layer == name)
                    .count();
                table.row([
                    name,
                    p.to_string(),
                    ours.to_string(),
                    paper,
                    // Softmax keeps every pair: no memory width to divide by.
                    match layer {
                        Layer::Softmax => "-".to_string(),
                        _ => format!("{:.2}", ours as f64 / p as f64),
                    },
                    runs.to_string(),
                ]);
            }
            writeln!(f, "{table}")?;
        }
        Ok(())
    }
}

/// The runs at a Setting 1 lane's boundary, every seed: (n, seed, solved).
pub fn boundary_runs(
    records: &[Record],
    layer: &str,
) -> Vec<(usize, u64, bool)> {
    let first = series(records, Setting::Distinct, layer);
    let at = boundary(&first);
    let mut runs: Vec<(usize, u64, bool)> = records
        .iter()
        .filter(|r| r.setting == Setting::Distinct.name() && r.layer == layer)
        .filter(|r| at.contains(&r.n))
        .map(|r| (r.n, r.seed, r.solved()))
        .collect();
    runs.sort();
    runs
}

/// Every Setting 1 lane's boundary runs, as the chapter prints them.
pub struct Boundaries(pub Vec<Record>);

impl Boundaries {
    pub fn committed() -> Boundaries {
        Boundaries(committed().1)
    }
}

impl std::fmt::Display for Boundaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut table = Table::new()
            .right("layer", 10)
            .right("n", 4)
            .right("seed", 4)
            .right("steps", 6)
            .right("best loss", 10)
            .right("stop", 8);
        for layer in setting1_layers() {
            let name = layer.name();
            for (n, seed, _) in boundary_runs(&self.0, &name) {
                let r = self
                    .0
                    .iter()
                    .find(|r| {
                        r.setting == Setting::Distinct.name()
                            && r.layer == name
                            && r.n == n
                            && r.seed == seed
                    })
                    .expect("a boundary run is a record");
                table.row([
                    name.clone(),
                    n.to_string(),
                    seed.to_string(),
                    r.steps.to_string(),
                    format!("{:.2e}", r.best_loss),
                    r.stop.clone(),
                ]);
            }
        }
        write!(f, "{table}")
    }
}

/// The plan's settings, as the chapter prints them beside its listing:
/// every lane's layer, key width, sizes and budget, then what every run
/// shares.
pub struct PlanTable;

impl fmt::Display for PlanTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut table = Table::new()
            .right("setting", 7)
            .right("layer", 14)
            .right("p", 4)
            .right("n", 7)
            .right("batch", 5)
            .right("lr", 6)
            .right("max steps", 9);
        for (layer, setting) in lanes() {
            let b = budget_for(layer);
            table.row([
                match setting {
                    Setting::Distinct => "1".to_string(),
                    Setting::Repeated => "2".to_string(),
                },
                layer.name(),
                layer.width(D).to_string(),
                format!("{STEP}–{}", top_for(layer, setting)),
                b.batch.to_string(),
                b.lr.to_string(),
                b.max_steps.to_string(),
            ]);
        }
        writeln!(f, "{table}")?;
        let b = budget();
        let [first, others @ ..] = SEEDS;
        let others: Vec<String> = others.iter().map(u64::to_string).collect();
        let others = others.join(" and ");
        writeln!(f, "Keys of width d = {D}; n rises by {STEP} in every lane.")?;
        writeln!(
            f,
            "A Setting 1 lane trains seed {first} until {GIVE_UP_AFTER} sizes \
             in a row past\nits last solved one fail, then seeds {others} at \
             its boundary;\na Setting 2 lane trains every size with seed \
             {first}."
        )?;
        write!(
            f,
            "Every run: Adam; an evaluation every {} steps on {} fresh \
             sequences,\neach read at up to {} keys; a stop at loss {}, after \
             more than {}\nevaluations without a new best, or at the run's \
             step cap.",
            b.eval_every,
            b.eval_sequences,
            b.max_queries,
            b.target_loss,
            b.patience
        )
    }
}

/// Output `retrieval-plan`: the settings of every lane of the sweep.
pub fn plan() -> String {
    PlanTable.to_string()
}

/// Output `retrieval-summary`: how the committed sweep was made, and every
/// layer's capacity, ours beside the paper's.
pub fn summary() -> String {
    Summary::committed().to_string()
}

/// Output `retrieval-boundaries`: every seed's run at each Setting 1
/// lane's boundary.
pub fn boundaries() -> String {
    Boundaries::committed().to_string()
}
