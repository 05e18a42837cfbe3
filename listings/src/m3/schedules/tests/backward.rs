use super::*;
use crate::m3::fast_weight_memory::{
    fast_weight_write, linear_attention_recurrent,
};

/// L = Σ G ⊙ O for the recurrent form: a loss whose gradient with
/// respect to O is G.
fn weighted_output(
    phi_q: &Array2<f64>,
    phi_k: &Array2<f64>,
    v: &Array2<f64>,
    g: &Array2<f64>,
) -> f64 {
    (linear_attention_recurrent(phi_q, phi_k, v).unwrap() * g).sum()
}

#[test]
fn the_backward_pass_matches_central_differences() {
    let h = 1e-6;
    for seed in 0..4 {
        for (n, p, m) in [(1, 1, 1), (5, 3, 2), (9, 4, 3)] {
            let [q, k, v] = random(seed, n, p, m);
            let g = randn(&mut seeded(seed + 7), n, m);
            let grads = linear_attention_backward(&q, &k, &v, &g).unwrap();
            let inputs = [&q, &k, &v];
            let analytic = [&grads.phi_q, &grads.phi_k, &grads.v];
            for (which, want) in analytic.iter().enumerate() {
                for ((i, j), &dx) in want.indexed_iter() {
                    let nudged = |delta: f64| {
                        let mut x = inputs.map(|a| a.clone());
                        x[which][[i, j]] += delta;
                        weighted_output(&x[0], &x[1], &x[2], &g)
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
        }
    }
}

#[test]
fn the_fixed_state_backward_equals_the_parallel_forms_gradient() {
    for seed in 0..4 {
        for (n, p, m) in [(1, 2, 1), (7, 4, 3), (100, 8, 5), (513, 6, 4)] {
            let [q, k, v] = random(seed, n, p, m);
            let g = randn(&mut seeded(seed + 7), n, m);
            let fixed = linear_attention_backward(&q, &k, &v, &g).unwrap();
            let parallel =
                linear_attention_parallel_backward(&q, &k, &v, &g).unwrap();
            for (a, b) in [
                (&fixed.phi_q, &parallel.phi_q),
                (&fixed.phi_k, &parallel.phi_k),
                (&fixed.v, &parallel.v),
            ] {
                // Relative to the largest gradient entry: the first
                // query's gradient is zero (o_1 = v_1 whatever q_1).
                let scale = [&parallel.phi_q, &parallel.phi_k, &parallel.v]
                    .iter()
                    .map(|m| m.fold(0.0_f64, |x, y| x.max(y.abs())))
                    .fold(0.0, f64::max);
                let gap = (a - b).fold(0.0_f64, |x, y| x.max(y.abs()));
                assert!(gap <= 1e-10 * scale, "N {n} seed {seed}: {gap:e}");
            }
        }
    }
}

#[test]
fn a_gradient_of_the_wrong_shape_is_an_error() {
    let [q, k, v] = random(0, 6, 3, 2);
    let g = randn(&mut seeded(1), 6, 3);
    for run in [
        linear_attention_backward,
        linear_attention_parallel_backward,
    ] {
        let msg = run(&q, &k, &v, &g).err().unwrap().to_string();
        assert!(msg.contains("grad_o is [6, 3]"), "{msg}");
    }
}

#[test]
fn undoing_the_writes_recovers_every_earlier_state() {
    // What the backward sweep does: subtract v_t φ(k_t)ᵀ and φ(k_t) from
    // the final S and z, and S_{t−1}, z_{t−1} are there again, to
    // rounding.
    for seed in 0..4 {
        for (n, p, m) in [(1, 2, 1), (30, 5, 4), (300, 8, 8)] {
            let [_, phi_k, v] = random(seed, n, p, m);
            let (mut s, mut z) = (Array2::zeros((m, p)), Array1::zeros(p));
            let mut states = vec![(s.clone(), z.clone())];
            for t in 0..n {
                fast_weight_write(&mut s, &v.row(t), &phi_k.row(t)).unwrap();
                z += &phi_k.row(t);
                states.push((s.clone(), z.clone()));
            }
            let scale = 1.0 + s.fold(0.0_f64, |a, &b| a.max(b.abs()));
            for t in (0..n).rev() {
                fast_weight_write(&mut s, &(-&v.row(t)), &phi_k.row(t))
                    .unwrap();
                z -= &phi_k.row(t);
                let (s_before, z_before) = &states[t];
                assert_relative_eq!(s, *s_before, epsilon = 1e-13 * scale);
                assert_relative_eq!(z, *z_before, epsilon = 1e-13 * scale);
            }
        }
    }
}
