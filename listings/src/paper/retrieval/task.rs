//! The synthetic retrieval task of Schlag et al. (2021, §6.1): a sequence
//! of key–value pairs, then a query key; the answer is the value paired
//! with that key.

use crate::input::{InputError, at_least_one};
use crate::random::seeded;
use rand::Rng;
use rand::seq::SliceRandom;

/// Which of the paper's two settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Setting {
    /// Capacity: every key appears once, so N = n pairs.
    Distinct,
    /// Update rules: keys repeat with new values, N = 2n pairs; the answer
    /// is the value at the key's last occurrence.
    Repeated,
}

impl Setting {
    /// The sequence length for n keys: n in Setting 1, 2n in Setting 2.
    pub fn len(self, n: usize) -> usize {
        match self {
            Setting::Distinct => n,
            Setting::Repeated => 2 * n,
        }
    }

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
/// Draw an episode over n keys and n values, as the paper's code does:
/// in Setting 1 keys and values are two permutations (each symbol once);
/// in Setting 2 both are drawn with replacement, 2n of each. n = 0 is an
/// error: there is no key to ask for.
pub fn episode(
    rng: &mut impl Rng,
    n: usize,
    setting: Setting,
) -> Result<Episode, InputError> {
    let mut e = Episode {
        keys: Vec::new(),
        values: Vec::new(),
        query: 0,
        target: 0,
    };
    episode_into(rng, n, setting, &mut e)?;
    Ok(e)
}

/// [`episode`], written into `e`'s vectors (no allocation once they have
/// grown to the sequence length).
pub fn episode_into(
    rng: &mut impl Rng,
    n: usize,
    setting: Setting,
    e: &mut Episode,
) -> Result<(), InputError> {
    draw_pairs(rng, n, setting.len(n), setting, e)?;
    let at = rng.random_range(0..e.keys.len());
    e.query = e.keys[at];
    // The answer is the value at the query key's last occurrence.
    let last = e.keys.iter().rposition(|&k| k == e.query);
    e.target = e.values[last.expect("the query is a key")];
    Ok(())
}
// ANCHOR_END: episode

/// The `len` key–value pairs of a sequence: permutations in Setting 1,
/// draws with replacement in Setting 2. n = 0 is an error.
fn draw_pairs(
    rng: &mut impl Rng,
    n: usize,
    len: usize,
    setting: Setting,
    e: &mut Episode,
) -> Result<(), InputError> {
    at_least_one("n", n, "a sequence draws from at least one key")?;
    for symbols in [&mut e.keys, &mut e.values] {
        symbols.clear();
        match setting {
            Setting::Distinct => {
                symbols.extend(0..n);
                symbols.shuffle(rng);
                symbols.truncate(len);
            }
            Setting::Repeated => {
                symbols.extend((0..len).map(|_| rng.random_range(0..n)));
            }
        }
    }
    Ok(())
}

/// One evaluation sequence of the paper's code: n pairs (in both settings),
/// queried at every distinct key, at most `max_queries` of them, in order
/// of key id. Returns the sequence and its (query, target) pairs; n = 0
/// and `max_queries` = 0 are errors.
pub fn eval_sequence(
    rng: &mut impl Rng,
    n: usize,
    setting: Setting,
    max_queries: usize,
) -> Result<(Episode, Vec<(usize, usize)>), InputError> {
    at_least_one(
        "max_queries",
        max_queries,
        "an evaluation asks at least once",
    )?;
    let mut e = Episode {
        keys: Vec::new(),
        values: Vec::new(),
        query: 0,
        target: 0,
    };
    draw_pairs(rng, n, n, setting, &mut e)?;
    let mut last = vec![None; n];
    for (t, &k) in e.keys.iter().enumerate() {
        last[k] = Some(t);
    }
    let queries: Vec<(usize, usize)> = (0..n)
        .filter_map(|k| last[k].map(|t| (k, e.values[t])))
        .take(max_queries)
        .collect();
    (e.query, e.target) = queries[0];
    Ok((e, queries))
}
// ANCHOR_END: episode

/// `count` episodes from one seed: the same seed, the same episodes.
pub fn episodes(
    seed: u64,
    count: usize,
    n: usize,
    setting: Setting,
) -> Result<Vec<Episode>, InputError> {
    let mut rng = seeded(seed);
    (0..count).map(|_| episode(&mut rng, n, setting)).collect()
}
