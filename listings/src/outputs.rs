//! The registry of printed results. `{{#output NAME}}` in a chapter runs the
//! entry named NAME while the book builds and shows what it prints, so no
//! number in the book is typed by hand.

/// A named experiment whose printout the book shows.
pub struct Output {
    pub name: &'static str,
    pub run: fn() -> String,
}

/// Every output the book can show, by name.
pub const ALL: &[Output] = &[
    Output {
        name: "fwp-equivalence",
        run: crate::paper::fwp::study::equivalence_table,
    },
    Output {
        name: "capacity-boundary",
        run: crate::paper::capacity::study::boundary_table,
    },
    Output {
        name: "capacity-crosstalk",
        run: crate::paper::capacity::study::crosstalk_table,
    },
    Output {
        name: "mutation-score",
        run: crate::appendix::how_built::mutation_score,
    },
    Output {
        name: "primer-overlaps",
        run: crate::appendix::primer::study::primer_overlaps,
    },
    Output {
        name: "primer-effective-rank",
        run: crate::appendix::primer::study::primer_effective_rank,
    },
    Output {
        name: "delta-appendix-a",
        run: crate::paper::delta_rule::study::appendix_a_table,
    },
    Output {
        name: "delta-chunkwise",
        run: crate::paper::delta_rule::study::chunkwise_table,
    },
    Output {
        name: "feature-map-table",
        run: crate::paper::feature_maps::study::map_table,
    },
    Output {
        name: "favor-spread",
        run: crate::paper::feature_maps::study::spread_table,
    },
    Output {
        name: "capacity-sweep",
        run: crate::paper::capacity_sweep::study::capacity_table,
    },
    Output {
        name: "capacity-setting2",
        run: crate::paper::capacity_sweep::study::setting2_table,
    },
    Output {
        name: "attention-walkthrough",
        run: crate::m3::attention::study::attention_walkthrough,
    },
    Output {
        name: "attention-probe-study",
        run: crate::m3::attention::study::attention_probe_study,
    },
    Output {
        name: "attention-scale-study",
        run: crate::m3::attention::study::attention_scale_study,
    },
    Output {
        name: "cost-memory",
        run: crate::m3::cost::study::cost_memory,
    },
    Output {
        name: "cost-decoding",
        run: crate::m3::cost::study::cost_decoding,
    },
    Output {
        name: "kernel-groupings",
        run: crate::m3::delete_softmax::study::kernel_groupings,
    },
    Output {
        name: "kernel-temperature",
        run: crate::m3::delete_softmax::study::kernel_temperature,
    },
    Output {
        name: "kernel-rank",
        run: crate::m3::delete_softmax::study::kernel_rank,
    },
    Output {
        name: "kernel-taylor",
        run: crate::m3::delete_softmax::study::kernel_taylor,
    },
    Output {
        name: "fast-weights-walkthrough",
        run: crate::m3::fast_weight_memory::study::fast_weights_running_example,
    },
    Output {
        name: "fast-weights-agreement",
        run: crate::m3::fast_weight_memory::study::fast_weights_agreement,
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
        run: crate::m3::schedules::study::schedules_chunkwise,
    },
    Output {
        name: "schedules-memory",
        run: crate::m3::schedules::study::schedules_memory,
    },
    Output {
        name: "schedules-timing",
        run: crate::m3::schedules::study::schedules_timing,
    },
    Output {
        name: "speed-accuracy",
        run: crate::appendix::speed::study::speed_accuracy,
    },
    Output {
        name: "speed-chunk-size",
        run: crate::appendix::speed::study::speed_chunk_size,
    },
    Output {
        name: "speed-crossover",
        run: crate::appendix::speed::study::speed_crossover,
    },
    Output {
        name: "speed-decode",
        run: crate::appendix::speed::study::speed_decode,
    },
    Output {
        name: "speed-bench",
        run: crate::appendix::speed::study::speed_bench,
    },
    Output {
        name: "speed-delta-arithmetic",
        run: crate::appendix::speed::study::speed_delta_arithmetic,
    },
    Output {
        name: "feature-map-normaliser",
        run: crate::m3::feature_map::study::feature_map_normaliser,
    },
    Output {
        name: "feature-map-recall",
        run: crate::m3::feature_map::study::feature_map_recall,
    },
    Output {
        name: "feature-map-capacity",
        run: crate::m3::feature_map::study::feature_map_capacity,
    },
    Output {
        name: "walkthrough-agreement",
        run: crate::m3::walkthrough::study::walkthrough_agreement,
    },
    // Chapter "After the paper".
    Output {
        name: "regression-stream",
        run: crate::after::regression::study::stream_table,
    },
    Output {
        name: "lm-results",
        run: crate::paper::language_model::study::results_table,
    },
    Output {
        name: "spectrum-parity",
        run: crate::after::spectrum::study::parity_table,
    },
    Output {
        name: "spectrum-tracking",
        run: crate::after::spectrum::tracking::study::tracking_table,
    },
    Output {
        name: "after-equivalence",
        run: crate::after::family::study::equivalence_table,
    },
    Output {
        name: "after-editing",
        run: crate::after::family::study::editing_table,
    },
    Output {
        name: "production-equivalence",
        run: crate::after::production::study::production_table,
    },
    Output {
        name: "after-recall",
        run: crate::after::recall::study::recall_table,
    },
    Output {
        name: "after-mqar",
        run: crate::after::recall::zoology_study::mqar_table,
    },
    Output {
        name: "after-mqar-state",
        run: crate::after::recall::zoology_state::state_table,
    },
    Output {
        name: "after-mqar-rewrite",
        run: crate::after::recall::rewrite_study::rewrite_table,
    },
    Output {
        name: "after-fading",
        run: crate::after::family::study::fading_tables,
    },
];

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
