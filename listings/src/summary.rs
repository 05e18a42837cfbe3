//! Summaries of repeated measurements: the book reports the spread over
//! many seeds, never one lucky draw.

use std::fmt;

/// Smallest, median and largest of a set of measurements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `xs`. Panics on an empty set or a NaN, which would be
    /// a bug in the experiment that produced them.
    pub fn of(xs: &[f64]) -> Spread {
        assert!(!xs.is_empty(), "Spread::of needs at least one value");
        assert!(xs.iter().all(|x| !x.is_nan()), "Spread::of got a NaN");
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Spread {
            min: sorted[0],
            median,
            max: sorted[n - 1],
        }
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = f.precision().unwrap_or(3);
        write!(
            f,
            "min {:.p$}  median {:.p$}  max {:.p$}",
            self.min, self.median, self.max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_orders_values_and_takes_the_middle() {
        let s = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 4.0));
    }

    #[test]
    #[should_panic(expected = "at least one value")]
    fn spread_of_nothing_is_a_bug() {
        Spread::of(&[]);
    }
}
