//! The book's one orientation of the memory: every listing that holds a
//! memory holds it values by features, S: (m, p), writes it with v φ(k)ᵀ
//! and reads it with S φ(q), the chunkwise forms included. Shapes with
//! m ≠ p, so the transpose would not even have the right shape.

use listings::after::family::{rule_chunkwise, rule_recurrent, six_rules};
use listings::m3::delete_softmax::{
    Memory, linear_attention_memory_first, sequence_memory,
};
use listings::m3::fast_weight_memory::linear_attention_recurrent;
use listings::m3::fast_weight_memory::study::memory_trace;
use listings::m3::feature_map::recall::best_memory;
use listings::m3::schedules::chunk_step;
use listings::m3::walkthrough::FastWeightLayer;
use listings::ndarray::{Array1, Array2, ArrayView1, Axis};
use listings::paper::delta_rule::{
    delta_rule_chunkwise, delta_rule_recurrent, sum_normalise,
};
use listings::paper::retrieval::model::fwm_write;
use listings::phi::elu_plus_one;
use listings::random::{randn, seeded};

/// (N, p, m) with p ≠ m.
const SHAPES: [(usize, usize, usize); 3] = [(7, 3, 5), (12, 8, 2), (20, 4, 9)];

fn close(a: ArrayView1<f64>, b: ArrayView1<f64>) {
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-10 * (1.0 + y.abs()), "{a} vs {b}");
    }
}

/// Random positive features φ(q), φ(k): (N, p) and values v: (N, m).
fn inputs(seed: u64, n: usize, p: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    let phi_q = elu_plus_one(&randn(&mut rng, n, p));
    let phi_k = elu_plus_one(&randn(&mut rng, n, p));
    [phi_q, phi_k, randn(&mut rng, n, m)]
}

#[test]
fn every_memory_is_values_by_features_written_v_phi_k_and_read_s_phi_q() {
    for seed in 0..4 {
        for (n, p, m) in SHAPES {
            let [phi_q, phi_k, v] = inputs(seed, n, p, m);

            // The sum rule over a whole sequence: S = Vᵀ Φ_K, read S φ(q).
            let Memory { s, z } = sequence_memory(&phi_k, &v);
            assert_eq!(s.dim(), (m, p));
            let vt_phi_k = v.t().dot(&phi_k);
            for (a, b) in s.rows().into_iter().zip(vt_phi_k.rows()) {
                close(a, b);
            }
            let o = linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
            for (t, q) in phi_q.rows().into_iter().enumerate() {
                close(o.row(t), (s.dot(&q) / z.dot(&q)).view());
            }

            // The causal recurrence: S_t after each token, read S_t φ(q_t).
            let states = memory_trace(&phi_k, &v).unwrap();
            let causal =
                linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let mut z_t = Array1::<f64>::zeros(p);
            for (t, s_t) in states.iter().enumerate() {
                assert_eq!(s_t.dim(), (m, p));
                z_t += &phi_k.row(t);
                let q = phi_q.row(t);
                close(causal.row(t), (s_t.dot(&q) / z_t.dot(&q)).view());
            }

            // The chunkwise schedule's carried state, and the layer of the
            // code walkthrough that keeps its memory between segments.
            let mut carried = Memory {
                s: Array2::zeros((m, p)),
                z: Array1::zeros(p),
            };
            chunk_step(&mut carried, &phi_q, &phi_k, &v).unwrap();
            let mut layer = FastWeightLayer::new(p, m);
            layer.segment(&phi_q, &phi_k, &v).unwrap();
            for held in [&carried.s, &layer.memory.s] {
                assert_eq!(held.dim(), (m, p));
                for (a, b) in held.rows().into_iter().zip(s.rows()) {
                    close(a, b);
                }
            }

            // The delta rule: W_N: (m, p), y_N = W_N q̄_N.
            let beta = Array1::from_elem(n, 0.7);
            let delta =
                delta_rule_recurrent(&phi_q, &phi_k, &v, &beta).unwrap();
            assert_eq!(delta.memory.dim(), (m, p));
            let q_bar = sum_normalise(&phi_q.row(n - 1)).unwrap();
            close(delta.output.row(n - 1), delta.memory.dot(&q_bar).view());
            // ... and its chunkwise form, which hands back the same memory.
            let chunked =
                delta_rule_chunkwise(&phi_q, &phi_k, &v, &beta, 4).unwrap();
            assert_eq!(chunked.memory.dim(), (m, p));
            close(chunked.output.row(n - 1), chunked.memory.dot(&q_bar).view());

            // Every rule of "After the paper": W_N: (m, p), y_N = W_N q_N
            // (q at unit length for the rules that use unit keys).
            let rules = six_rules(&mut seeded(seed), n, p, None, Some(0.7));
            for rule in &rules {
                let read = rule_recurrent(rule, &phi_q, &phi_k, &v).unwrap();
                assert_eq!(read.memory.dim(), (m, p), "{}", rule.name());
                let mut q = phi_q.row(n - 1).to_owned();
                if rule.unit_keys() {
                    q /= q.dot(&q).sqrt();
                }
                close(read.output.row(n - 1), read.memory.dot(&q).view());
                let chunked =
                    rule_chunkwise(rule, &phi_q, &phi_k, &v, 4).unwrap();
                assert_eq!(chunked.memory.dim(), (m, p), "{}", rule.name());
                close(chunked.output.row(n - 1), chunked.memory.dot(&q).view());
            }

            // The best memory for these pairs, whatever rule wrote it.
            assert_eq!(best_memory(&phi_k, &v).dim(), (m, p));

            // The retrieval model's write: W: (values, features), W ← W +
            // β (v − W f) fᵀ, so a first write into W = 0 is β v fᵀ.
            let mut w = Array2::<f64>::zeros((m, p));
            let f = phi_k.row(0).to_owned();
            fwm_write(&mut w, &f, m - 1, 0.5, true);
            let mut one_hot = Array1::<f64>::zeros(m);
            one_hot[m - 1] = 0.5;
            let expected = one_hot
                .insert_axis(Axis(1))
                .dot(&f.view().insert_axis(Axis(0)));
            for (a, b) in w.rows().into_iter().zip(expected.rows()) {
                close(a, b);
            }
        }
    }
}
