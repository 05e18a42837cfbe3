//! The registry of printed results. `{{#output NAME}}` in a chapter runs the
//! entry named NAME while the book builds and shows what it prints, so no
//! number in the book is typed by hand.

use crate::m3::attention;
use crate::m3::{
    cost, delete_softmax as kernel, fast_weight_memory as fast_weights,
};

/// A named experiment whose printout the book shows.
pub struct Output {
    pub name: &'static str,
    pub run: fn() -> String,
}

/// Every output the book can show, by name.
pub const ALL: &[Output] = &[
    Output {
        name: "fwp-equivalence",
        run: || {
            let rows =
                crate::paper::fwp::equivalence_study(&[1, 12, 100, 300], 3);
            crate::paper::fwp::EquivalenceTable { seeds: 3, rows }.to_string()
        },
    },
    Output {
        name: "capacity-boundary",
        run: || {
            let ns = [1, 4, 7, 8, 9, 10, 12, 16];
            let rows = crate::paper::capacity::boundary_study(8, &ns, 0);
            crate::paper::capacity::BoundaryTable {
                d: 8,
                seed: 0,
                rows,
            }
            .to_string()
        },
    },
    Output {
        name: "capacity-crosstalk",
        run: || {
            let ns = [1, 2, 4, 8, 16, 17, 24, 32, 64];
            let rows = crate::paper::capacity::crosstalk_study(16, &ns, 10);
            let (d, seeds) = (16, 10);
            crate::paper::capacity::CrosstalkTable { d, seeds, rows }
                .to_string()
        },
    },
    Output {
        name: "primer-overlaps",
        run: || {
            let ds = [4, 16, 64, 256, 1024];
            let rows = crate::appendix::primer::overlap_study(&ds, 32, 10);
            crate::appendix::primer::OverlapTable {
                n: 32,
                seeds: 10,
                rows,
            }
            .to_string()
        },
    },
    Output {
        name: "primer-effective-rank",
        run: || {
            use crate::appendix::primer::{
                PRIMER_SETS, RankTable, effective_rank_study,
            };
            let (n, d, m) = (16, 32, 16);
            let rows = effective_rank_study(&PRIMER_SETS, n, d, m, 0..10);
            RankTable {
                n,
                d,
                m,
                seeds: 0..10,
                rows,
            }
            .to_string()
        },
    },
    Output {
        name: "delta-appendix-a",
        run: || {
            let rows = crate::paper::delta_rule::appendix_a_study(
                &[0.0, 0.3, 0.7, 1.0],
                0,
            );
            crate::paper::delta_rule::AppendixATable(rows).to_string()
        },
    },
    Output {
        name: "delta-chunkwise",
        run: || {
            let cases = [(1, 1), (7, 3), (64, 16), (100, 16), (257, 64)];
            let rows = crate::paper::delta_rule::chunkwise_study(&cases, 3);
            crate::paper::delta_rule::ChunkTable { seeds: 3, rows }.to_string()
        },
    },
    Output {
        name: "feature-map-table",
        run: || {
            use crate::paper::feature_maps::{
                MapTable, TABLE_MAPS, feature_map_table,
            };
            let rows = feature_map_table(&TABLE_MAPS, 64, 50);
            MapTable {
                d: 64,
                inputs: 50,
                rows,
            }
            .to_string()
        },
    },
    Output {
        name: "favor-spread",
        run: || {
            use crate::paper::feature_maps::*;
            SpreadTable(crate::studies::chapter_favor_spread().clone())
                .to_string()
        },
    },
    Output {
        name: "capacity-sweep",
        run: || {
            let curves = crate::studies::capacity_sweep().clone();
            crate::paper::capacity_sweep::CapacityTable(curves).to_string()
        },
    },
    Output {
        name: "capacity-setting2",
        run: || {
            use crate::paper::capacity_sweep::{SETTING2_NS, Setting2Table};
            let rows =
                crate::paper::capacity_sweep::setting2_study(&SETTING2_NS);
            Setting2Table(rows).to_string()
        },
    },
    Output {
        name: "attention-walkthrough",
        run: || attention::walkthrough_report().to_string(),
    },
    Output {
        name: "attention-probe-study",
        run: || attention::probe_study(100).to_string(),
    },
    Output {
        name: "attention-scale-study",
        run: || {
            let rows = attention::scale_study(&[4, 16, 64, 256], 50);
            attention::ScaleTable(rows).to_string()
        },
    },
    Output {
        name: "cost-memory",
        run: || {
            let table = cost::cost_table(&COST_LENGTHS, 64, 2);
            cost::MemoryTable(&table).to_string()
        },
    },
    Output {
        name: "cost-decoding",
        run: || {
            let table = cost::cost_table(&COST_LENGTHS, 64, 2);
            cost::DecodingTable(&table).to_string()
        },
    },
    Output {
        name: "kernel-groupings",
        run: || {
            let seeds = kernel::GROUPING_SEEDS;
            let rows = kernel::grouping_study(&kernel::GROUPING_LENGTHS, seeds);
            kernel::GroupingTable { seeds, rows }.to_string()
        },
    },
    Output {
        name: "kernel-temperature",
        run: || {
            let (n, d, seeds) = kernel::TEMPERATURE_N_D_SEEDS;
            let rows =
                kernel::temperature_study(&kernel::TEMPERATURES, n, d, seeds);
            kernel::TemperatureTable { n, d, seeds, rows }.to_string()
        },
    },
    Output {
        name: "kernel-rank",
        run: || crate::studies::chapter_rank_study().to_string(),
    },
    Output {
        name: "kernel-taylor",
        run: || crate::studies::chapter_taylor_study().to_string(),
    },
    Output {
        name: "fast-weights-walkthrough",
        run: || fast_weights::walkthrough_report(0).to_string(),
    },
    Output {
        name: "fast-weights-agreement",
        run: || {
            let lengths = [1, 2, 3, 12, 100, 1000, 2000];
            let rows = fast_weights::agreement_study(&lengths, 5);
            fast_weights::AgreementTable { seeds: 5, rows }.to_string()
        },
    },
    Output {
        name: "retrieval-boundaries",
        run: crate::paper::retrieval::study::boundaries,
    },
    Output {
        name: "retrieval-plan",
        run: crate::paper::retrieval::study::plan,
    },
    Output {
        name: "retrieval-summary",
        run: crate::paper::retrieval::study::summary,
    },
    Output {
        name: "schedules-chunkwise",
        run: || crate::m3::schedules::chapter_chunkwise_table().to_string(),
    },
    Output {
        name: "schedules-memory",
        run: || crate::m3::schedules::chapter_memory_table().to_string(),
    },
    Output {
        name: "schedules-timing",
        run: || crate::studies::measured_timing().to_string(),
    },
    Output {
        name: "speed-accuracy",
        run: || crate::studies::speed_accuracy().to_string(),
    },
    Output {
        name: "speed-chunk-size",
        run: || crate::studies::measured_chunk_sizes().to_string(),
    },
    Output {
        name: "speed-crossover",
        run: || crate::appendix::speed::CrossoverData::committed().to_string(),
    },
    Output {
        name: "speed-decode",
        run: || {
            let data = crate::appendix::speed::CrossoverData::committed();
            crate::appendix::speed::DecodeTable(&data, 64).to_string()
        },
    },
    Output {
        name: "speed-bench",
        run: || {
            let data = crate::appendix::speed::BenchTable::committed();
            crate::appendix::speed::BenchAt(&data, 64).to_string()
        },
    },
    Output {
        name: "speed-delta-arithmetic",
        run: || crate::appendix::speed::delta_arithmetic().to_string(),
    },
    Output {
        name: "feature-map-normaliser",
        run: || {
            use crate::m3::feature_map::normaliser::{
                NORMALISER_N_D_SEEDS, normaliser_study,
            };
            let (n, d, seeds) = NORMALISER_N_D_SEEDS;
            normaliser_study(n, d, seeds).to_string()
        },
    },
    Output {
        name: "feature-map-recall",
        run: || {
            let widths = [16, 64];
            crate::m3::feature_map::recall::recall_study(
                &widths, 40, 5, 4.0, 100,
            )
            .to_string()
        },
    },
    Output {
        name: "feature-map-capacity",
        run: || crate::studies::chapter_sweep().to_string(),
    },
    Output {
        name: "walkthrough-agreement",
        run: || {
            use crate::m3::walkthrough::{
                AGREEMENT_LENGTHS, AGREEMENT_SEEDS, walkthrough_study,
            };
            walkthrough_study(&AGREEMENT_LENGTHS, AGREEMENT_SEEDS).to_string()
        },
    },
    // Chapter "After the paper".
    Output {
        name: "after-equivalence",
        run: || {
            let rows = crate::paper::after::equivalence_study(3);
            crate::paper::after::EquivalenceTable { seeds: 3, rows }.to_string()
        },
    },
    Output {
        name: "after-editing",
        run: || crate::studies::chapter_editing().to_string(),
    },
    Output {
        name: "after-recall",
        run: crate::paper::after::recall::study::recall_table,
    },
    Output {
        name: "after-fading",
        run: || {
            let [narrow, wide] = crate::studies::chapter_fading();
            format!("{narrow}\n\n{wide}")
        },
    },
];

/// Sequence lengths of the cost tables of "Why attention is expensive".
pub const COST_LENGTHS: [u64; 5] =
    [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18];

/// The output named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Output> {
    ALL.iter().find(|o| o.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }

    /// The outputs read off the clock, which differ from run to run.
    const MEASURED: [&str; 2] = ["schedules-timing", "speed-chunk-size"];

    const CHILD: &str = "LISTINGS_OUTPUTS_CHILD";

    #[test]
    fn every_output_prints_something_and_the_same_thing_in_a_new_process() {
        // Calling an output twice in one process reads the studies it
        // memoises (studies.rs) twice and could not fail; a second process
        // starts from nothing, as the next build does.
        let print = |o: &Output| {
            format!("<<{}>>\n{}<</{}>>\n", o.name, (o.run)(), o.name)
        };
        let fixed = || ALL.iter().filter(|o| !MEASURED.contains(&o.name));
        if std::env::var_os(CHILD).is_some() {
            fixed().for_each(|o| print!("{}", print(o)));
            return;
        }
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "outputs::tests::every_output_prints_something_and_the_same_thing_in_a_new_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs again");
        let again = String::from_utf8_lossy(&child.stdout);
        for o in ALL {
            let first = (o.run)();
            assert!(!first.trim().is_empty(), "{} printed nothing", o.name);
            assert!(!first.contains("NaN"), "{} printed a NaN", o.name);
            if !MEASURED.contains(&o.name) {
                assert!(
                    again.contains(&print(o)),
                    "{} printed something else in a new process",
                    o.name
                );
            }
        }
    }
}
