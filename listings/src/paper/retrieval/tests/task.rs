//! The task: both settings, the evaluation's queries, determinism.

use crate::paper::retrieval::task::*;
use crate::random::seeded;

#[test]
fn distinct_setting_lists_every_key_once() {
    for seed in 0..20 {
        for n in [1, 2, 5, 40] {
            for e in episodes(seed, 5, n, Setting::Distinct)
                .expect("n is at least one")
            {
                let mut keys = e.keys.clone();
                keys.sort();
                assert_eq!(keys, (0..n).collect::<Vec<_>>());
                let at = e.keys.iter().position(|&k| k == e.query).unwrap();
                assert_eq!(e.values[at], e.target);
            }
        }
    }
}

#[test]
fn repeated_setting_answers_with_the_last_occurrence() {
    let mut revised = 0;
    for seed in 0..20 {
        for e in
            episodes(seed, 20, 6, Setting::Repeated).expect("n is at least one")
        {
            assert_eq!(e.keys.len(), 12);
            assert!(e.keys.iter().chain(&e.values).all(|&s| s < 6));
            let last = e.keys.iter().rposition(|&k| k == e.query).unwrap();
            assert_eq!(e.target, e.values[last]);
            let first = e.keys.iter().position(|&k| k == e.query).unwrap();
            if first != last && e.values[first] != e.values[last] {
                revised += 1;
            }
        }
    }
    // The setting exists to make stored associations go stale.
    assert!(revised > 50, "only {revised} queries saw a revised value");
}

#[test]
fn setting_1_values_are_a_permutation_too() {
    for seed in 0..10 {
        for n in [1, 3, 20] {
            for e in episodes(seed, 4, n, Setting::Distinct)
                .expect("n is at least one")
            {
                let mut values = e.values.clone();
                values.sort();
                assert_eq!(values, (0..n).collect::<Vec<_>>());
            }
        }
    }
}

#[test]
fn evaluation_queries_every_distinct_key_at_its_last_value() {
    for seed in 0..10 {
        let mut rng = seeded(seed);
        for setting in [Setting::Distinct, Setting::Repeated] {
            let (e, queries) = eval_sequence(&mut rng, 30, setting, 200)
                .expect("n and max_queries are at least one");
            assert_eq!(e.keys.len(), 30);
            let mut distinct = e.keys.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(queries.len(), distinct.len());
            for (q, target) in queries {
                let last = e.keys.iter().rposition(|&k| k == q).unwrap();
                assert_eq!(e.values[last], target);
            }
            let (_, capped) = eval_sequence(&mut rng, 30, setting, 7)
                .expect("n and max_queries are at least one");
            assert!(capped.len() <= 7);
        }
    }
}

#[test]
fn episodes_are_deterministic_per_seed() {
    for setting in [Setting::Distinct, Setting::Repeated] {
        assert_eq!(
            episodes(3, 4, 10, setting).expect("n is at least one"),
            episodes(3, 4, 10, setting).expect("n is at least one")
        );
        assert_ne!(
            episodes(3, 4, 10, setting).expect("n is at least one"),
            episodes(4, 4, 10, setting).expect("n is at least one")
        );
    }
}
