//! The run as JSON, for target/bench/.

use crate::forms::{ChunkTimes, Row};
use crate::targets::delta_bound;
use crate::threads::Scaling;
use listings::measure::Machine;
use std::fmt::Write as _;

#[allow(clippy::too_many_arguments)] // one argument per part of the file
pub fn to_json(
    machine: &Machine,
    ceiling: f64,
    ceiling_points: &[(usize, f64)],
    chunk_times: &[ChunkTimes],
    rows: &[Row],
    allocations: &[(usize, usize, usize)],
    scaling: &[Scaling],
    trainer: &[crate::trainer::TrainerRow],
) -> String {
    let num = |x: f64| {
        if x.is_finite() {
            format!("{x:e}")
        } else {
            "null".to_string()
        }
    };
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"cpu\": {:?},", machine.cpu);
    let _ = writeln!(out, "  \"cores\": {},", machine.cores);
    let _ = writeln!(out, "  \"date\": {:?},", machine.date);
    let _ = writeln!(out, "  \"precision\": \"f32\",\n  \"threads\": 1,");
    let _ = writeln!(out, "  \"ceiling_gflops\": {},", num(ceiling));
    let trainer: Vec<String> = trainer
        .iter()
        .map(|r| {
            format!(
                "{{\"layer\": {:?}, \"seconds_per_step\": {}, \
                 \"reference_seconds_per_step\": {}, \"gflops\": {}}}",
                r.layer,
                num(r.fast),
                num(r.reference),
                num(r.gflops())
            )
        })
        .collect();
    let _ = writeln!(out, "  \"trainer\": [{}],", trainer.join(", "));
    if let Some(b) = delta_bound(rows, ceiling) {
        let _ = writeln!(
            out,
            "  \"delta_bound\": {{\"recurrence_percent\": {}, \
             \"extra_arithmetic\": {}, \"speedup\": {}}},",
            num(b.recurrence_percent),
            num(b.extra_arithmetic),
            num(b.speedup)
        );
    }
    let points: Vec<String> = ceiling_points
        .iter()
        .map(|(s, g)| format!("{{\"size\": {s}, \"gflops\": {}}}", num(*g)))
        .collect();
    let _ = writeln!(out, "  \"matmul\": [{}],", points.join(", "));
    let chunks: Vec<String> = chunk_times
        .iter()
        .flat_map(|(form, d, times)| {
            times.iter().map(move |(c, s)| {
                format!("{{\"form\": {form:?}, \"d\": {d}, \"n\": 4096, \"chunk\": {c}, \"seconds\": {}}}", num(*s))
            })
        })
        .collect();
    let _ = writeln!(
        out,
        "  \"chunk_sizes\": [\n    {}\n  ],",
        chunks.join(",\n    ")
    );
    let allocs: Vec<String> = allocations
        .iter()
        .map(|(d, n, c)| format!("{{\"d\": {d}, \"n\": {n}, \"calls\": {c}}}"))
        .collect();
    let _ =
        writeln!(out, "  \"recurrent_allocations\": [{}],", allocs.join(", "));
    let scaled: Vec<String> = scaling
        .iter()
        .map(|s| {
            format!(
                "{{\"form\": {:?}, \"threads\": {}, \"one_thread_s\": {}, \
                 \"all_threads_s\": {}}}",
                s.form,
                s.threads,
                num(s.one),
                num(s.all)
            )
        })
        .collect();
    let _ = writeln!(out, "  \"thread_scaling\": [{}],", scaled.join(", "));
    let entries: Vec<String> = rows
        .iter()
        .map(|r| {
            let (median, min, max, reps) = r.timing.map_or(
                ("null".into(), "null".into(), "null".into(), 0),
                |t| (num(t.median), num(t.min), num(t.max), t.reps),
            );
            format!(
                "{{\"form\": {:?}, \"causal\": {}, \"d\": {}, \"n\": {}, \
                 \"chunk\": {}, \"median_s\": {median}, \"min_s\": {min}, \
                 \"max_s\": {max}, \"reps\": {reps}, \"gflops\": {}, \
                 \"skipped\": {}}}",
                r.form,
                r.causal,
                r.d,
                r.n,
                r.chunk,
                num(r.gflops),
                r.timing.is_none()
            )
        })
        .collect();
    let _ =
        writeln!(out, "  \"rows\": [\n    {}\n  ]", entries.join(",\n    "));
    out.push('}');
    out.push('\n');
    out
}
