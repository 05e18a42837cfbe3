//! The study of "The transition's spectrum": the parity layer's reads over
//! runs of ones, and the share of prefixes of random bit strings whose
//! parity each write strength reads right with its best threshold.

use super::parity_reads;
use crate::random::seeded;
use crate::table::Table;
use ndarray::Array1;
use rand::Rng;

/// The write strengths the printed study compares.
pub const PARITY_BETAS: [f64; 4] = [2.0, 1.0, 0.5, 0.1];

/// The lengths of the printed study's random bit strings.
pub const PARITY_LENGTHS: [usize; 4] = [10, 1_000, 100_000, 1_000_000];

/// The key width of the printed study; the key is the first unit vector.
pub const PARITY_P: usize = 4;

/// N random bits, 0 or 1 with equal chance.
pub fn random_bits(seed: u64, n: usize) -> Vec<u8> {
    let mut rng = seeded(seed);
    (0..n).map(|_| u8::from(rng.random_bool(0.5))).collect()
}

/// The parity of every prefix of `bits`: 1 after an odd number of ones.
pub fn prefix_parity(bits: &[u8]) -> Vec<u8> {
    bits.iter()
        .scan(0u8, |parity, &b| {
            *parity ^= b;
            Some(*parity)
        })
        .collect()
}

/// The share of prefixes whose parity the best threshold on the reads
/// gets right: the best of "odd above θ" and "odd below θ" over every θ.
pub fn best_threshold_accuracy(reads: &Array1<f64>, parity: &[u8]) -> f64 {
    let mut pairs: Vec<(f64, u8)> =
        reads.iter().copied().zip(parity.iter().copied()).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pairs.len();
    let odd_total = pairs.iter().filter(|p| p.1 == 1).count();
    // θ below every read: all called odd ("odd above θ").
    let (mut best, mut odd_below) = (odd_total.max(n - odd_total), 0);
    let mut at = 0;
    while at < n {
        // Move θ past every read equal to this one.
        let value = pairs[at].0;
        while at < n && pairs[at].0 == value {
            odd_below += usize::from(pairs[at].1 == 1);
            at += 1;
        }
        let even_below = at - odd_below;
        let above_right = even_below + (odd_total - odd_below);
        best = best.max(above_right).max(n - above_right);
    }
    best as f64 / n as f64
}

/// The unit key of the printed study.
pub fn parity_key() -> Array1<f64> {
    let mut key = Array1::zeros(PARITY_P);
    key[0] = 1.0;
    key
}

/// Output `spectrum-parity`.
pub fn parity_table() -> String {
    let key = parity_key();
    let mut runs = Table::new().right("ones", 4).right("parity", 6);
    for beta in PARITY_BETAS {
        runs = runs.right(&format!("y, β = {beta}"), 10);
    }
    let ones = vec![1u8; 6];
    let reads: Vec<Array1<f64>> = PARITY_BETAS
        .iter()
        .map(|&b| parity_reads(&ones, &key, b).expect("bits and a unit key"))
        .collect();
    for n in 0..ones.len() {
        let mut row = vec![(n + 1).to_string(), ((n + 1) % 2).to_string()];
        row.extend(reads.iter().map(|y| format!("{:.4}", y[n])));
        runs.row(row);
    }
    let mut shares = Table::new().right("N", 9);
    for beta in PARITY_BETAS {
        shares = shares.right(&format!("β = {beta}"), 8);
    }
    for (seed, &n) in PARITY_LENGTHS.iter().enumerate() {
        let bits = random_bits(seed as u64, n);
        let parity = prefix_parity(&bits);
        let mut row = vec![n.to_string()];
        for beta in PARITY_BETAS {
            let y = parity_reads(&bits, &key, beta).expect("bits and a key");
            let share = best_threshold_accuracy(&y, &parity);
            row.push(format!("{:.4}", share));
        }
        shares.row(row);
    }
    format!(
        "Reads after a run of ones, each strength:\n\n{runs}\n\n\
         Share of the prefixes of N random bits whose parity the best \
         threshold on y reads right:\n\n{shares}"
    )
}
