//! "A model that generates text must keep every past key and value to score
//! the next token": the decoder's cache holds every one, its output is
//! causal softmax attention's, and every past key and every past value
//! moves the next output, so none could be dropped.

use listings::m3::attention::{Mask, softmax_attention};
use listings::m3::cost::KvCache;
use listings::ndarray::s;
use listings::random::{randn, seeded};

#[test]
fn softmax_decoding_keeps_and_needs_every_past_key_and_value() {
    for seed in 0..5 {
        for (n, d, m) in [(1, 1, 1), (12, 8, 8), (40, 16, 5)] {
            let mut rng = seeded(seed);
            let (q, k, v) = (
                randn(&mut rng, n, d),
                randn(&mut rng, n, d),
                randn(&mut rng, n, m),
            );
            let full = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            let mut cache = KvCache::new(d, m);
            for t in 0..n {
                let o = cache.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
                // Every past key and value, in order, and nothing else.
                assert_eq!(cache.keys, k.slice(s![..=t, ..]), "seed {seed}");
                assert_eq!(cache.values, v.slice(s![..=t, ..]), "seed {seed}");
                for (a, b) in o.iter().zip(full.output.row(t)) {
                    assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
                }
                // Each of them counts: nudge one past key, or one past
                // value, and this token's output moves.
                for j in 0..=t {
                    for nudge_key in [true, false] {
                        let mut other = KvCache::new(d, m);
                        for i in 0..=t {
                            let (mut key, mut value) =
                                (k.row(i).to_owned(), v.row(i).to_owned());
                            if i == j && nudge_key {
                                key[0] += 0.5;
                            } else if i == j {
                                value[0] += 0.5;
                            }
                            let moved =
                                other.decode(&q.row(i), &key, &value).unwrap();
                            if i == t && (t > 0 || !nudge_key) {
                                assert_ne!(
                                    moved, o,
                                    "seed {seed}, t {t}, j {j}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
