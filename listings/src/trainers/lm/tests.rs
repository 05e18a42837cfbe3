use super::model::{Model, Shape, Work};
use crate::paper::language_model::study::MIXERS;
use crate::random::seeded;
use rand::Rng;

/// A tiny model: every part of the real one, few weights.
fn tiny(mixer: crate::paper::language_model::Mixer) -> Model {
    Model {
        shape: Shape {
            vocab: 7,
            d: 8,
            heads: 2,
            ff: 12,
            layers: 2,
        },
        mixer,
        context: 9,
    }
}

fn tokens(seed: u64, seqs: usize, t: usize) -> Vec<u8> {
    let mut rng = seeded(seed);
    (0..seqs * (t + 1))
        .map(|_| rng.random_range(0..7u8))
        .collect()
}

#[test]
fn every_layers_gradient_matches_central_differences() {
    for &(name, mixer) in &MIXERS {
        for seed in [1, 2] {
            let model = tiny(mixer);
            let mut w: Vec<f64> = model.init(&mut seeded(seed));
            let (seqs, t) = (2, 5);
            let toks = tokens(seed + 10, seqs, t);
            let mut work = Work::new(&model, seqs, t);
            let mut grad = vec![0.0; w.len()];
            model.loss(&w, &toks, &mut work, Some(&mut grad));
            // A small step, so that it seldom straddles a kink of relu.
            let h = 1e-6;
            // Each entry against its own size, or a thousandth of the
            // largest, whichever is larger.
            let floor = 1e-3 * grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
            let mut worst = 0.0f64;
            for i in 0..w.len() {
                let keep = w[i];
                w[i] = keep + h;
                let up = model.loss(&w, &toks, &mut work, None);
                w[i] = keep - h;
                let down = model.loss(&w, &toks, &mut work, None);
                w[i] = keep;
                let numeric = (up - down) / (2.0 * h);
                let size = numeric.abs().max(grad[i].abs()).max(floor);
                worst = worst.max((numeric - grad[i]).abs() / size);
            }
            assert!(
                worst < 1e-4,
                "{name} seed {seed}: worst relative error {worst:e}"
            );
        }
    }
}

#[test]
fn the_f32_model_agrees_with_the_f64_model() {
    for &(name, mixer) in &MIXERS {
        for seed in [3, 4] {
            let model = tiny(mixer);
            let w64: Vec<f64> = model.init(&mut seeded(seed));
            let w32: Vec<f32> = w64.iter().map(|&x| x as f32).collect();
            let (seqs, t) = (3, 9);
            let toks = tokens(seed, seqs, t);
            let (mut g64, mut g32) =
                (vec![0.0; w64.len()], vec![0.0; w64.len()]);
            let l64 = model.loss(
                &w64,
                &toks,
                &mut Work::new(&model, seqs, t),
                Some(&mut g64),
            );
            let l32 = model.loss(
                &w32,
                &toks,
                &mut Work::new(&model, seqs, t),
                Some(&mut g32),
            );
            assert!(
                (l64 - l32 as f64).abs() < 1e-5 * l64.abs(),
                "{name}: loss {l64} vs {l32}"
            );
            let scale = g64.iter().fold(0.0f64, |m, g| m.max(g.abs()));
            for (a, b) in g64.iter().zip(&g32) {
                assert!(
                    (a - *b as f64).abs() < 1e-4 * scale,
                    "{name}: {a} vs {b}"
                );
            }
        }
    }
}

use super::mixer::{self, Cache, Dims};
use crate::m3::attention::softmax_attention;
use crate::m3::fast_weight_memory::linear_attention_recurrent;
use crate::paper::language_model::{Mixer, Norms, delta_layer};
use ndarray::{Array1, Array2, s};

#[test]
fn each_heads_output_is_the_chapters_layer() {
    // The trainer's mixers in f64, head by head, against the listings:
    // softmax attention, linear attention with its normaliser, and the
    // delta layer with each setting of its two switches.
    let (seqs, t, heads, dh) = (2, 11, 2, 8);
    let d = heads * dh;
    // The plan's layers, and the linear ones again with elu+1, whose
    // features never leave the attention normaliser at zero.
    // (DPFP's sparse features can leave the delta layer's normaliser
    // near zero, where the trainer's ε shows in the third digit; that
    // layer is compared with elu+1 only.)
    let mut mixers: Vec<_> = MIXERS
        .into_iter()
        .filter(|(n, _)| *n != "delta + attn norm")
        .collect();
    for (name, m) in MIXERS {
        let phi = crate::phi::FeatureMap::EluPlusOne;
        match m {
            Mixer::Delta {
                sum_norm,
                attn_norm,
                ..
            } => mixers.push((
                name,
                Mixer::Delta {
                    phi,
                    sum_norm,
                    attn_norm,
                },
            )),
            Mixer::Sum(_) => mixers.push((name, Mixer::Sum(phi))),
            Mixer::Softmax => {}
        }
    }
    for &(name, mixer) in &mixers {
        let mut compared = 0;
        for seed in [5, 6, 7, 8] {
            let mut rng = seeded(seed);
            let p = mixer.features(dh);
            let dims = Dims {
                seqs,
                t,
                heads,
                dh,
                p,
            };
            let qkv: Vec<f64> = (0..seqs * t * 3 * d)
                .map(|_| crate::random::standard_normal(&mut rng))
                .collect();
            let beta: Vec<f64> =
                (0..seqs * t * heads).map(|_| rng.random()).collect();
            let mut u = vec![0.0; seqs * t * d];
            mixer::forward(
                mixer,
                dims,
                &qkv,
                &beta,
                &mut u,
                &mut Cache::new(mixer, dims),
            );
            let all =
                Array2::from_shape_vec((seqs * t, 3 * d), qkv.clone()).unwrap();
            let betas = Array2::from_shape_vec((seqs * t, heads), beta.clone())
                .unwrap();
            let u = Array2::from_shape_vec((seqs * t, d), u).unwrap();
            for b in 0..seqs {
                for h in 0..heads {
                    let rows = s![b * t..(b + 1) * t, h * dh..(h + 1) * dh];
                    let rows_k =
                        s![b * t..(b + 1) * t, d + h * dh..d + (h + 1) * dh];
                    let rows_v = s![
                        b * t..(b + 1) * t,
                        2 * d + h * dh..2 * d + (h + 1) * dh
                    ];
                    let (q, k, v) =
                        (all.slice(rows), all.slice(rows_k), all.slice(rows_v));
                    let want = match mixer {
                        Mixer::Softmax => {
                            softmax_attention(
                                &q,
                                &k,
                                &v,
                                crate::m3::attention::Mask::Causal,
                            )
                            .unwrap()
                            .output
                        }
                        Mixer::Sum(phi) => {
                            let omega = Array2::zeros((0, 0));
                            match linear_attention_recurrent(
                                &phi.apply(&q, &omega).unwrap(),
                                &phi.apply(&k, &omega).unwrap(),
                                &v,
                            ) {
                                Ok(y) => y,
                                Err(
                                    crate::input::InputError::NonPositive {
                                        ..
                                    },
                                ) => continue,
                                Err(e) => panic!("{name}: {e}"),
                            }
                        }
                        Mixer::Delta {
                            phi,
                            sum_norm,
                            attn_norm,
                        } => {
                            let omega = Array2::zeros((0, 0));
                            let beta: Array1<f64> = betas
                                .slice(s![b * t..(b + 1) * t, h])
                                .to_owned();
                            let norms = Norms {
                                sum: sum_norm,
                                attention: attn_norm,
                            };
                            match delta_layer(
                                &phi.apply(&q, &omega).unwrap(),
                                &phi.apply(&k, &omega).unwrap(),
                                &v,
                                &beta,
                                norms,
                            ) {
                                Ok(y) => y,
                                // DPFP's sparse features can meet no key
                                // at all: the listing refuses to divide by
                                // zero, the trainer reads 0 / ε.
                                Err(
                                    crate::input::InputError::NonPositive {
                                        ..
                                    },
                                ) => continue,
                                Err(e) => panic!("{name}: {e}"),
                            }
                        }
                    };
                    compared += 1;
                    let got =
                        u.slice(s![b * t..(b + 1) * t, h * dh..(h + 1) * dh]);
                    let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
                    for (a, w) in got.iter().zip(&want) {
                        // The trainer adds ε = 1e-6 to each normaliser; DPFP's can be small.
                        assert!(
                            (a - w).abs() < 1e-3 * scale,
                            "{name} seed {seed}: {a} vs {w}"
                        );
                    }
                }
            }
        }
        assert!(compared >= 2, "{name}: {compared} heads compared");
    }
}

#[test]
fn the_first_validation_point_and_a_divergence_retrain_to_the_committed_numbers()
 {
    // Training is deterministic on the same kind of machine (matrix
    // products take AVX2 and FMA kernels where the processor has them).
    #[cfg(target_arch = "x86_64")]
    if !(std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma"))
    {
        eprintln!("skipped: the data was made with AVX2 and FMA");
        return;
    }
    use crate::paper::language_model::study::{committed, plan};
    let corpus = super::text::corpus().unwrap_or_else(|e| panic!("{e}"));
    let records = committed().1;
    for name in ["softmax", "delta, no sum norm"] {
        let i = records.iter().position(|r| r.name == name).unwrap();
        let mut run = plan()[i];
        // Only as far as the first validation point; a small test score.
        run.budget.steps = run.budget.first;
        run.budget.test_windows = run.budget.batch;
        let outcome = super::train(&run, &corpus).unwrap();
        let want = &records[i];
        assert_eq!(outcome.diverged_at, want.diverged_at, "{name}");
        if want.diverged_at.is_none() {
            let f = |c: &(usize, f64)| format!("{}:{:.4}", c.0, c.1);
            assert_eq!(f(&outcome.curve[0]), f(&want.curve[0]), "{name}");
        }
    }
}
