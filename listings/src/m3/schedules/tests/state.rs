use super::*;
use crate::m3::fast_weight_memory::fast_weight_write;

/// S_t = S_{t−1} + v_t φ(k_t)ᵀ as a function of S_{t−1}.
fn write_step(
    v: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    t: usize,
) -> impl Fn(&Array2<f64>) -> Array2<f64> {
    let (v, k) = (v.row(t).to_owned(), phi_k.row(t).to_owned());
    move |s| {
        let mut s = s.clone();
        fast_weight_write(&mut s, &v, &k).unwrap();
        s
    }
}

#[test]
fn state_jacobian_of_the_write_is_the_identity() {
    for seed in 0..5 {
        for (p, m) in [(1, 1), (4, 3), (8, 8)] {
            let [_, phi_k, v] = random(seed, 20, p, m);
            let mut rng = seeded(seed + 10);
            for t in [0, 7, 19] {
                // at any state, not just the one the sequence reaches
                let s = randn(&mut rng, m, p) * 10.0;
                let j = state_jacobian(write_step(&v, &phi_k, t), &s, 1e-3);
                let eye = Array2::<f64>::eye(m * p);
                assert_relative_eq!(j, eye, epsilon = 1e-9);
            }
        }
    }
}

#[test]
fn state_jacobian_over_many_steps_is_still_the_identity() {
    // ∂S_t/∂S_0 is a product of identities: a change to the state moves
    // every later state by exactly that change, however long ago. So
    // S_t is S_0 plus the sum of the writes.
    for seed in 0..5 {
        for n in [1, 37, 200] {
            let [_, phi_k, v] = random(seed, n, 4, 3);
            let steps = |s: &Array2<f64>| {
                (0..n).fold(s.clone(), |s, t| write_step(&v, &phi_k, t)(&s))
            };
            let s0 = randn(&mut seeded(seed + 20), 3, 4) * 5.0;
            let j = state_jacobian(steps, &s0, 1e-3);
            let eye = Array2::<f64>::eye(12);
            assert_relative_eq!(j, eye, epsilon = 1e-8);
            let writes = sequence_memory(&phi_k, &v).s;
            assert_relative_eq!(
                steps(&s0),
                &s0 + &writes,
                max_relative = 1e-12,
                epsilon = 1e-12
            );
        }
    }
}

/// Random affine steps, far from the identity: H_t = −I/2 plus a
/// random matrix of entries N(0, 0.36/p) (not diagonal, some of its
/// eigenvalues negative), B_t random. p: state width, m: state height.
fn affine_steps(seed: u64, n: usize, m: usize, p: usize) -> Vec<AffineStep> {
    let mut rng = seeded(seed);
    let spread = 0.6 / (p as f64).sqrt();
    (0..n)
        .map(|_| AffineStep {
            h: Array2::eye(p) * -0.5 + randn(&mut rng, p, p) * spread,
            b: randn(&mut rng, m, p),
        })
        .collect()
}

/// ‖A − I‖ / ‖I‖ in the Frobenius norm.
fn distance_from_identity(a: &Array2<f64>) -> f64 {
    let eye = Array2::<f64>::eye(a.nrows());
    let norm = |x: &Array2<f64>| x.iter().map(|y| y * y).sum::<f64>().sqrt();
    norm(&(a - &eye)) / norm(&eye)
}

#[test]
fn two_affine_steps_are_one_affine_step() {
    for seed in 0..10 {
        for (m, p) in [(1, 1), (3, 4), (5, 8)] {
            let steps = affine_steps(seed, 2, m, p);
            let s = randn(&mut seeded(seed + 50), m, p);
            let in_turn = steps[1].apply(&steps[0].apply(&s).unwrap()).unwrap();
            let folded = steps[0].then(&steps[1]).unwrap().apply(&s).unwrap();
            assert_relative_eq!(
                folded,
                in_turn,
                max_relative = 1e-12,
                epsilon = 1e-12
            );
        }
    }
}

#[test]
fn any_affine_recurrence_gives_the_same_states_in_any_chunks() {
    // Chunks of 1 are the recurrence; every chunk size lands on the same
    // state at each chunk boundary, whatever the transitions are, and
    // so do groups of uneven sizes; folding is associative.
    for seed in 0..5 {
        for (n, m, p) in [(1, 2, 3), (17, 3, 4), (40, 2, 6)] {
            let steps = affine_steps(seed, n, m, p);
            for step in &steps {
                let far = distance_from_identity(&step.h);
                assert!(far > 1.0, "seed {seed}: {far}");
            }
            let s0 = randn(&mut seeded(seed + 50), m, p);
            let each = affine_chunkwise(&steps, &s0, 1).unwrap();
            let close = |a: &Array2<f64>, b: &Array2<f64>| {
                assert_relative_eq!(
                    *a,
                    *b,
                    max_relative = 1e-10,
                    epsilon = 1e-10
                );
            };
            // Uneven groups: cut after random steps, fold each group.
            let mut rng = seeded(seed + 70);
            let mut state = s0.clone();
            let mut start = 0;
            while start < n {
                let len =
                    1 + (randn(&mut rng, 1, 1)[[0, 0]].abs() * 4.0) as usize;
                let end = (start + len).min(n);
                let group = &steps[start..end];
                let folded =
                    group[1..].iter().fold(group[0].clone(), |acc, step| {
                        acc.then(step).unwrap()
                    });
                state = folded.apply(&state).unwrap();
                close(&state, &each[end - 1]);
                start = end;
            }
            // (A then B) then C is A then (B then C).
            if n >= 3 {
                let left =
                    steps[0].then(&steps[1]).unwrap().then(&steps[2]).unwrap();
                let right =
                    steps[0].then(&steps[1].then(&steps[2]).unwrap()).unwrap();
                close(&left.h, &right.h);
                close(&left.b, &right.b);
            }
            for c in [1, 2, 3, 8, 64] {
                let chunked = affine_chunkwise(&steps, &s0, c).unwrap();
                assert_eq!(chunked.len(), n.div_ceil(c));
                for (i, state) in chunked.iter().enumerate() {
                    let t = ((i + 1) * c).min(n) - 1; // last step of chunk i
                    assert_relative_eq!(
                        *state,
                        each[t],
                        max_relative = 1e-10,
                        epsilon = 1e-10
                    );
                }
            }
        }
    }
}

#[test]
fn the_sum_rule_is_the_affine_step_with_the_identity_transition() {
    for seed in 0..5 {
        let [_, phi_k, v] = random(seed, 6, 4, 3);
        let mut s = randn(&mut seeded(seed), 3, 4);
        for t in 0..6 {
            let mut b = Array2::zeros((3, 4));
            fast_weight_write(&mut b, &v.row(t), &phi_k.row(t)).unwrap();
            let step = AffineStep {
                h: Array2::eye(4),
                b,
            };
            let want = step.apply(&s).unwrap();
            fast_weight_write(&mut s, &v.row(t), &phi_k.row(t)).unwrap();
            assert_eq!(s, want);
        }
    }
}

#[test]
fn an_affine_steps_jacobian_is_the_same_at_every_state_but_need_not_be_the_identity()
 {
    // What chunking needs: the update is affine in the state, so its
    // Jacobian does not depend on the state. The tanh step's does.
    for seed in 0..5 {
        let step = affine_steps(seed, 1, 3, 4).remove(0);
        let (s1, s2) = (
            randn(&mut seeded(seed + 1), 3, 4) * 3.0,
            randn(&mut seeded(seed + 2), 3, 4) * 3.0,
        );
        let j1 = state_jacobian(|s| step.apply(s).unwrap(), &s1, 1e-5);
        let j2 = state_jacobian(|s| step.apply(s).unwrap(), &s2, 1e-5);
        assert_relative_eq!(j1, j2, epsilon = 1e-8);
        // Fixed by A alone: ∂S_t[a, b] / ∂S_{t−1}[a', b'] = δ_aa' A[b', b],
        // whatever B is.
        let mut want = Array2::<f64>::zeros((12, 12));
        for ((row, col), x) in want.indexed_iter_mut() {
            let ((a, b), (a2, b2)) = ((row / 4, row % 4), (col / 4, col % 4));
            if a == a2 {
                *x = step.h[[b2, b]];
            }
        }
        assert_relative_eq!(j1, want, epsilon = 1e-8);
        assert!(
            (&j1 - &Array2::<f64>::eye(12))
                .iter()
                .any(|x| x.abs() > 1e-3)
        );
        let squashed = |s: &Array2<f64>| step.apply(s).unwrap().mapv(f64::tanh);
        let t1 = state_jacobian(squashed, &s1, 1e-5);
        let t2 = state_jacobian(squashed, &s2, 1e-5);
        assert!((&t1 - &t2).iter().any(|x| x.abs() > 1e-3));
    }
}

#[test]
fn a_tanh_recurrence_has_a_jacobian_that_shrinks_step_by_step() {
    // S_t = tanh(S_{t−1} + v_t φ(k_t)ᵀ): the Jacobian is diagonal with
    // entries 1 − tanh² < 1, and over many steps their product fades.
    for seed in 0..5 {
        let [_, phi_k, v] = random(seed, 50, 4, 3);
        let steps = |t_end: usize| {
            let (v, phi_k) = (v.clone(), phi_k.clone());
            move |s: &Array2<f64>| {
                (0..t_end).fold(s.clone(), |s, t| {
                    write_step(&v, &phi_k, t)(&s).mapv(f64::tanh)
                })
            }
        };
        let start = randn(&mut seeded(seed + 30), 3, 4);
        for s0 in [Array2::zeros((3, 4)), start] {
            let one = state_jacobian(steps(1), &s0, 1e-6);
            let many = state_jacobian(steps(50), &s0, 1e-6);
            let largest =
                |j: &Array2<f64>| j.fold(0.0_f64, |a, &b| a.max(b.abs()));
            assert!(largest(&one) < 1.0, "seed {seed}");
            let faded = largest(&many);
            assert!(faded < 1e-3, "seed {seed}: {faded}");
            // A diagonal: a step moves each entry of S only through
            // itself, by a factor 1 − tanh² in (0, 1).
            for j in [&one, &many] {
                for ((r, c), &x) in j.indexed_iter() {
                    assert!(r == c || x.abs() < 1e-8, "seed {seed}: {x:e}");
                }
            }
            assert!(one.diag().iter().all(|&x| x > 0.0 && x < 1.0));
        }
    }
}

#[test]
fn a_decayed_write_has_jacobian_a_times_the_identity() {
    // S_t = a S_{t−1} + v_t φ(k_t)ᵀ: still linear, Jacobian a I.
    for seed in 0..5 {
        let [_, phi_k, v] = random(seed, 10, 4, 3);
        for a in [0.5, 0.9, 1.0] {
            let step = |s: &Array2<f64>| write_step(&v, &phi_k, 3)(&(s * a));
            let s = randn(&mut seeded(seed), 3, 4);
            let j = state_jacobian(step, &s, 1e-3);
            let want = Array2::<f64>::eye(12) * a;
            assert_relative_eq!(j, want, epsilon = 1e-9);
        }
    }
}

#[test]
fn a_decayed_recurrence_is_a_masked_product_with_decay_factors() {
    // Unrolled, token j reaches S_t scaled by a^{t−j}: the same outputs
    // come from the parallel form with mask entries a^{t−j} for j ≤ t,
    // the structured mask of state space duality (Dao & Gu 2024).
    // With a factor a_t per step, the entry is a_{j+1} ⋯ a_t; with
    // every a_t = 1, the mask of ones of linear attention.
    for seed in 0..5 {
        for n in [1, 7, 60] {
            let [phi_q, phi_k, v] = random(seed, n, 5, 3);
            let noise = randn(&mut seeded(seed + 40), n, 1);
            let varying: Vec<f64> = noise
                .iter()
                .map(|x| 0.5 + 0.5 / (1.0 + (-x).exp()))
                .collect();
            let cases =
                [("a", vec![0.8; n]), ("a_t", varying), ("1", vec![1.0; n])];
            for (kind, factors) in cases {
                let mut s_t = Array2::<f64>::zeros((3, 5));
                let mut recurrent = Array2::<f64>::zeros((n, 3));
                for (t, &a_t) in factors.iter().enumerate() {
                    s_t *= a_t;
                    fast_weight_write(&mut s_t, &v.row(t), &phi_k.row(t))
                        .unwrap();
                    recurrent.row_mut(t).assign(&s_t.dot(&phi_q.row(t)));
                }
                let mut scores = phi_q.dot(&phi_k.t());
                for ((t, j), x) in scores.indexed_iter_mut() {
                    let l: f64 =
                        factors[(j + 1).min(t + 1)..=t].iter().product();
                    *x *= if j <= t { l } else { 0.0 };
                }
                if kind == "a" {
                    // constant a: entries a^{t−j}
                    for ((t, j), x) in scores.indexed_iter() {
                        if j <= t {
                            let want = phi_q.row(t).dot(&phi_k.row(j))
                                * 0.8_f64.powi((t - j) as i32);
                            assert_relative_eq!(*x, want, max_relative = 1e-12);
                        }
                    }
                }
                if kind == "1" {
                    assert_eq!(scores, causal_scores(&phi_q, &phi_k));
                }
                assert_relative_eq!(
                    recurrent,
                    scores.dot(&v),
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn a_decayed_recurrence_can_be_computed_in_chunks() {
    // Chunk of c tokens, memory S of the earlier chunks: query i reads
    // a^{i+1} S φ(q_i) + Σ_{j≤i} a^{i−j} (φ(q_i)ᵀφ(k_j)) v_j, and the
    // chunk passes on a^c S + Σ_j a^{c−1−j} v_j φ(k_j)ᵀ.
    let cases = [0.5, 0.9].into_iter().flat_map(|a: f64| {
        (0..5).flat_map(move |seed| [1, 3, 8, 64].map(|c| (a, seed, c)))
    });
    for (a, seed, chunk) in cases {
        let n = 50;
        let [phi_q, phi_k, v] = random(seed, n, 5, 3);
        let mut s_t = Array2::<f64>::zeros((3, 5));
        let mut recurrent = Array2::<f64>::zeros((n, 3));
        for t in 0..n {
            s_t *= a;
            fast_weight_write(&mut s_t, &v.row(t), &phi_k.row(t)).unwrap();
            recurrent.row_mut(t).assign(&s_t.dot(&phi_q.row(t)));
        }
        let mut memory = Array2::<f64>::zeros((3, 5));
        let mut chunked = Array2::<f64>::zeros((n, 3));
        for start in (0..n).step_by(chunk) {
            let c = chunk.min(n - start);
            let rows = s![start..start + c, ..];
            let (q, k, vc) =
                (phi_q.slice(rows), phi_k.slice(rows), v.slice(rows));
            let mut scores = causal_scores(&q, &k);
            for ((i, j), x) in scores.indexed_iter_mut() {
                *x *= a.powi(i as i32 - j as i32);
            }
            let mut out = scores.dot(&vc);
            for i in 0..c {
                let carried = memory.dot(&q.row(i)) * a.powi(i as i32 + 1);
                out.row_mut(i).scaled_add(1.0, &carried);
            }
            chunked.slice_mut(rows).assign(&out);
            memory *= a.powi(c as i32);
            for j in 0..c {
                let weight = a.powi((c - 1 - j) as i32);
                fast_weight_write(
                    &mut memory,
                    &(&vc.row(j) * weight),
                    &k.row(j),
                )
                .unwrap();
            }
        }
        assert_relative_eq!(
            chunked,
            recurrent,
            max_relative = 1e-10,
            epsilon = 1e-12
        );
    }
}

#[test]
fn folding_writes_gives_the_identity_and_a_plain_sum() {
    // With H_t = I the folded transition is I again, exactly, and the
    // folded input is the sum of the writes.
    for seed in 0..5 {
        for (n, p, m) in [(1, 3, 2), (5, 4, 3), (40, 8, 5)] {
            let [_, phi_k, v] = random(seed, n, p, m);
            let steps: Vec<AffineStep> = (0..n)
                .map(|t| {
                    let mut b = Array2::zeros((m, p));
                    fast_weight_write(&mut b, &v.row(t), &phi_k.row(t))
                        .unwrap();
                    AffineStep {
                        h: Array2::eye(p),
                        b,
                    }
                })
                .collect();
            let folded = steps[1..]
                .iter()
                .fold(steps[0].clone(), |acc, step| acc.then(step).unwrap());
            assert_eq!(folded.h, Array2::<f64>::eye(p));
            assert_relative_eq!(
                folded.b,
                sequence_memory(&phi_k, &v).s,
                max_relative = 1e-12,
                epsilon = 1e-12
            );
        }
    }
}
