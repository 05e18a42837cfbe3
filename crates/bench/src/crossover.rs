//! Where linear attention starts to win: the fastest softmax form against
//! the fastest causal linear form, for a whole sequence (prefill) and for
//! one generated token (decode), across N, at d = m = 64 and 128, in one
//! run. Prints the decode table and the crossover lengths, and writes the
//! measurements as `listings/data/crossover.tsv`'s format: into
//! target/bench/ always, and over the committed file when asked to
//! (`cargo xtask bench crossover`).

use crate::timing::time;
use listings::appendix::speed::committed::{
    CrossoverData, DecodeTable, Family, Measured, Phase,
};
use listings::fast::{
    KvCacheF32, LinearStateF32, Path, linear_attention_chunkwise_f32,
    linear_attention_recurrent_f32, random_inputs,
    softmax_attention_causal_f32, softmax_attention_tiled_f32, to_f32,
};
use listings::measure::Machine;
use std::hint::black_box;

/// The widths of the comparison.
pub const WIDTHS: [usize; 2] = [64, 128];
/// Prefill lengths: 64 to 16384, doubling.
pub fn prefill_lengths() -> impl Iterator<Item = usize> {
    (6..=14).map(|e| 1 << e)
}
/// Decode cache lengths: 1 to 65536, doubling.
pub fn decode_lengths() -> impl Iterator<Item = usize> {
    (0..=16).map(|e| 1 << e)
}
/// The N × N softmax (1 GiB of scores at 16384) runs up to this length;
/// the tiled form beats it well before.
const MAX_N_SQUARED: usize = 4096;
/// Chunk sizes tried for the chunkwise form at each length.
const CHUNKS: [usize; 3] = [32, 64, 128];

/// Time every form of both families, both phases, both widths.
pub fn measure(command: &str) -> CrossoverData {
    let mut rows = Vec::new();
    for d in WIDTHS {
        for n in prefill_lengths() {
            prefill(d, n, &mut rows);
        }
        for t in decode_lengths() {
            decode(d, t, &mut rows);
        }
        eprintln!("crossover: d = {d} done");
    }
    let machine = Machine::now();
    CrossoverData {
        machine: format!(
            "{} ({} cores; f32 forms on {})",
            machine.cpu,
            machine.cores,
            Path::detect().name()
        ),
        date: machine.date,
        command: command.to_string(),
        rows,
    }
}

fn prefill(d: usize, n: usize, rows: &mut Vec<Measured>) {
    let [q, k, v] = random_inputs(3, n, d, d).map(|a| to_f32(&a));
    let (q, k, v) = (&q, &k, &v);
    let mut add = |family, form: String, f: &mut dyn FnMut()| {
        let seconds = time(f).median;
        rows.push(Measured {
            phase: Phase::Prefill,
            family,
            form,
            d,
            n,
            seconds,
            bytes: 0,
        });
    };
    add(Family::Softmax, "softmax tiled".into(), &mut || {
        black_box(softmax_attention_tiled_f32(q, k, v).unwrap());
    });
    if n <= MAX_N_SQUARED {
        add(Family::Softmax, "softmax N×N".into(), &mut || {
            black_box(softmax_attention_causal_f32(q, k, v).unwrap());
        });
    }
    add(Family::Linear, "recurrent".into(), &mut || {
        black_box(linear_attention_recurrent_f32(q, k, v).unwrap());
    });
    for c in CHUNKS {
        add(Family::Linear, format!("chunkwise C={c}"), &mut || {
            black_box(linear_attention_chunkwise_f32(q, k, v, c).unwrap());
        });
    }
}

/// One step at a cache of t tokens: the cache holds t − 1 tokens, each
/// call appends the t-th, reads all t, and rolls back; a batch of steps
/// per sample, so that the clock's resolution does not matter.
fn decode(d: usize, t: usize, rows: &mut Vec<Measured>) {
    let [q, k, v] = random_inputs(4, t, d, d).map(|a| to_f32(&a));
    let row = |a: &listings::ndarray::Array2<f32>, i: usize| a.row(i).to_vec();
    let mut cache = KvCacheF32::new(d, d, t);
    let mut state = LinearStateF32::new(d, d);
    let mut out = vec![0.0f32; d];
    for i in 0..t - 1 {
        let [q_i, k_i, v_i] = [&q, &k, &v].map(|a| row(a, i));
        cache.push(&k_i, &v_i).unwrap(); // the prompt: its reads are not timed
        state.step(&q_i, &k_i, &v_i, &mut out).unwrap();
    }
    let [q_t, k_t, v_t] = [&q, &k, &v].map(|a| row(a, t - 1));
    let batch = (1 << 22) / (t * 2 * d) + 1;
    let seconds = time(|| {
        for _ in 0..batch {
            cache.truncate(t - 1);
            cache.step(&q_t, &k_t, &v_t, &mut out).unwrap();
            black_box(&out);
        }
    })
    .median
        / batch as f64;
    let bytes = cache.bytes();
    rows.push(Measured {
        phase: Phase::Decode,
        family: Family::Softmax,
        form: "KV cache".into(),
        d,
        n: t,
        seconds,
        bytes,
    });
    // The state does not grow: every step is a step after t tokens, and
    // its values stay averages of the values seen.
    let batch = 1000;
    let seconds = time(|| {
        for _ in 0..batch {
            state.step(&q_t, &k_t, &v_t, &mut out).unwrap();
            black_box(&out);
        }
    })
    .median
        / batch as f64;
    rows.push(Measured {
        phase: Phase::Decode,
        family: Family::Linear,
        form: "state".into(),
        d,
        n: t,
        seconds,
        bytes: state.bytes(),
    });
}

/// The decode tables and the crossover lengths, as the bench prints them.
pub fn render(data: &CrossoverData) -> String {
    let mut out = String::new();
    for d in data.widths() {
        out += &format!("decode step, {}\n", DecodeTable(data, d));
        out += "\n";
    }
    out += &format!("where linear attention starts to win, {data}");
    out
}
