//! The layer: the recurrence, the chunkwise form through the WY
//! representation, the backward pass, bad input, and the printed studies.

use super::*;
use crate::phi::map_rows;

fn random_layer(
    seed: u64,
    n: usize,
    d: usize,
    m: usize,
    dpfp_nu: Option<usize>,
) -> (Array2<f64>, Array2<f64>, Array2<f64>, Array1<f64>) {
    let mut rng = seeded(seed);
    let q = randn(&mut rng, n, d);
    let k = randn(&mut rng, n, d);
    let v = randn(&mut rng, n, m);
    let x = randn(&mut rng, n, 6);
    let w_beta = randn(&mut rng, 1, 6).row(0).to_owned();
    let beta = write_strength(&x, &w_beta).unwrap();
    let phi = |a: &Array2<f64>| match dpfp_nu {
        Some(nu) => map_rows(a, |r| dpfp(r, nu)).unwrap(),
        None => elu_plus_one(a),
    };
    (phi(&q), phi(&k), v, beta)
}

#[test]
fn the_recurrence_is_one_delta_step_and_one_read_per_token() {
    for seed in 0..5 {
        let (q, k, v, beta) = random_layer(seed, 30, 4, 3, None);
        let read = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
        let mut w = Array2::zeros((3, 4));
        for t in 0..30 {
            let k_bar = sum_normalise(&k.row(t)).unwrap();
            delta_rule_step(&mut w, &k_bar, &v.row(t), beta[t]).unwrap();
            let y = w.dot(&sum_normalise(&q.row(t)).unwrap());
            assert_eq!(read.output.row(t), y);
        }
        assert_eq!(read.memory, w);
        // β = 0 never writes: the memory stays empty.
        let zero = Array1::zeros(30);
        let none = delta_rule_recurrent(&q, &k, &v, &zero).unwrap();
        assert!(none.output.iter().all(|&y| y == 0.0));
    }
}

#[test]
fn forward_substitution_solves_identity_plus_strictly_lower() {
    for seed in 0..10 {
        for (c, n) in [(1, 1), (2, 3), (8, 8), (40, 5)] {
            let mut rng = seeded(seed);
            let mut a = randn(&mut rng, c, c) * 0.5;
            a.indexed_iter_mut().for_each(|((i, j), x)| {
                if j >= i {
                    *x = 0.0;
                }
            });
            let b = randn(&mut rng, c, n);
            let x = forward_substitution(&a, &b);
            let back = &x + &a.dot(&x); // (I + A) X
            assert_relative_eq!(back, b, max_relative = 1e-9, epsilon = 1e-9);
        }
    }
}

/// One delta-rule write as an affine step: A = I − β k̄ k̄ᵀ, B = β v k̄ᵀ.
fn delta_step(k: &ArrayRef1<f64>, v: &ArrayRef1<f64>, beta: f64) -> AffineStep {
    let mut b = Array2::zeros((v.len(), k.len()));
    fast_weight_write(&mut b, &v.mapv(|x| beta * x), k).unwrap();
    AffineStep {
        h: delta_transition(k, beta).unwrap(),
        b,
    }
}

#[test]
fn a_chunk_of_delta_writes_folds_into_the_wy_form() {
    // The product of C transitions is I − K̂ᵀ K̄, a rank-C correction of
    // the identity, and the folded inputs are V̂ᵀ K̄.
    for seed in 0..5 {
        for (c, d, m, nu) in
            [(1, 4, 3, None), (5, 4, 2, Some(1)), (12, 3, 4, Some(2))]
        {
            let (_, k, v, beta) = random_layer(seed, c, d, m, nu);
            let k_bar = sum_normalise_rows(&k).unwrap();
            let folded = (1..c).fold(
                delta_step(&k_bar.row(0), &v.row(0), beta[0]),
                |acc, t| {
                    acc.then(&delta_step(&k_bar.row(t), &v.row(t), beta[t]))
                        .unwrap()
                },
            );
            let wy = wy_representation(&k_bar, &v, &beta);
            assert_relative_eq!(
                wy.h,
                folded.h,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
            assert_relative_eq!(
                wy.b,
                folded.b,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
            // And applied to a memory, it is the chunk of writes.
            let mut w = randn(&mut seeded(seed + 9), m, k.ncols());
            let start = w.clone();
            for t in 0..c {
                delta_rule_step(&mut w, &k_bar.row(t), &v.row(t), beta[t])
                    .unwrap();
            }
            assert_relative_eq!(
                wy.apply(&start).unwrap(),
                w,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
        }
    }
}

/// The layer on keys and queries that are already normalised, so that
/// finite differences can nudge k̄ and q̄ themselves; L = Σ G ⊙ Y.
fn weighted_reads(
    q: &Array2<f64>,
    k: &Array2<f64>,
    v: &Array2<f64>,
    beta: &Array1<f64>,
    g: &Array2<f64>,
) -> f64 {
    let mut w = Array2::zeros((v.ncols(), k.ncols()));
    let mut loss = 0.0;
    for t in 0..k.nrows() {
        delta_rule_step(&mut w, &k.row(t), &v.row(t), beta[t]).unwrap();
        loss += w.dot(&q.row(t)).dot(&g.row(t));
    }
    loss
}

/// A random layer with its keys and queries sum-normalised, and a
/// random gradient G of the reads.
fn normalised_layer(
    seed: u64,
    n: usize,
    d: usize,
    m: usize,
) -> ([Array2<f64>; 4], Array1<f64>) {
    let (q, k, v, beta) = random_layer(seed, n, d, m, None);
    let g = randn(&mut seeded(seed + 11), n, m);
    let [q, k] = [q, k].map(|a| sum_normalise_rows(&a).unwrap());
    ([q, k, v, g], beta)
}

#[test]
fn the_delta_rule_backward_pass_matches_finite_differences() {
    let h = 1e-6;
    for seed in 0..4 {
        for (n, d, m) in [(1, 2, 1), (6, 3, 2), (12, 4, 3)] {
            let ([q, k, v, g], beta) = normalised_layer(seed, n, d, m);
            let grads = delta_rule_backward(&q, &k, &v, &beta, &g).unwrap();
            let loss = |x: &[Array2<f64>; 3], b: &Array1<f64>| {
                weighted_reads(&x[0], &x[1], &x[2], b, &g)
            };
            let inputs = [q.clone(), k.clone(), v.clone()];
            for (which, want) in
                [&grads.q_bar, &grads.k_bar, &grads.v].iter().enumerate()
            {
                for ((i, j), &dx) in want.indexed_iter() {
                    let nudged = |delta: f64| {
                        let mut x = inputs.clone();
                        x[which][[i, j]] += delta;
                        loss(&x, &beta)
                    };
                    let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                    assert_relative_eq!(
                        dx,
                        numeric,
                        max_relative = 1e-5,
                        epsilon = 1e-7
                    );
                }
            }
            for t in 0..n {
                let nudged = |delta: f64| {
                    let mut b = beta.clone();
                    b[t] += delta;
                    loss(&inputs, &b)
                };
                let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                assert_relative_eq!(
                    grads.beta[t],
                    numeric,
                    max_relative = 1e-5,
                    epsilon = 1e-7
                );
            }
        }
    }
}

#[test]
fn subtracting_the_inserted_vectors_recovers_every_earlier_memory() {
    // Even where the transition I − β k̄ k̄ᵀ has no inverse (one-hot keys
    // with β = 1), undoing a write is one subtraction of u_t k̄_tᵀ.
    for seed in 0..4 {
        let (n, p, m) = (1000, 6, 4);
        let mut rng = seeded(seed);
        let keys =
            sum_normalise_rows(&elu_plus_one(&randn(&mut rng, n, p))).unwrap();
        let v = randn(&mut rng, n, m);
        let mut w = Array2::zeros((m, p));
        let mut states = vec![w.clone()];
        let mut inserted = Vec::new();
        for t in 0..n {
            let (k, beta) = if t % 7 == 0 {
                (Array1::from_shape_fn(p, |i| f64::from(i == t % p)), 1.0)
            } else {
                (keys.row(t).to_owned(), 0.9)
            };
            if t % 7 == 0 {
                let a = delta_transition(&k, beta).unwrap();
                assert!(crate::linalg::norm(&a.dot(&k)) < 1e-15); // singular
            }
            let v_bar = delta_rule_step(&mut w, &k, &v.row(t), beta).unwrap();
            inserted.push(((&v.row(t) - &v_bar) * beta, k));
            states.push(w.clone());
        }
        for t in (0..n).rev() {
            let (u, k) = &inserted[t];
            fast_weight_write(&mut w, &(-u), k).unwrap();
            assert_relative_eq!(w, states[t], epsilon = 1e-12);
        }
    }
}

#[test]
fn chunkwise_delta_rule_equals_the_recurrence() {
    // Lengths that are and are not multiples of C; C = 1, several
    // sizes, and C ≥ N (one chunk: the fully parallel form).
    let lengths = [1, 2, 7, 16, 33, 100, 257];
    let chunks = [1, 3, 8, 16, 64, 300];
    for seed in 0..4 {
        for &n in &lengths {
            for (i, &c) in chunks.iter().enumerate() {
                let nu = [None, Some(1), Some(2)][i % 3];
                let (d, m) = [(4, 3), (8, 8), (6, 5)][(i + n) % 3];
                let (q, k, v, beta) = random_layer(seed, n, d, m, nu);
                let rec = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
                let chunked =
                    delta_rule_chunkwise(&q, &k, &v, &beta, c).unwrap();
                let gap =
                    worst_row_relative_difference(&chunked.output, &rec.output);
                assert!(gap < 1e-10, "N {n} C {c} seed {seed}: {gap:e}");
                assert_relative_eq!(
                    chunked.memory,
                    rec.memory,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let (q, k, v, beta) = random_layer(0, 12, 4, 3, None);
    let short = beta.slice(s![..11]).to_owned();
    for c in [None, Some(4)] {
        let run = |q: &Array2<f64>, k: &Array2<f64>, b: &Array1<f64>| {
            match c {
                None => delta_rule_recurrent(q, k, &v, b),
                Some(c) => delta_rule_chunkwise(q, k, &v, b, c),
            }
            .err()
            .unwrap()
            .to_string()
        };
        let msg = run(&q, &k, &short);
        assert!(msg.contains("beta is [11, 1]"), "{msg}");
        let mut nan = beta.clone();
        nan[3] = f64::NAN;
        assert!(run(&q, &k, &nan).contains("NaN in beta at [3, 0]"));
        if c.is_some() {
            let msg = delta_rule_chunkwise(&q, &k, &v, &beta, 0)
                .err()
                .unwrap()
                .to_string();
            assert!(msg.contains("chunk is 0"), "{msg}");
        }
        let narrow = k.slice(s![.., ..3]).to_owned();
        let msg = run(&q, &narrow, &beta);
        assert!(msg.contains("q is [12, 4]") && msg.contains("k is [12, 3]"));
        // One key per query, one value per key, nothing empty or
        // infinite.
        let fewer = k.slice(s![..11, ..]).to_owned();
        let msg = run(&q, &fewer, &beta);
        assert!(msg.contains("k is [11, 4]"), "{msg}");
        let values = v.slice(s![..11, ..]).to_owned();
        let msg = match c {
            None => delta_rule_recurrent(&q, &k, &values, &beta),
            Some(c) => delta_rule_chunkwise(&q, &k, &values, &beta, c),
        }
        .err()
        .unwrap()
        .to_string();
        assert!(msg.contains("v is [11, 3]"), "{msg}");
        let none = Array2::<f64>::zeros((0, 4));
        let msg = run(&none, &none, &Array1::zeros(0));
        assert!(msg.starts_with("empty input"), "{msg}");
        let mut inf = k.clone();
        inf[[5, 2]] = f64::INFINITY;
        let msg = run(&q, &inf, &beta);
        assert!(msg.contains("inf in k at [5, 2]"), "{msg}");
    }
}

#[test]
fn appendix_a_study_shows_the_contrast_at_every_beta() {
    // The printed study, then more β and seeds.
    let printed_betas = APPENDIX_A_BETAS;
    let printed = (crate::outputs::find("delta-appendix-a").unwrap().run)();
    let table =
        AppendixATable(appendix_a_study(&printed_betas, APPENDIX_A_SEED));
    assert_eq!(printed, table.to_string(), "the output runs this study");
    let mut rows = table.0;
    for seed in 0..5 {
        rows.extend(appendix_a_study(&BETAS, seed));
    }
    for pair in rows[..printed_betas.len()].windows(2) {
        assert!(pair[1].gated_unrelated > pair[0].gated_unrelated);
    }
    for r in rows {
        assert!(r.delta_rewritten < 1e-12 && r.delta_unrelated < 1e-12);
        assert!(r.gated_rewritten < 1e-12);
        // Unit v1: the gated rule leaves (1 − β) v1, off by β.
        assert!((r.gated_unrelated - r.beta).abs() < 1e-12);
        assert!(r.sum_rewritten < 1e-12);
    }
}

#[test]
fn chunkwise_study_agrees_to_rounding() {
    // The printed cases, and a few more.
    let cases = CHUNKWISE_CASES;
    let printed = (crate::outputs::find("delta-chunkwise").unwrap().run)();
    let seeds = CHUNKWISE_SEEDS;
    let rows = chunkwise_study(&cases, seeds);
    let table = ChunkTable { seeds, rows };
    assert_eq!(printed, table.to_string(), "the output runs this study");
    assert!(table.rows.iter().all(|r| r.difference < 1e-10));
    let rows = chunkwise_study(&[(1, 1), (100, 7), (100, 100)], 2);
    assert!(rows.iter().all(|r| r.difference < 1e-10));
}
