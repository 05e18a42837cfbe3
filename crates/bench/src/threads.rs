//! Thread scaling: each causal linear form on one thread and on every
//! core, its value columns split by `fast::across_value_columns`.

use listings::fast::{
    ValueForm, across_value_columns, delta_rule_chunkwise_f32,
    delta_rule_recurrent_f32, linear_attention_chunkwise_f32,
    linear_attention_recurrent_f32, random_inputs, to_f32,
};
use listings::ndarray::Array1;
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

/// One form timed by the wall clock on one thread and on every core, with
/// its value columns split by `fast::across_value_columns`.
pub struct Scaling {
    pub form: &'static str,
    pub threads: usize,
    pub one: f64,
    pub all: f64,
}

/// At N = 16384, d = 64: each causal linear form on one thread and on
/// `cores` threads, in alternating rounds, median wall-clock seconds of 5.
/// The wall clock, because the point is the time to the answer; on a
/// shared machine it is noisier than the table's CPU time.
pub fn thread_scaling(
    chunk: usize,
    delta_chunk: usize,
    cores: usize,
) -> Vec<Scaling> {
    let n = 16384;
    let [q, k, v] = random_inputs(3, n, 64, 64).map(|a| to_f32(&a));
    let beta = Array1::<f32>::from_elem(n, 0.5);
    let (q, k, beta) = (&q, &k, &beta);
    let forms: [(&'static str, &ValueForm); 4] = [
        ("recurrent", &|v| linear_attention_recurrent_f32(q, k, v)),
        ("chunkwise", &|v| {
            linear_attention_chunkwise_f32(q, k, v, chunk)
        }),
        ("delta recurrent", &|v| {
            delta_rule_recurrent_f32(q, k, v, beta)
        }),
        ("delta chunkwise", &|v| {
            delta_rule_chunkwise_f32(q, k, v, beta, delta_chunk)
        }),
    ];
    let threads = cores.max(1);
    forms
        .into_iter()
        .map(|(form, f)| {
            let run = |t: usize| {
                let start = Instant::now();
                black_box(
                    across_value_columns(&v, t, f).expect("shapes agree"),
                );
                start.elapsed().as_secs_f64()
            };
            run(1);
            run(threads); // warm-up
            let (mut one, mut all) = (Vec::new(), Vec::new());
            for _ in 0..5 {
                one.push(run(1));
                all.push(run(threads));
            }
            let median = |mut x: Vec<f64>| {
                x.sort_by(f64::total_cmp);
                x[x.len() / 2]
            };
            Scaling {
                form,
                threads,
                one: median(one),
                all: median(all),
            }
        })
        .collect()
}

pub fn render_scaling(scaling: &[Scaling]) -> String {
    let mut out = String::from(
        "threads at N = 16384, d = 64 (wall clock, value columns split \
         across threads, median of 5):\n",
    );
    for s in scaling {
        let _ = writeln!(
            out,
            "  {:<16} 1 thread {:>8.3} ms   {} threads {:>8.3} ms   speed-up {:.2}×",
            s.form,
            s.one * 1e3,
            s.threads,
            s.all * 1e3,
            s.one / s.all
        );
    }
    out
}
