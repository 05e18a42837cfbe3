//! The synthetic retrieval task of Schlag et al. (2021, §6.1): a sequence
//! of key–value pairs, then a query key; the answer is the value paired
//! with that key.

use crate::random::seeded;
use rand::Rng;
use rand::seq::SliceRandom;

/// Which of the paper's two settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Setting {
    /// Capacity: every key appears once, so L = n pairs.
    Distinct,
    /// Update rules: keys repeat with new values, L = 2n pairs; the answer
    /// is the value at the key's last occurrence.
    Repeated,
}

impl Setting {
    /// The short name used in data files and figures.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Distinct => "setting1",
            Setting::Repeated => "setting2",
        }
    }
}

// ANCHOR: Episode
/// One sequence of the task, as symbol ids in 0..n.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Episode {
    pub keys: Vec<usize>,
    pub values: Vec<usize>,
    pub query: usize,
    pub target: usize,
}
// ANCHOR_END: Episode

// ANCHOR: episode
/// Draw an episode over n keys and n values.
pub fn episode(rng: &mut impl Rng, n: usize, setting: Setting) -> Episode {
    let keys: Vec<usize> = match setting {
        Setting::Distinct => {
            let mut keys: Vec<usize> = (0..n).collect();
            keys.shuffle(rng);
            keys
        }
        Setting::Repeated => {
            (0..2 * n).map(|_| rng.random_range(0..n)).collect()
        }
    };
    let values: Vec<usize> =
        keys.iter().map(|_| rng.random_range(0..n)).collect();
    let query = keys[rng.random_range(0..keys.len())];
    // The answer is the value at the query key's last occurrence.
    let last = keys
        .iter()
        .rposition(|&k| k == query)
        .expect("query is a key");
    Episode {
        target: values[last],
        keys,
        values,
        query,
    }
}
// ANCHOR_END: episode

/// `count` episodes from one seed: the same seed, the same episodes.
pub fn episodes(
    seed: u64,
    count: usize,
    n: usize,
    setting: Setting,
) -> Vec<Episode> {
    let mut rng = seeded(seed);
    (0..count).map(|_| episode(&mut rng, n, setting)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_setting_lists_every_key_once() {
        for seed in 0..20 {
            for n in [1, 2, 5, 40] {
                for e in episodes(seed, 5, n, Setting::Distinct) {
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
            for e in episodes(seed, 20, 6, Setting::Repeated) {
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
    fn episodes_are_deterministic_per_seed() {
        for setting in [Setting::Distinct, Setting::Repeated] {
            assert_eq!(
                episodes(3, 4, 10, setting),
                episodes(3, 4, 10, setting)
            );
            assert_ne!(
                episodes(3, 4, 10, setting),
                episodes(4, 4, 10, setting)
            );
        }
    }
}
