//! Every listing that takes data, fed random bad inputs: NaN, ±∞, huge
//! but finite entries (whose products overflow), tiny ones (whose squares
//! underflow), all-zero and negative rows (normalisers at or below zero),
//! wrong shapes, empty sequences, chunk size 0 and chunks longer than the
//! sequence, gates and write strengths of exactly 0 and 1. Each call must
//! return Ok with only finite numbers or a clear `InputError`; never a
//! panic, never a NaN.
//!
//! The cases come from a seeded generator, so a failure names a case that
//! can be replayed; each test also checks that both outcomes occur, so it
//! cannot pass by rejecting everything or by never meeting a bad input.

use listings::after::family::{Rule, rule_chunkwise, rule_recurrent};
use listings::after::regression::{
    OneStep, least_squares_memory, one_step_memory, stream_loss,
};
use listings::after::spectrum::{delta_product_recurrent, parity_reads};
use listings::fast::{
    KvCacheF32, LinearStateF32,
    baselines::{
        linear_attention_memory_first_f32, linear_attention_parallel_f32,
        linear_attention_scores_first_f32, softmax_attention_causal_f32,
    },
    delta_rule::{delta_rule_chunkwise_f32, delta_rule_recurrent_f32},
    linear_attention::{
        linear_attention_chunkwise_f32, linear_attention_recurrent_f32,
    },
};
use listings::input::InputError;
use listings::m3::attention::{
    Attention, Mask, Projections, aligned_probe, softmax_attention,
};
use listings::m3::delete_softmax::{
    kernel_attention, linear_attention_memory_first,
    linear_attention_scores_first, softmax_kernel,
};
use listings::m3::fast_weight_memory::{
    causal_linear_attention, fast_weight_loop, fast_weight_programmer,
    linear_attention_parallel, linear_attention_recurrent,
};
use listings::m3::feature_map::normaliser::causal_denominators;
use listings::m3::feature_map::recall::{Map, read_back, recall_probe};
use listings::m3::schedules::linear_attention_chunkwise;
use listings::m3::walkthrough::{
    FastWeightLayer, causal_linear_attention_product, linear_attention_one_shot,
};
use listings::paper::capacity::sum_rule_recall;
use listings::paper::capacity_sweep::{
    delta_rule_recall, setting2_point, sweep_point,
};
use listings::paper::delta_rule::{
    delta_rule_chunkwise, delta_rule_recurrent, write_strength,
};
use listings::paper::fwp::{
    attention_without_softmax, fast_weight_programmer_with, linearised_softmax,
};
use listings::phi::{FeatureMap, elu_plus_one};
use ndarray::{Array1, Array2, ArrayRef2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// One call's inputs, in f64; `Case::f32` rounds them for the fast forms.
#[derive(Clone, Debug)]
struct Case {
    label: String,
    q: Array2<f64>,
    k: Array2<f64>,
    v: Array2<f64>,
    beta: Array1<f64>,
    chunk: usize,
    target: usize,
}

/// The largest finite number of the type under test, and a "huge" one:
/// finite, but its square overflows.
#[derive(Clone, Copy)]
struct Range {
    max: f64,
    huge: f64,
    tiny: f64,
}

const F64: Range = Range {
    max: f64::MAX,
    huge: 1e160,
    tiny: 1e-160,
};
const F32: Range = Range {
    max: f32::MAX as f64,
    huge: 1e20,
    tiny: 1e-25,
};

const CASES: u64 = 400;

/// The seeded cases: clean inputs (positive ones half the time, so that
/// linear attention has something to read), then one kind of damage.
fn cases(range: Range) -> impl Iterator<Item = Case> {
    (0..CASES).map(move |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = rng.random_range(0..=6);
        let d = rng.random_range(0..=4);
        let m = rng.random_range(0..=3);
        let positive = rng.random_bool(0.5);
        let draw = |rows: usize, cols: usize, rng: &mut ChaCha8Rng| {
            Array2::from_shape_fn((rows, cols), |_| {
                let x: f64 = rng.random_range(-2.0..2.0);
                if positive { x.abs() + 0.1 } else { x }
            })
        };
        let (nk, dk, nv) = match rng.random_range(0..10) {
            0 => (n + 1, d, n),
            1 => (n, d + 1, n),
            2 => (n, d, n + 1),
            _ => (n, d, n),
        };
        let mut q = draw(n, d, &mut rng);
        let mut k = draw(nk, dk, &mut rng);
        let mut v = draw(nv, m.max(1), &mut rng);
        let mut beta =
            Array1::from_shape_fn(nk, |_| rng.random_range(0.0..1.0));
        let chunk = [0, 1, 2, 3, 4, 100][rng.random_range(0..6)];
        let target = rng.random_range(0..=n);
        let damage = rng.random_range(0..12);
        let which = rng.random_range(0..3);
        let label = match damage {
            0 => "clean".to_string(),
            1 | 2 => {
                let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
                    [rng.random_range(0..3)];
                let a = operand(which, &mut q, &mut k, &mut v);
                if !a.is_empty() {
                    let at = (
                        rng.random_range(0..a.nrows()),
                        rng.random_range(0..a.ncols()),
                    );
                    a[at] = special;
                }
                format!("{special} in operand {which}")
            }
            3 => {
                q *= range.huge;
                k *= range.huge;
                "huge q and k".to_string()
            }
            4 => {
                v *= range.max / 2.0;
                k *= range.huge;
                "huge v and k".to_string()
            }
            5 => {
                let a = operand(which, &mut q, &mut k, &mut v);
                if a.nrows() > 0 {
                    let row = rng.random_range(0..a.nrows());
                    a.row_mut(row).fill(0.0);
                }
                format!("a zero row in operand {which}")
            }
            6 => {
                q.mapv_inplace(|x| -x.abs());
                k.mapv_inplace(|x| x.abs());
                "negative q, positive k".to_string()
            }
            7 => {
                beta.mapv_inplace(|b| b * range.huge);
                "huge beta".to_string()
            }
            8 => {
                q.fill(range.max);
                k.fill(range.max);
                v.fill(range.max);
                "every entry the largest finite number".to_string()
            }
            9 => {
                if !beta.is_empty() {
                    beta[0] = f64::NAN;
                }
                "NaN in beta".to_string()
            }
            10 => {
                q *= range.tiny;
                k *= range.tiny;
                "tiny q and k".to_string()
            }
            _ => {
                beta.mapv_inplace(|b| if b < 0.5 { 0.0 } else { 1.0 });
                "beta (and gates 1 − beta) exactly 0 or 1".to_string()
            }
        };
        let label = format!(
            "case {seed}: q {:?}, k {:?}, v {:?}, chunk {chunk}, \
             target {target}, {label}",
            q.dim(),
            k.dim(),
            v.dim()
        );
        Case {
            label,
            q,
            k,
            v,
            beta,
            chunk,
            target,
        }
    })
}

/// Operand 0, 1 or 2: q, k or v.
fn operand<'a>(
    which: usize,
    q: &'a mut Array2<f64>,
    k: &'a mut Array2<f64>,
    v: &'a mut Array2<f64>,
) -> &'a mut Array2<f64> {
    match which {
        0 => q,
        1 => k,
        _ => v,
    }
}

/// Only finite numbers in a result.
trait AllFinite {
    fn all_finite(&self) -> bool;
}

impl AllFinite for Array2<f64> {
    fn all_finite(&self) -> bool {
        self.iter().all(|x| x.is_finite())
    }
}

impl AllFinite for Array2<f32> {
    fn all_finite(&self) -> bool {
        self.iter().all(|x| x.is_finite())
    }
}

impl AllFinite for Array1<f64> {
    fn all_finite(&self) -> bool {
        self.iter().all(|x| x.is_finite())
    }
}

impl AllFinite for Attention {
    fn all_finite(&self) -> bool {
        self.weights.all_finite() && self.output.all_finite()
    }
}

/// Run `f` on every case: Ok and finite, or a clear error; never a panic.
/// Both outcomes must occur.
fn never_nan_nor_panic<R: AllFinite>(
    range: Range,
    f: impl Fn(&Case) -> Result<R, InputError>,
) {
    let (mut ok, mut err) = (0, 0);
    for case in cases(range) {
        match catch_unwind(AssertUnwindSafe(|| f(&case))) {
            Err(_) => panic!("{}: the listing panicked", case.label),
            Ok(Ok(r)) => {
                assert!(r.all_finite(), "{}: Ok with a NaN or ±∞", case.label);
                ok += 1;
            }
            Ok(Err(e)) => {
                let msg = e.to_string();
                assert!(msg.len() > 20, "{}: unclear error {msg}", case.label);
                err += 1;
            }
        }
    }
    assert!(ok > 10 && err > 10, "{ok} Ok and {err} errors");
}

fn f32s(a: &Array2<f64>) -> Array2<f32> {
    a.mapv(|x| x as f32)
}

fn elu(x: &ArrayRef2<f64>) -> Array2<f64> {
    elu_plus_one(x)
}

fn identity(x: &ArrayRef2<f64>) -> Array2<f64> {
    x.to_owned()
}

/// Projections from d_model = the width of q to d = m = 2, the same for
/// every case.
fn slow(d_model: usize) -> Projections {
    let w = |rows| {
        Array2::from_shape_fn((rows, d_model), |(i, j)| {
            ((i * 7 + j * 3) % 5) as f64 / 5.0 - 0.4
        })
    };
    Projections {
        w_q: w(2),
        w_k: w(2),
        w_v: w(2),
    }
}

// Chapter "Attention, from scratch".

#[test]
fn softmax_attention_never_returns_nan_nor_panics() {
    for mask in [Mask::None, Mask::Causal] {
        never_nan_nor_panic(F64, |c| softmax_attention(&c.q, &c.k, &c.v, mask));
    }
}

#[test]
fn projections_never_return_nan_nor_panic() {
    never_nan_nor_panic(F64, |c| {
        let qkv = slow(4).project(&c.q)?;
        Ok(ndarray::concatenate![ndarray::Axis(1), qkv.q, qkv.k, qkv.v])
    });
}

#[test]
fn aligned_probe_never_returns_nan_nor_panics() {
    never_nan_nor_panic(F64, |c| {
        let p = aligned_probe(&c.k, &c.v, c.target, 3.0)?;
        let all = [p.weight_on_target, p.retrieval_error];
        Ok(Array1::from_iter(p.weights.iter().copied().chain(all)))
    });
}

// Chapter "Delete the softmax".

#[test]
fn kernel_attention_never_returns_nan_nor_panics() {
    let dot_kernel =
        |a: &ndarray::ArrayRef1<f64>, b: &ndarray::ArrayRef1<f64>| a.dot(b);
    for mask in [Mask::None, Mask::Causal] {
        never_nan_nor_panic(F64, |c| {
            kernel_attention(&c.q, &c.k, &c.v, mask, softmax_kernel)
        });
        never_nan_nor_panic(F64, |c| {
            kernel_attention(&c.q, &c.k, &c.v, mask, dot_kernel)
        });
    }
}

#[test]
fn noncausal_linear_attention_never_returns_nan_nor_panics() {
    never_nan_nor_panic(F64, |c| {
        linear_attention_scores_first(&c.q, &c.k, &c.v)
    });
    never_nan_nor_panic(F64, |c| {
        linear_attention_memory_first(&c.q, &c.k, &c.v)
    });
}

// Chapter "That matrix is the fast-weight memory".

#[test]
fn causal_linear_attention_never_returns_nan_nor_panics() {
    never_nan_nor_panic(F64, |c| linear_attention_recurrent(&c.q, &c.k, &c.v));
    never_nan_nor_panic(F64, |c| linear_attention_parallel(&c.q, &c.k, &c.v));
    for phi in [elu, identity] {
        never_nan_nor_panic(F64, |c| {
            causal_linear_attention(&c.q, &c.k, &c.v, phi)
        });
    }
}

#[test]
fn fast_weight_loop_and_programmer_never_return_nan_nor_panic() {
    never_nan_nor_panic(F64, |c| fast_weight_loop(&c.q, &c.k, &c.v));
    never_nan_nor_panic(F64, |c| fast_weight_programmer(&c.q, &slow(4)));
}

// Chapter "The feature map φ".

#[test]
fn denominators_and_recall_never_return_nan_nor_panic() {
    never_nan_nor_panic(F64, |c| {
        Ok(causal_denominators(&c.q, &c.k)?.insert_axis(ndarray::Axis(1)))
    });
    never_nan_nor_panic(F64, |c| {
        let r = recall_probe(&c.k, &c.v, c.target, 3.0, elu)?;
        Ok(ndarray::array![r.softmax, r.linear])
    });
    for map in [
        Map::Softmax,
        Map::Phi(FeatureMap::EluPlusOne),
        Map::Phi(FeatureMap::Dpfp(1)),
    ] {
        never_nan_nor_panic(F64, |c| read_back(map, &c.k, &c.v, 3.0));
    }
}

// Chapter "Two faces of one computation".

#[test]
fn chunkwise_form_never_returns_nan_nor_panics() {
    never_nan_nor_panic(F64, |c| {
        linear_attention_chunkwise(&c.q, &c.k, &c.v, c.chunk)
    });
}

// Chapter "Code walkthrough".

#[test]
fn production_forms_never_return_nan_nor_panic() {
    for eps in [0.0, 1e-6] {
        never_nan_nor_panic(F64, |c| {
            linear_attention_one_shot(&c.q, &c.k, &c.v, elu, eps)
        });
        never_nan_nor_panic(F64, |c| {
            linear_attention_one_shot(&c.q, &c.k, &c.v, identity, eps)
        });
        never_nan_nor_panic(F64, |c| {
            causal_linear_attention_product(&c.q, &c.k, &c.v, identity, eps)
        });
    }
    never_nan_nor_panic(F64, |c| {
        let mut layer = FastWeightLayer::new(c.q.ncols(), c.v.ncols());
        let first = layer.segment(&c.q, &c.k, &c.v)?;
        let again = layer.segment(&c.q, &c.k, &c.v)?; // continues the state
        Ok(ndarray::concatenate![ndarray::Axis(0), first, again])
    });
}

/// Decode token by token at f32 with a KV cache (`linear` false) or the
/// state of linear attention fed q and k as features (`linear` true): the
/// outputs of every step, or the first step's error.
fn decode_f32(c: &Case, linear: bool) -> Result<Array2<f32>, InputError> {
    let [q, k, v] = [&c.q, &c.k, &c.v].map(f32s);
    let (d, m) = (k.ncols(), v.ncols());
    let mut out = Array2::zeros((q.nrows(), m));
    let mut cache = KvCacheF32::new(d, m, q.nrows());
    let mut state = LinearStateF32::new(d, m);
    for t in 0..q.nrows().min(k.nrows()).min(v.nrows()) {
        let [q_t, k_t, v_t] = [&q, &k, &v].map(|a| a.row(t).to_vec());
        let o = out.row_mut(t).into_slice().expect("a row of a new array");
        match linear {
            true => state.step(&q_t, &k_t, &v_t, o)?,
            false => cache.step(&q_t, &k_t, &v_t, o)?,
        }
    }
    Ok(out)
}

#[test]
fn decode_steps_never_return_nan_nor_panic() {
    never_nan_nor_panic(F32, |c| decode_f32(c, false));
    never_nan_nor_panic(F32, |c| decode_f32(c, true));
}

// Part II: the fast-weight programmer, capacity, the delta rule.

#[test]
fn paper_fwp_listings_never_return_nan_nor_panic() {
    never_nan_nor_panic(F64, |c| attention_without_softmax(&c.q, &c.k, &c.v));
    never_nan_nor_panic(F64, |c| linearised_softmax(&c.q, &c.k, &c.v));
    never_nan_nor_panic(F64, |c| {
        fast_weight_programmer_with(&c.q, &slow(4), |w| w.tanh())
    });
    never_nan_nor_panic(F64, |c| {
        fast_weight_programmer_with(&c.q, &slow(4), |w| w)
    });
}

#[test]
fn capacity_listings_never_return_nan_nor_panic() {
    never_nan_nor_panic(F64, |c| sum_rule_recall(&c.k, &c.v));
    never_nan_nor_panic(F64, |c| delta_rule_recall(&c.k, &c.v, c.chunk));
}

#[test]
fn a_capacity_point_of_no_associations_is_an_error_naming_n() {
    // Before the check, Setting 2 panicked drawing a key from 0..0.
    for map in [FeatureMap::EluPlusOne, FeatureMap::Favor(4)] {
        let sweep = sweep_point(map, 0, 1).unwrap_err();
        let setting2 = setting2_point(map, 0, 1).unwrap_err();
        for err in [sweep, setting2] {
            let named =
                matches!(err, InputError::BadParameter { name: "n", .. });
            assert!(named, "{err}");
        }
        assert!(
            sweep_point(map, 1, 1).is_ok() && setting2_point(map, 1, 1).is_ok()
        );
    }
}

#[test]
fn delta_rule_listings_never_return_nan_nor_panic() {
    never_nan_nor_panic(F64, |c| {
        Ok(delta_rule_recurrent(&c.q, &c.k, &c.v, &c.beta)?.output)
    });
    never_nan_nor_panic(F64, |c| {
        Ok(delta_rule_chunkwise(&c.q, &c.k, &c.v, &c.beta, c.chunk)?.output)
    });
    never_nan_nor_panic(F64, |c| {
        let w_beta = Array1::from_elem(c.k.ncols(), 0.5); // may not fit q
        Ok(write_strength(&c.q, &w_beta)?.insert_axis(ndarray::Axis(1)))
    });
}

// Chapter "After the paper": every rule, gates 1 − β (β as drawn, or
// damaged: then a gate outside (0, 1] or a NaN), write strengths β.

#[test]
fn update_rule_listings_never_return_nan_nor_panic() {
    let rules = |c: &Case| {
        let gate = c.beta.mapv(|b| 1.0 - b);
        let gates =
            Array2::from_shape_fn((c.k.nrows(), c.k.ncols()), |(t, _)| {
                gate.get(t).copied().unwrap_or(0.5)
            });
        [
            Rule::Sum,
            Rule::FixedDecay(gate.get(0).copied().unwrap_or(0.9)),
            Rule::ScalarDecay(gate.clone()),
            Rule::DiagonalGates(gates.clone()),
            Rule::Delta(c.beta.clone()),
            Rule::GatedDelta {
                alpha: gate,
                beta: c.beta.clone(),
            },
            Rule::Kda {
                alpha: gates,
                beta: c.beta.clone(),
            },
        ]
    };
    for r in 0..7 {
        never_nan_nor_panic(F64, |c| {
            let rule = &rules(c)[r];
            Ok::<_, InputError>(rule_recurrent(rule, &c.q, &c.k, &c.v)?.output)
        });
        never_nan_nor_panic(F64, |c| {
            let rule = &rules(c)[r];
            let read = rule_chunkwise(rule, &c.q, &c.k, &c.v, c.chunk)?;
            Ok::<_, InputError>(read.output)
        });
    }
}

// Appendix E: the f32 forms.

#[test]
fn fast_f32_forms_never_return_nan_nor_panic() {
    let f = |c: &Case| [f32s(&c.q), f32s(&c.k), f32s(&c.v)];
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        softmax_attention_causal_f32(&q, &k, &v)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        linear_attention_parallel_f32(&q, &k, &v)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        linear_attention_scores_first_f32(&q, &k, &v)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        linear_attention_memory_first_f32(&q, &k, &v)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        linear_attention_recurrent_f32(&q, &k, &v)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        linear_attention_chunkwise_f32(&q, &k, &v, c.chunk)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        let beta = c.beta.mapv(|b| b as f32);
        delta_rule_recurrent_f32(&q, &k, &v, &beta)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        let beta = c.beta.mapv(|b| b as f32);
        delta_rule_chunkwise_f32(&q, &k, &v, &beta, c.chunk)
    });
}

// The cases the issue names, one by one, with the words of the error.

fn running_example(scale: f64) -> [Array2<f64>; 3] {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut draw =
        || Array2::from_shape_fn((12, 8), |_| rng.random_range(-1.0..1.0));
    [draw() * scale, draw() * scale, draw()]
}

#[test]
fn huge_finite_queries_and_keys_are_an_overflow_not_a_nan() {
    let [q, k, v] = running_example(1e160);
    let err = softmax_attention(&q, &k, &v, Mask::Causal).err().unwrap();
    assert!(err.to_string().contains("overflow: Q Kᵀ / √d"), "{err}");
    let [phi_q, phi_k] = [elu_plus_one(&q), elu_plus_one(&k)];
    for err in [
        linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap_err(),
        linear_attention_parallel(&phi_q, &phi_k, &v).unwrap_err(),
        linear_attention_chunkwise(&phi_q, &phi_k, &v, 4).unwrap_err(),
        causal_linear_attention(&q, &k, &v, elu).unwrap_err(),
    ] {
        let msg = err.to_string();
        assert!(msg.starts_with("overflow") && msg.contains("z_t"), "{msg}");
    }
    // At ordinary scales the same calls succeed.
    let [q, k, v] = running_example(1.0);
    assert!(softmax_attention(&q, &k, &v, Mask::Causal).is_ok());
    assert!(linear_attention_chunkwise(&elu(&q), &elu(&k), &v, 4).is_ok());
}

#[test]
fn a_feature_map_that_is_not_positive_is_refused_by_causal_reads() {
    // The identity keeps negative features: the book's forms refuse the
    // first one and name it; the walkthrough's model of the published
    // code, which takes no such check, stops at the normaliser z_tᵀφ(q_t)
    // that falls to zero or below.
    let [q, k, v] = running_example(1.0);
    let negative = |err: InputError| {
        assert!(
            matches!(err, InputError::Outside { value, .. } if value < 0.0),
            "{err}: a negative feature"
        );
    };
    for result in [
        causal_linear_attention(&q, &k, &v, identity),
        linear_attention_parallel(&q, &k, &v),
        linear_attention_chunkwise(&q, &k, &v, 5),
    ] {
        negative(result.unwrap_err());
    }
    let err = causal_linear_attention_product(&q, &k, &v, identity, 0.0);
    assert!(matches!(err, Err(InputError::NonPositive { .. })));
    let f = |a: &Array2<f64>| f32s(a);
    negative(
        linear_attention_recurrent_f32(&f(&q), &f(&k), &f(&v)).unwrap_err(),
    );
    negative(
        linear_attention_chunkwise_f32(&f(&q), &f(&k), &f(&v), 5).unwrap_err(),
    );
}

#[test]
fn a_feature_row_without_a_positive_sum_is_an_error_at_f64_and_f32() {
    let [q, k, v] = running_example(1.0);
    let (phi_q, mut phi_k) = (elu(&q), elu(&k));
    phi_k.row_mut(5).fill(0.0); // a key with no feature switched on
    let beta = Array1::from_elem(12, 0.5);
    let want = |err: InputError| {
        assert_eq!(
            err,
            InputError::NonPositive {
                name: "the row sum of phi_k",
                at: 5,
                value: 0.0
            }
        );
    };
    want(
        delta_rule_recurrent(&phi_q, &phi_k, &v, &beta)
            .err()
            .unwrap(),
    );
    want(
        delta_rule_chunkwise(&phi_q, &phi_k, &v, &beta, 4)
            .err()
            .unwrap(),
    );
    let (q32, k32, v32) = (f32s(&phi_q), f32s(&phi_k), f32s(&v));
    let b32 = beta.mapv(|b| b as f32);
    want(delta_rule_recurrent_f32(&q32, &k32, &v32, &b32).unwrap_err());
    want(delta_rule_chunkwise_f32(&q32, &k32, &v32, &b32, 4).unwrap_err());
}

#[test]
fn the_retrieval_trainer_meets_bad_weights_with_an_error_not_a_nan() {
    // The fast f32 trainer, fed weights with NaN, ±∞, huge or all-zero
    // entries: Ok with a finite loss and gradient, or a TrainError.
    use listings::paper::retrieval::model::{
        FwmPhi, Layer, Params, Phi, Rule, Shape,
    };
    use listings::paper::retrieval::task::{Setting, episodes};
    use listings::paper::retrieval::train::Budget;
    use listings::trainers::retrieval::Fast;
    let layers = [
        Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))),
        Layer::Fwm(FwmPhi::Tanh),
        Layer::Linear(Phi::Dpfp(1), Rule::Delta),
        Layer::Linear(Phi::EluPlusOne, Rule::Sum),
        Layer::Softmax,
    ];
    let bad = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e20, 0.0];
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let (mut ok, mut refused) = (0, 0);
    for case in 0..100 {
        let layer = layers[case % layers.len()];
        let shape = Shape::paper(5, 4);
        let mut params = Params::init(&mut rng, shape, layer);
        let value = bad[rng.random_range(0..bad.len())];
        let tensor = rng.random_range(0..7);
        let all = rng.random_bool(0.3);
        let slice = &mut params.slices_mut()[tensor];
        if all {
            slice.fill(value);
        } else {
            let at = rng.random_range(0..slice.len());
            slice[at] = value;
        }
        let budget = Budget {
            batch: 4,
            ..Budget::paper()
        };
        let mut fast = Fast::new(layer, Setting::Repeated, &params, budget);
        let eps = episodes(case as u64, 4, 5, Setting::Repeated)
            .expect("n is at least one");
        let label =
            format!("case {case}: {} {value} in {tensor}", layer.name());
        match catch_unwind(AssertUnwindSafe(|| fast.gradient(&eps))) {
            Err(_) => panic!("{label}: panicked"),
            Ok(Ok(loss)) => {
                let grads = fast.grad.slices().concat();
                assert!(loss.is_finite(), "{label}: loss {loss}");
                assert!(grads.iter().all(|g| g.is_finite()), "{label}");
                ok += 1;
            }
            Ok(Err(e)) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
        }
    }
    assert!(ok > 0 && refused > 0, "{ok} ok, {refused} refused");
}

#[test]
fn more_episodes_than_one_batch_is_an_error_naming_them() {
    // Before the check, the fast trainer asserted (a panic).
    use listings::paper::retrieval::model::{Layer, Params, Phi, Rule, Shape};
    use listings::paper::retrieval::task::{Setting, episodes};
    use listings::paper::retrieval::train::Budget;
    use listings::trainers::retrieval::{Fast, TrainError};
    let layer = Layer::Linear(Phi::EluPlusOne, Rule::Delta);
    let params = Params::init(
        &mut listings::random::seeded(1),
        Shape::paper(5, 4),
        layer,
    );
    let budget = Budget {
        batch: 4,
        ..Budget::paper()
    };
    let mut fast = Fast::new(layer, Setting::Repeated, &params, budget);
    let five = episodes(0, 5, 5, Setting::Repeated).expect("n ≥ 1");
    let err = fast.gradient(&five).unwrap_err();
    let named = matches!(
        err,
        TrainError::Input(InputError::BadParameter {
            name: "episodes",
            value: 5,
            ..
        })
    );
    assert!(named, "{err}");
    assert!(fast.gradient(&five[..4]).is_ok());
}

#[test]
fn a_retrieval_task_or_budget_with_a_zero_count_is_an_error_naming_it() {
    // Before the checks: n = 0 panicked drawing from 0..0, max_queries = 0
    // indexed an empty list, eval_every = 0 divided by zero, and batch = 0
    // or eval_sequences = 0 averaged over nothing (a silent NaN).
    use listings::paper::retrieval::model::{Layer, Params, Phi, Rule, Shape};
    use listings::paper::retrieval::task::{Setting, episode, eval_sequence};
    use listings::paper::retrieval::train::{Budget, Reference, Stop, train};
    use listings::trainers::retrieval::{Fast, TrainError};
    let names = |e: &InputError, n: &str| matches!(e, InputError::BadParameter { name, .. } if *name == n);
    let mut rng = listings::random::seeded(3);
    for setting in [Setting::Distinct, Setting::Repeated] {
        let e = episode(&mut rng, 0, setting).unwrap_err();
        assert!(names(&e, "n"), "{e}");
        let e = eval_sequence(&mut rng, 0, setting, 5).unwrap_err();
        assert!(names(&e, "n"), "{e}");
        let e = eval_sequence(&mut rng, 3, setting, 0).unwrap_err();
        assert!(names(&e, "max_queries"), "{e}");
        assert!(episode(&mut rng, 1, setting).is_ok());
        assert!(eval_sequence(&mut rng, 1, setting, 1).is_ok());
    }
    let layer = Layer::Linear(Phi::EluPlusOne, Rule::Delta);
    let fast_refuses = |shape: Shape, budget: Budget, name: &str| {
        let params =
            Params::init(&mut listings::random::seeded(1), shape, layer);
        let mut fast = Fast::new(layer, Setting::Repeated, &params, budget);
        for err in [
            fast.try_step(&mut listings::random::seeded(2)).unwrap_err(),
            fast.evaluate_with(&mut listings::random::seeded(2))
                .unwrap_err(),
        ] {
            let named = matches!(&err, TrainError::Input(e) if names(e, name));
            assert!(named, "{name}: {err}");
        }
        let mut reference =
            Reference::new(layer, Setting::Repeated, params, budget);
        let out = train(&mut reference, &budget, 0, |_, _| {});
        let Stop::Failed(why) = out.stop else {
            panic!("{name}: {:?}", out.stop)
        };
        assert!(why.contains(&format!("{name} is 0")), "{why}");
    };
    let small = Budget {
        batch: 2,
        eval_every: 1,
        eval_sequences: 1,
        max_queries: 3,
        max_steps: 2,
        ..Budget::paper()
    };
    let zeroed = [
        ("batch", Budget { batch: 0, ..small }),
        (
            "eval_every",
            Budget {
                eval_every: 0,
                ..small
            },
        ),
        (
            "eval_sequences",
            Budget {
                eval_sequences: 0,
                ..small
            },
        ),
        (
            "max_queries",
            Budget {
                max_queries: 0,
                ..small
            },
        ),
    ];
    for (name, budget) in zeroed {
        fast_refuses(Shape::paper(4, 3), budget, name);
    }
    fast_refuses(Shape::paper(0, 3), small, "n");
    // The same trainers run with every count at least one.
    let params = Params::init(
        &mut listings::random::seeded(1),
        Shape::paper(4, 3),
        layer,
    );
    let mut fast = Fast::new(layer, Setting::Repeated, &params, small);
    assert!(fast.try_step(&mut listings::random::seeded(2)).is_ok());
    let mut reference = Reference::new(layer, Setting::Repeated, params, small);
    let out = train(&mut reference, &small, 0, |_, _| {});
    assert!(!matches!(out.stop, Stop::Failed(_)), "{:?}", out.stop);
}

// Issue 27: the classes of input an independent reference found to give a
// silent NaN, a silent wrong answer, a silent loss of accuracy or a panic.

#[test]
fn tiled_softmax_and_decode_at_f64_refuse_scores_that_overflow() {
    use listings::m3::cost::{KvCache, softmax_attention_tiled};
    // Finite queries and keys near 1e160: the plain softmax refuses them,
    // and so must the tiled form and the decode step (no NaN in an Ok).
    let [q, k, v] = running_example(1e160);
    for block in [1, 4, 12, 100] {
        let err = softmax_attention_tiled(&q, &k, &v, block).unwrap_err();
        assert!(err.to_string().contains("overflow: Q Kᵀ / √d"), "{err}");
    }
    let mut cache = KvCache::new(8, 8);
    let err = (0..12)
        .find_map(|t| cache.decode(&q.row(t), &k.row(t), &v.row(t)).err())
        .expect("an overflow at some step");
    assert!(err.to_string().starts_with("overflow"), "{err}");
    assert_eq!(cache.keys.nrows(), 0, "a refused step caches nothing");
    // Scores near 1e300 are finite: both forms then read what the plain
    // softmax reads (a near one-hot choice), no NaN.
    let [q, k, v] = running_example(1e150);
    let plain = softmax_attention(&q, &k, &v, Mask::Causal).unwrap().output;
    let tiled = softmax_attention_tiled(&q, &k, &v, 5).unwrap();
    assert!(plain.all_finite());
    assert!((&tiled - &plain).iter().all(|x| x.abs() < 1e-12));
    let mut cache = KvCache::new(8, 8);
    for t in 0..12 {
        let o = cache.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
        assert!((&o - &plain.row(t)).iter().all(|x| x.abs() < 1e-12));
    }
}

#[test]
fn f32_tiled_and_blocked_softmax_refuse_scores_that_overflow_f32() {
    use listings::fast::softmax::{
        softmax_attention_blocks_f32, softmax_attention_tiled_f32,
    };
    // Scores near 1e40 overflow f32: an error, not the running mean of the
    // values that a NaN exponent clamped to −126 would give.
    let [q, k, v] = running_example(1e20).map(|a| f32s(&a));
    let refused = |r: Result<Array2<f32>, InputError>| {
        let err = r.unwrap_err();
        assert!(matches!(err, InputError::Overflow { .. }), "{err}");
    };
    refused(softmax_attention_tiled_f32(&q, &k, &v));
    for (queries, keys) in [(1, 1), (2, 4), (4, 8), (16, 32)] {
        refused(softmax_attention_blocks_f32(&q, &k, &v, queries, keys));
    }
    // Near 1e36 the scores still fit f32: the answer is the f64 one.
    let [q, k, v] = running_example(1e18);
    let want = softmax_attention(&q, &k, &v, Mask::Causal).unwrap().output;
    let [q, k, v] = [&q, &k, &v].map(f32s);
    for (queries, keys) in [(1, 1), (4, 8), (256, 512)] {
        let got =
            softmax_attention_blocks_f32(&q, &k, &v, queries, keys).unwrap();
        let gap = (&got.mapv(f64::from) - &want).mapv(f64::abs);
        assert!(gap.iter().all(|&x| x < 1e-5), "{queries}×{keys}: {gap}");
    }
}

#[test]
fn delta_rules_read_tiny_keys_as_they_read_keys_of_unit_scale() {
    use listings::fast::rules::{rule_chunkwise_f32, rule_recurrent_f32};
    // Unit keys and queries do not depend on the scale of k and q: keys and
    // queries of 1e-160 must give the answer of keys of scale 1, to
    // rounding, in every form and at f32 (scaled to 1e-30) as at f64.
    let [q, k, v] = running_example(1.0);
    let alpha = Array1::from_shape_fn(12, |t| 0.9 + 0.008 * t as f64);
    let beta = Array1::from_shape_fn(12, |t| 0.2 + 0.06 * t as f64);
    let rules = [
        Rule::Delta(beta.clone()),
        Rule::GatedDelta {
            alpha: alpha.clone(),
            beta: beta.clone(),
        },
    ];
    for rule in &rules {
        let want = rule_recurrent(rule, &q, &k, &v).unwrap().output;
        for scale in [1e-160, 1e-300, 1e150] {
            let (qs, ks) = (&q * scale, &k * scale);
            let got = [
                rule_recurrent(rule, &qs, &ks, &v).unwrap().output,
                rule_chunkwise(rule, &qs, &ks, &v, 5).unwrap().output,
            ];
            for got in got {
                let gap = (&got - &want).mapv(f64::abs);
                let worst = gap.fold(0.0, |a: f64, &b| a.max(b));
                assert!(worst < 1e-12, "{} at {scale}: {worst}", rule.name());
            }
        }
        let (q32, k32, v32) =
            (f32s(&(&q * 1e-30)), f32s(&(&k * 1e-30)), f32s(&v));
        let got = [
            rule_recurrent_f32(rule, &q32, &k32, &v32).unwrap(),
            rule_chunkwise_f32(rule, &q32, &k32, &v32, 5).unwrap(),
        ];
        for got in got {
            let gap = (&got.mapv(f64::from) - &want).mapv(f64::abs);
            let worst = gap.fold(0.0, |a: f64, &b| a.max(b));
            assert!(worst < 1e-5, "{} at f32: {worst}", rule.name());
        }
    }
    // The sum-normalised delta rule of the paper: features of 1e-160.
    let (phi_q, phi_k) = (elu(&q), elu(&k));
    let want = delta_rule_recurrent(&phi_q, &phi_k, &v, &beta).unwrap();
    let (tq, tk) = (&phi_q * 1e-160, &phi_k * 1e-160);
    for got in [
        delta_rule_recurrent(&tq, &tk, &v, &beta).unwrap(),
        delta_rule_chunkwise(&tq, &tk, &v, &beta, 5).unwrap(),
    ] {
        let gap = (&got.output - &want.output).mapv(f64::abs);
        assert!(gap.iter().all(|&x| x < 1e-12), "{gap}");
    }
}

#[test]
fn backward_passes_refuse_what_the_forward_forms_refuse() {
    use listings::m3::schedules::{
        linear_attention_backward, linear_attention_parallel_backward,
    };
    let [q, k, v] = running_example(1.0);
    let g = running_example(2.0)[2].clone();
    let (phi_q, phi_k) = (elu(&q), elu(&k));
    type Backward =
        fn(
            &ArrayRef2<f64>,
            &ArrayRef2<f64>,
            &ArrayRef2<f64>,
            &ArrayRef2<f64>,
        ) -> Result<listings::m3::schedules::Gradients, InputError>;
    let forms: [Backward; 2] = [
        linear_attention_backward,
        linear_attention_parallel_backward,
    ];
    for backward in forms {
        // Negative features: the forward forms name the first one.
        let err = backward(&q, &k, &v, &g).err().unwrap();
        assert!(
            matches!(err, InputError::Outside { value, .. } if value < 0.0),
            "{err}"
        );
        // A query with no feature switched on: Z_t = 0, an error, no NaN.
        let mut zero_q = phi_q.clone();
        zero_q.row_mut(3).fill(0.0);
        let err = backward(&zero_q, &phi_k, &v, &g).err().unwrap();
        assert!(
            matches!(err, InputError::NonPositive { at: 3, .. }),
            "{err}"
        );
        // Features near 1e160: the denominators overflow, as forward.
        let (hq, hk) = (&phi_q * 1e160, &phi_k * 1e160);
        let err = backward(&hq, &hk, &v, &g).err().unwrap();
        assert!(err.to_string().starts_with("overflow"), "{err}");
        // Good features: finite gradients.
        let grads = backward(&phi_q, &phi_k, &v, &g).unwrap();
        assert!(grads.phi_q.all_finite() && grads.phi_k.all_finite());
        assert!(grads.v.all_finite());
    }
}

#[test]
fn affine_chunkwise_refuses_chunk_zero_and_mismatched_shapes() {
    use listings::m3::schedules::{AffineStep, affine_chunkwise};
    let step = |p: usize, m: usize| AffineStep {
        h: Array2::eye(p) * 0.5,
        b: Array2::ones((m, p)),
    };
    let steps = vec![step(3, 2), step(3, 2), step(3, 2)];
    let s0 = Array2::zeros((2, 3));
    let err = affine_chunkwise(&steps, &s0, 0).unwrap_err();
    assert!(matches!(err, InputError::BadParameter { .. }), "{err}");
    // A state of the wrong width, a transition not square, an input of
    // another shape: each an error naming the operand.
    for (steps, s0) in [
        (steps.clone(), Array2::zeros((2, 4))),
        (vec![step(3, 2), step(4, 2)], Array2::zeros((2, 3))),
        (vec![step(3, 2), step(3, 5)], Array2::zeros((2, 3))),
        (
            vec![AffineStep {
                h: Array2::zeros((3, 2)),
                b: Array2::zeros((2, 3)),
            }],
            Array2::zeros((2, 3)),
        ),
    ] {
        for chunk in [1, 2, 5] {
            let err = affine_chunkwise(&steps, &s0, chunk).unwrap_err();
            assert!(matches!(err, InputError::ShapeMismatch { .. }), "{err}");
        }
    }
    // Non-finite entries are named too; good steps give finite states.
    let mut bad = steps.clone();
    bad[1].b[[0, 0]] = f64::NAN;
    assert!(affine_chunkwise(&bad, &s0, 2).is_err());
    let states = affine_chunkwise(&steps, &s0, 2).unwrap();
    assert_eq!(states.len(), 2);
}

// The listings the first version of this file left out: the backward
// passes, the tiled softmax and its decode step at f64, the f32 tiled and
// blocked softmax, the f32 rules and the affine recurrence.

impl AllFinite for Array1<f32> {
    fn all_finite(&self) -> bool {
        self.iter().all(|x| x.is_finite())
    }
}

impl AllFinite for Vec<Array2<f64>> {
    fn all_finite(&self) -> bool {
        self.iter().all(|a| a.all_finite())
    }
}

/// A gradient of the loss for each output: v's shape (or, damaged, one
/// row short), entries from the case's seed.
fn grad_out(c: &Case) -> Array2<f64> {
    let rows = if c.label.contains("operand 2") {
        c.v.nrows().saturating_sub(1)
    } else {
        c.v.nrows()
    };
    Array2::from_shape_fn((rows, c.v.ncols()), |(i, j)| {
        ((i * 5 + j * 3) % 7) as f64 / 7.0 - 0.4
    })
}

#[test]
fn backward_passes_never_return_nan_nor_panic() {
    use listings::m3::schedules::{
        Gradients, linear_attention_backward,
        linear_attention_parallel_backward,
    };
    use listings::paper::delta_rule::delta_rule_backward;
    let all = |g: Gradients| {
        ndarray::concatenate![ndarray::Axis(1), g.phi_q, g.phi_k, g.v]
    };
    never_nan_nor_panic(F64, |c| {
        linear_attention_backward(&c.q, &c.k, &c.v, &grad_out(c)).map(all)
    });
    never_nan_nor_panic(F64, |c| {
        let g = grad_out(c);
        linear_attention_parallel_backward(&c.q, &c.k, &c.v, &g).map(all)
    });
    never_nan_nor_panic(F64, |c| {
        let g = delta_rule_backward(&c.q, &c.k, &c.v, &c.beta, &grad_out(c))?;
        let beta = g.beta.insert_axis(ndarray::Axis(1));
        Ok(ndarray::concatenate![
            ndarray::Axis(1),
            g.q_bar,
            g.k_bar,
            g.v,
            beta
        ])
    });
}

#[test]
fn tiled_softmax_and_its_decode_step_never_return_nan_nor_panic() {
    use listings::m3::cost::{KvCache, softmax_attention_tiled};
    never_nan_nor_panic(F64, |c| {
        softmax_attention_tiled(&c.q, &c.k, &c.v, c.chunk)
    });
    never_nan_nor_panic(F64, |c| {
        let mut cache = KvCache::new(c.q.ncols(), c.v.ncols());
        let mut out = Array2::zeros((c.q.nrows(), c.v.ncols()));
        for t in 0..c.q.nrows().min(c.k.nrows()).min(c.v.nrows()) {
            let o = cache.decode(&c.q.row(t), &c.k.row(t), &c.v.row(t))?;
            ndarray::Zip::from(out.row_mut(t))
                .and(&o)
                .for_each(|a, &b| {
                    *a = b;
                });
        }
        Ok(out)
    });
}

#[test]
fn f32_tiled_and_blocked_softmax_never_return_nan_nor_panic() {
    use listings::fast::softmax::{
        softmax_attention_blocks_f32, softmax_attention_tiled_f32,
    };
    let f = |c: &Case| [f32s(&c.q), f32s(&c.k), f32s(&c.v)];
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        softmax_attention_tiled_f32(&q, &k, &v)
    });
    never_nan_nor_panic(F32, |c| {
        let [q, k, v] = f(c);
        // Blocks of chunk queries × 2 chunk keys (chunk 0: refused).
        softmax_attention_blocks_f32(&q, &k, &v, c.chunk, 2 * c.chunk)
    });
}

#[test]
fn f32_rules_never_return_nan_nor_panic() {
    use listings::fast::rules::{rule_chunkwise_f32, rule_recurrent_f32};
    let f = |c: &Case| [f32s(&c.q), f32s(&c.k), f32s(&c.v)];
    let rules = |c: &Case| {
        let gate = c.beta.mapv(|b| 1.0 - b);
        let gates =
            Array2::from_shape_fn((c.k.nrows(), c.k.ncols()), |(t, _)| {
                gate.get(t).copied().unwrap_or(0.5)
            });
        [
            Rule::Sum,
            Rule::ScalarDecay(gate.clone()),
            Rule::Delta(c.beta.clone()),
            Rule::GatedDelta {
                alpha: gate,
                beta: c.beta.clone(),
            },
            Rule::Kda {
                alpha: gates,
                beta: c.beta.clone(),
            },
        ]
    };
    for r in 0..5 {
        never_nan_nor_panic(F32, |c| {
            let [q, k, v] = f(c);
            rule_recurrent_f32(&rules(c)[r], &q, &k, &v)
        });
        never_nan_nor_panic(F32, |c| {
            let [q, k, v] = f(c);
            rule_chunkwise_f32(&rules(c)[r], &q, &k, &v, c.chunk)
        });
    }
}

#[test]
fn the_affine_recurrence_never_returns_nan_nor_panics() {
    use listings::m3::schedules::{AffineStep, affine_chunkwise};
    // Steps from the case: H_t = I − β_t k_t k_tᵀ (p = the width of k),
    // B_t = v_t k_tᵀ, S_0 from q's first rows (the wrong shape when the
    // widths of q and k differ, or q has too few rows).
    never_nan_nor_panic(F64, |c| {
        let (p, m) = (c.k.ncols(), c.v.ncols());
        let steps: Vec<AffineStep> = (0..c.k.nrows().min(c.v.nrows()))
            .map(|t| {
                let (k, v) = (c.k.row(t), c.v.row(t));
                let beta = c.beta.get(t).copied().unwrap_or(0.5);
                let outer = |a: &ndarray::ArrayRef1<f64>, b| {
                    let a = a.view().insert_axis(ndarray::Axis(1));
                    a.dot(&ndarray::ArrayView1::insert_axis(
                        b,
                        ndarray::Axis(0),
                    ))
                };
                AffineStep {
                    h: Array2::eye(p) - outer(&k, k.view()) * beta,
                    b: outer(&v, k.view()),
                }
            })
            .collect();
        let rows = m.min(c.q.nrows());
        let s0 = c.q.slice(ndarray::s![..rows, ..]).to_owned();
        affine_chunkwise(&steps, &s0, c.chunk)
    });
}
// Part III: the one-step rules and the least-squares memory over a stream
// (k, v), the parity layer (bits from the signs of q, the key k's first
// row) and DeltaProduct (β as drawn, doubled into [0, 2]).

#[test]
fn part_three_listings_never_return_nan_nor_panic() {
    let first = |c: &Case| c.beta.first().copied().unwrap_or(0.5);
    let rules = |c: &Case| {
        [
            OneStep::Sum,
            OneStep::Delta(first(c)),
            OneStep::GatedDelta {
                alpha: 1.0 - first(c),
                beta: first(c),
            },
            OneStep::Implicit(first(c) * 100.0),
        ]
    };
    for r in 0..4 {
        never_nan_nor_panic(F64, |c| one_step_memory(rules(c)[r], &c.k, &c.v));
    }
    never_nan_nor_panic(F64, |c| least_squares_memory(&c.k, &c.v));
    never_nan_nor_panic(F64, |c| {
        let memory = Array2::zeros((c.v.ncols(), c.k.ncols()));
        let loss = stream_loss(&memory, &c.k, &c.v)?;
        Ok::<_, InputError>(Array1::from_elem(1, loss))
    });
    never_nan_nor_panic(F64, |c| {
        let bits: Vec<u8> = c.q.iter().map(|&x| u8::from(x > 0.0)).collect();
        let key = c.k.rows().into_iter().next().map(|k| {
            let length = k.dot(&k).sqrt(); // unit when it can be
            match length.is_finite() && length > 0.0 {
                true => &k / length,
                false => k.to_owned(),
            }
        });
        parity_reads(&bits, &key.unwrap_or_default(), 2.0)
    });
    for n_h in [1, 2] {
        never_nan_nor_panic(F64, |c| {
            let beta = &c.beta * 2.0;
            let tokens = c.q.nrows().min(c.k.nrows() / n_h); // n_h rows each
            let q = c.q.slice(ndarray::s![..tokens, ..]);
            delta_product_recurrent(&q, &c.k, &c.v, &beta, n_h)
        });
    }
}

/// The one-token steps, fed operands of the wrong length and non-finite
/// numbers: each returns an error naming the operand, and leaves a memory
/// it refuses to write as it was; with good operands each returns Ok.
#[test]
fn every_one_token_step_refuses_mismatched_and_non_finite_operands() {
    use listings::after::family::rule_step;
    use listings::after::regression::{
        gated_delta_as_two_steps, gradient_step, implicit_step,
        linear_loss_gradient,
    };
    use listings::after::spectrum::{delta_product_step, householder_product};
    use listings::m3::fast_weight_memory::fast_weight_write;
    use listings::m3::schedules::AffineStep;
    use listings::paper::delta_rule::{
        decayed_write_step, delta_rule_step, gated_rule_step,
        regression_gradient, sum_normalise,
    };
    let (m, p) = (2, 3);
    let k = Array1::from_vec(vec![0.6, 0.8, 0.0]);
    let v = Array1::from_vec(vec![1.0, -1.0]);
    let alpha = Array1::from_elem(p, 0.9);
    let start = Array2::from_elem((m, p), 0.25);
    // Each step once with good operands and once with each bad variant:
    // (k, v, a number) swapped for a too-long k, a too-short v, NaN in k
    // and an infinite number.
    type Step = dyn Fn(
        &mut Array2<f64>,
        &Array1<f64>,
        &Array1<f64>,
        f64,
    ) -> Result<(), InputError>;
    let steps: Vec<(&str, Box<Step>)> = vec![
        (
            "fast_weight_write",
            Box::new(|s, k, v, _| fast_weight_write(s, v, k)),
        ),
        (
            "delta_rule_step",
            Box::new(|s, k, v, b| delta_rule_step(s, k, v, b).map(|_| ())),
        ),
        (
            "gated_rule_step",
            Box::new(|s, k, v, b| gated_rule_step(s, k, v, b)),
        ),
        (
            "decayed_write_step",
            Box::new(|s, k, v, a| decayed_write_step(s, k, v, a)),
        ),
        (
            "rule_step",
            Box::new(move |s, k, v, b| {
                rule_step(s, k, v, &alpha, b, 1.0)?;
                rule_step(s, k, v, &Array1::ones(4), b, 1.0) // a gate too many
                    .map(|_| panic!("four gates for three features"))
                    .or(Ok(()))
            }),
        ),
        (
            "rwkv7_step",
            Box::new(|s, k, v, b| {
                let gate = Array1::from_elem(k.len(), b);
                listings::after::production::rwkv7_step(
                    s, &gate, &gate, k, k, v,
                )
            }),
        ),
        (
            "gradient steps",
            Box::new(|s, k, v, b| {
                let g = regression_gradient(s, k, v)?;
                gradient_step(s, &g, b)?;
                let g = linear_loss_gradient(s, k, v)?;
                gradient_step(s, &g, b)?;
                gated_delta_as_two_steps(s, k, v, 0.9, b)?;
                implicit_step(s, k, v, b)
            }),
        ),
        (
            "delta_product_step",
            Box::new(|s, k, v, b| {
                let keys = k.view().insert_axis(ndarray::Axis(0));
                let values = v.view().insert_axis(ndarray::Axis(0));
                let betas = Array1::from_elem(1, b);
                householder_product(&keys, &betas)?;
                delta_product_step(s, &keys, &values, &betas)
            }),
        ),
        (
            "AffineStep",
            Box::new(|s, k, v, b| {
                use ndarray::Axis;
                let outer = |a: &Array1<f64>, c: &Array1<f64>| {
                    a.view()
                        .insert_axis(Axis(1))
                        .dot(&c.view().insert_axis(Axis(0)))
                };
                let step = AffineStep {
                    h: Array2::eye(k.len()) * b - outer(k, k), // I b − k kᵀ
                    b: outer(v, k),                            // v kᵀ
                };
                *s = step.then(&step)?.apply(s)?;
                Ok(())
            }),
        ),
    ];
    let mut nan_k = k.clone();
    nan_k[1] = f64::NAN;
    let bad = [
        ("k too long", Array1::zeros(p + 1), v.clone(), 0.5),
        ("v too short", k.clone(), Array1::zeros(m - 1), 0.5),
        ("NaN in k", nan_k, v.clone(), 0.5),
        ("infinite number", k.clone(), v.clone(), f64::INFINITY),
    ];
    for (name, step) in &steps {
        let mut s = start.clone();
        step(&mut s, &k, &v, 0.5).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(s.iter().all(|x| x.is_finite()), "{name}");
        for (what, k, v, x) in &bad {
            if *name == "fast_weight_write" && what.starts_with("infinite") {
                continue; // it takes no number
            }
            let mut s = start.clone();
            let err = step(&mut s, k, v, *x);
            assert!(err.is_err(), "{name}, {what}: no error");
            assert_eq!(s, start, "{name}, {what}: wrote before refusing");
        }
    }
    // Sum normalisation: features with no positive sum are an error.
    for x in [[0.0, 0.0], [-1.0, 0.5], [f64::NAN, 1.0]] {
        assert!(sum_normalise(&Array1::from_vec(x.to_vec())).is_err());
    }
}

// Chapter "The rules in production": RWKV-7 with decays 1 − β, rates β
// (β as drawn, or damaged: then out of range or NaN), removal and
// replacement keys k (a zero row of k: a removal key of length zero);
// DeltaProduct in chunks.

#[test]
fn production_listings_never_return_nan_nor_panic() {
    use listings::after::production::{
        Rwkv7, delta_product_chunkwise, rwkv7_chunkwise, rwkv7_recurrent,
    };
    let numbers = |c: &Case| {
        let per_token = |f: fn(f64) -> f64| {
            Array2::from_shape_fn(c.k.dim(), |(t, _)| {
                c.beta.get(t).copied().map(f).unwrap_or(0.5)
            })
        };
        Rwkv7 {
            alpha: per_token(|b| 1.0 - b),
            zeta: per_token(|b| b),
            removal: c.k.clone(),
            replacement: c.k.clone(),
        }
    };
    never_nan_nor_panic(F64, |c| {
        Ok::<_, InputError>(rwkv7_recurrent(&c.q, &c.v, &numbers(c))?.output)
    });
    never_nan_nor_panic(F64, |c| {
        let read = rwkv7_chunkwise(&c.q, &c.v, &numbers(c), c.chunk)?;
        Ok::<_, InputError>(read.output)
    });
    for n_h in [1, 2] {
        never_nan_nor_panic(F64, |c| {
            let beta = &c.beta * 2.0;
            let tokens = c.q.nrows().min(c.k.nrows() / n_h); // n_h rows each
            let q = c.q.slice(ndarray::s![..tokens, ..]);
            delta_product_chunkwise(&q, &c.k, &c.v, &beta, n_h, c.chunk)
        });
    }
}

#[test]
fn language_model_listings_never_return_nan_nor_panic() {
    use listings::paper::language_model::{Norms, delta_layer};
    for (sum, attention) in
        [(true, false), (false, false), (true, true), (false, true)]
    {
        let norms = Norms { sum, attention };
        never_nan_nor_panic(F64, |c| {
            delta_layer(&c.q, &c.k, &c.v, &c.beta, norms)
        });
    }
}

// Chapter "One recurrence, six rules", recall in Zoology's setting: the
// two-layer models' forward and backward pass on weights and sequences
// that do not fit, weights that are not finite, and weights so large that
// their products overflow.

fn mqar_meets_bad_input_with_an_error<F>(scale: F, huge: F)
where
    F: num_traits::Float + std::fmt::Debug + Default,
{
    use listings::after::recall::model::Mixer;
    use listings::after::recall::mqar::Mqar;
    use listings::after::recall::zoology::{Net, Params, Work, run_mqar};
    let task = Mqar {
        vocab: 16,
        pairs: 2,
        len: 12,
    };
    let mut rng = listings::random::seeded(7);
    let seq = task.sample(&mut rng);
    let (mut refused, mut accepted) = (0, 0);
    let mut nets: Vec<Net> =
        Mixer::ALL.iter().map(|&m| Net::new(m, 16, 4)).collect();
    nets.push(Net::new(Mixer::Window(3), 16, 4));
    nets.push(Net {
        mixers: [Mixer::GatedDelta, Mixer::Window(3)],
        ..Net::new(Mixer::GatedDelta, 16, 4)
    });
    for net in nets {
        let mixer = net.name();
        let params: Params<F> = Params::init(&mut rng, net);
        let mut work = Work::default();
        let mut grad = Params {
            w: vec![F::zero(); params.w.len()],
        };
        let scored = run_mqar(
            net,
            task,
            &params,
            &seq,
            Some((&mut grad, scale)),
            &mut work,
        )
        .unwrap_or_else(|e| panic!("{mixer:?}: good input: {e}"));
        assert!(scored.loss.is_finite(), "{mixer:?}");
        accepted += 1;
        let mut nan = params.clone();
        nan.w[3] = F::nan();
        let mut short = params.clone();
        short.w.pop();
        let mut large = params.clone();
        large.w.iter_mut().for_each(|x| *x = *x * huge);
        let mut token = seq.clone();
        token.tokens[5] = task.vocab;
        let mut query = seq.clone();
        query.queries[0].0 = task.len;
        let mut cut = seq.clone();
        cut.tokens.pop();
        let other = Net { vocab: 32, ..net };
        let narrow = Net { d: 0, ..net };
        let shut = Net {
            mixers: [net.mixers[0], Mixer::Window(0)],
            ..net
        };
        let bad: [(&str, Net, &Params<F>, _); 8] = [
            ("a NaN weight", net, &nan, &seq),
            ("a weight too few", net, &short, &seq),
            ("a token outside the vocabulary", net, &params, &token),
            ("a query past the end", net, &params, &query),
            ("a token too few", net, &params, &cut),
            ("another vocabulary", other, &params, &seq),
            ("width 0", narrow, &params, &seq),
            ("a window of no tokens", shut, &params, &seq),
        ];
        for (what, net, params, seq) in bad {
            let mut grad = grad.clone();
            let r = run_mqar(
                net,
                task,
                params,
                seq,
                Some((&mut grad, scale)),
                &mut work,
            );
            assert!(r.is_err(), "{mixer:?}, {what}: no error");
            refused += 1;
        }
        // Huge weights: an error, or a finite loss and finite gradients.
        let mut grad = grad.clone();
        match run_mqar(
            net,
            task,
            &large,
            &seq,
            Some((&mut grad, scale)),
            &mut work,
        ) {
            Ok(s) => {
                assert!(
                    s.loss.is_finite(),
                    "{mixer:?}: huge weights, NaN loss"
                );
                assert!(
                    grad.w.iter().all(|g| g.is_finite()),
                    "{mixer:?}: huge weights, NaN gradient"
                );
                accepted += 1;
            }
            Err(_) => refused += 1,
        }
    }
    assert!(refused > 0 && accepted > 0);
}

#[test]
fn the_zoology_models_meet_bad_input_with_an_error_at_f64_and_f32() {
    mqar_meets_bad_input_with_an_error(1.0f64, 1e150);
    mqar_meets_bad_input_with_an_error(1.0f32, 1e18);
}

#[test]
fn feature_maps_never_return_nan_nor_panic() {
    // ν comes from the case's chunk size (0, 1, 2, 3, 4 or 100), so it is
    // sometimes outside 1 ≤ ν < 2d; Ω is kᵀ, whose rows match q's width
    // only when k has q's width.
    never_nan_nor_panic(F64, |c| {
        FeatureMap::Dpfp(c.chunk).apply(&c.q, &Array2::zeros((0, 0)))
    });
    never_nan_nor_panic(F64, |c| {
        let omega = c.k.t().to_owned();
        let r = omega.ncols() + c.chunk % 2; // a wrong r half the time
        FeatureMap::Favor(r).apply(&c.q, &omega)
    });
    never_nan_nor_panic(F64, |c| {
        FeatureMap::EluPlusOne.apply(&c.q, &Array2::zeros((0, 0)))
    });
}

#[test]
fn a_feature_maps_bad_parameter_or_input_is_an_error_naming_it() {
    use listings::appendix::primer::correlated_keys;
    use listings::linalg::orthonormal_keys;
    use listings::paper::feature_maps::{dpfp_plane, favor_spread};
    use listings::phi::{dpfp, favor_plus};
    let x = ndarray::array![0.5, -1.0];
    let named = |e: InputError, name: &str| match e {
        InputError::BadParameter { name: n, .. }
        | InputError::NonFinite { name: n, .. }
        | InputError::Overflow { name: n, .. }
        | InputError::Outside { name: n, .. } => n == name,
        InputError::ShapeMismatch { left, .. } => left.0 == name,
        _ => false,
    };
    // DPFP-ν: ν = 0 and ν = 2d are refused; ν = 2d − 1 is the widest.
    for nu in [0, 4] {
        assert!(named(dpfp(&x.view(), nu).unwrap_err(), "ν"), "ν = {nu}");
    }
    assert_eq!(dpfp(&x.view(), 3).unwrap().len(), 12);
    // A non-finite entry, and products past f64::MAX.
    let nan = ndarray::array![0.5, f64::NAN];
    assert!(named(dpfp(&nan.view(), 1).unwrap_err(), "x"));
    let huge = ndarray::array![1e200, 1e200];
    assert!(matches!(
        dpfp(&huge.view(), 1),
        Err(InputError::Overflow { .. })
    ));
    // FAVOR+: Ω with three rows for x of width 2; an exponential past f64.
    let omega = Array2::from_elem((3, 4), 0.1);
    assert!(named(favor_plus(&x.view(), &omega).unwrap_err(), "x"));
    let steep = Array2::from_elem((2, 1), 1e3);
    let up = ndarray::array![1.0, 1.0];
    let err = favor_plus(&up.view(), &steep).unwrap_err();
    assert!(matches!(err, InputError::Overflow { .. }), "{err}");
    // FeatureMap: r must be Ω's column count; a bad row is named by row.
    let omega = Array2::from_elem((2, 3), 0.1);
    let rows = ndarray::array![[0.1, 0.2], [0.3, 0.4], [0.5, f64::NAN]];
    let err = FeatureMap::Favor(2).apply(&rows, &omega).unwrap_err();
    assert!(named(err, "Ω"));
    for map in [FeatureMap::EluPlusOne, FeatureMap::Dpfp(1)] {
        let err = map.apply(&rows, &omega).unwrap_err();
        let at = matches!(err, InputError::NonFinite { at: [2, 1], .. });
        assert!(at, "{}: {err}", map.name());
    }
    // An overflow of row 1's features is placed in row 1, at its feature.
    let big = ndarray::array![[0.1, 0.2], [1e200, 1e200]];
    let err = FeatureMap::Dpfp(1).apply(&big, &omega).unwrap_err();
    let at = matches!(err, InputError::Overflow { at: [1, _], .. });
    assert!(at, "{err}");
    // The key makers: a fifth orthonormal key in ℝ⁴; ρ outside [0, 1].
    let mut rng = listings::random::seeded(0);
    assert!(named(orthonormal_keys(&mut rng, 5, 4).unwrap_err(), "n"));
    assert!(named(
        correlated_keys(&mut rng, 3, 4, 1.5).unwrap_err(),
        "ρ"
    ));
    // The chapter's studies: a one-point grid (a 0/0 spacing), a spread of
    // one draw (0/0 in its variance) and r = 0 (1/√0) are errors, not NaN.
    assert!(dpfp_plane(1, 1.0).is_err() && dpfp_plane(3, 1.0).is_ok());
    assert!(named(favor_spread(2, &[1], 1).unwrap_err(), "draws"));
    assert!(named(favor_spread(2, &[1, 0], 2).unwrap_err(), "r"));
    assert!(favor_spread(2, &[1], 2).is_ok());
    // The table of maps: width 0 or no inputs (a 0/0 share of zeros), and
    // a ν too wide for d.
    use listings::paper::feature_maps::study::feature_map_table;
    let elu = [FeatureMap::EluPlusOne];
    assert!(named(feature_map_table(&elu, 0, 5).unwrap_err(), "d"));
    assert!(named(feature_map_table(&elu, 4, 0).unwrap_err(), "inputs"));
    let wide = [FeatureMap::Dpfp(8)];
    assert!(named(feature_map_table(&wide, 4, 5).unwrap_err(), "ν"));
    assert!(feature_map_table(&elu, 4, 5).is_ok());
}

#[test]
fn a_language_model_run_the_trainer_cannot_use_is_an_error_naming_it() {
    // Before the check: heads = 0 or every = 0 divided by zero, heads that
    // do not split d dropped the rest of the width, a byte past the vocab
    // indexed past the embedding, a text no longer than a window drew from
    // an empty range, and fewer windows than a batch averaged over none
    // (a NaN score, recorded as a divergence).
    use listings::paper::language_model::study::{Run, plan};
    use listings::trainers::lm::{text::Corpus, train};
    let text = |len: usize| (0..len).map(|i| (i * 7 % 256) as u8).collect();
    let corpus = Corpus {
        train: text(400),
        valid: text(100),
        test: text(100),
    };
    let mut tiny = plan()[0];
    tiny.budget.batch = 2;
    tiny.budget.context = 8;
    tiny.budget.steps = 1;
    tiny.budget.first = 1;
    tiny.budget.every = 1;
    tiny.budget.valid_windows = 2;
    tiny.budget.test_windows = 2;
    let outcome = train(&tiny, &corpus).expect("a run it can use");
    assert!(outcome.test.is_some_and(f64::is_finite), "{outcome:?}");
    type Spoil = fn(&mut Run, &mut Corpus);
    let broken: [(&str, Spoil); 8] = [
        ("heads", |r, _| r.shape.heads = 0),
        ("d", |r, _| r.shape.heads = 3),
        ("vocab", |r, _| r.shape.vocab = 128),
        ("every", |r, _| r.budget.every = 0),
        ("batch", |r, _| r.budget.batch = 0),
        ("test_windows", |r, _| r.budget.test_windows = 1),
        ("valid text bytes", |_, c| c.valid.truncate(9)),
        ("train text bytes", |_, c| c.train.clear()),
    ];
    for (name, spoil) in broken {
        let (mut run, mut text) = (tiny, corpus.clone());
        spoil(&mut run, &mut text);
        let err = match catch_unwind(AssertUnwindSafe(|| train(&run, &text))) {
            Err(_) => panic!("{name}: the trainer panicked"),
            Ok(result) => result.expect_err(name),
        };
        let named = matches!(err, InputError::BadParameter { name: n, .. } if n == name);
        assert!(named, "{name}: {err}");
    }
}

#[test]
fn a_tracking_accuracy_over_no_sequences_is_an_error_not_a_nan() {
    use listings::after::spectrum::tracking::model::Params;
    use listings::after::spectrum::tracking::study::plan;
    use listings::trainers::tracking::last_bit_accuracy;
    let run = plan()[0];
    let params = Params::init(&mut listings::random::seeded(0), run.model);
    let err = last_bit_accuracy(&run, &params, &[]).unwrap_err();
    let named = matches!(err, InputError::BadParameter { name: "seqs", .. });
    assert!(named, "{err}");
    let one = run.model.task.sample(&mut listings::random::seeded(1), 3);
    let share = last_bit_accuracy(&run, &params, &[one]).unwrap();
    assert!(share == 0.0 || share == 1.0, "{share}");
}
