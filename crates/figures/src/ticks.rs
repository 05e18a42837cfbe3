//! Axis ticks: where they go on linear and logarithmic axes, and their
//! labels (powers written with superscript digits).

/// Unicode superscript digits for an integer exponent: 12 → "¹²".
pub fn superscript(n: i32) -> String {
    const DIGITS: [char; 10] =
        ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits = n.unsigned_abs().to_string();
    let sign = if n < 0 { "⁻" } else { "" };
    let body: String = digits
        .chars()
        .map(|c| DIGITS[c.to_digit(10).expect("a digit") as usize])
        .collect();
    format!("{sign}{body}")
}

/// The label of a power of `base` on a log axis: 1024 → "2¹⁰" for base 2.
/// Values that are not powers of `base` get no label.
pub fn power_label(base: u32, value: f64) -> String {
    let exponent = value.log(base as f64).round();
    let power = (base as f64).powf(exponent);
    if (value / power - 1.0).abs() < 1e-9 {
        format!("{base}{}", superscript(exponent as i32))
    } else {
        String::new()
    }
}

/// The ticks of an axis: where, and their labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    pub at: Vec<f64>,
    pub labels: Vec<String>,
}

impl Ticks {
    /// The label of the tick at `v`.
    pub fn label(&self, v: f64) -> String {
        self.at
            .iter()
            .zip(&self.labels)
            .find(|(a, _)| ((**a - v) / a.abs().max(1e-300)).abs() < 1e-9)
            .map_or(String::new(), |(_, l)| l.clone())
    }
}

/// A number as a tick label, with `decimals` digits after the point and
/// no minus sign on zero.
fn decimal(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v + 0.0);
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// At most `max` ticks for a linear axis over `range`, at a step of 1, 2
/// or 5 times a power of ten.
pub fn linear_ticks(range: (f64, f64), max: usize) -> Ticks {
    let (lo, hi) = (range.0.min(range.1), range.0.max(range.1));
    let raw = (hi - lo) / max.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| (hi - lo) / s <= max as f64)
        .unwrap_or(10.0 * power);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    let at: Vec<f64> = (first..=last).map(|i| i as f64 * step).collect();
    let labels = at.iter().map(|&v| decimal(v, decimals)).collect();
    Ticks { at, labels }
}

/// At most `max` ticks for a logarithmic axis of `base` over `range`: its
/// powers (every second or third one if there are too many; written as
/// numbers for base 2 up to 1024), or, for a
/// base-10 axis spanning under three decades, 1, 2 and 5 times each power,
/// labelled as decimals.
pub fn log_ticks(range: (f64, f64), base: u32, max: usize) -> Ticks {
    let (lo, hi) = (range.0.min(range.1), range.0.max(range.1));
    let b = base as f64;
    let decades = (hi / lo).log10();
    if base == 10 && decades < 3.0 && lo >= 1e-3 && hi <= 1e5 {
        let mut at = Vec::new();
        let mut power = 10f64.powf(lo.log10().floor());
        while power <= hi * (1.0 + 1e-9) {
            for m in [1.0, 2.0, 5.0] {
                let v = m * power;
                if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                    at.push(v);
                }
            }
            power *= 10.0;
        }
        let mantissa = |v: &f64| v / 10f64.powf((v.log10() + 1e-9).floor());
        if at.len() > max {
            at.retain(|v| (mantissa(v) - 2.0).abs() > 1e-6);
        }
        if at.len() > max {
            at.retain(|v| (mantissa(v) - 1.0).abs() < 1e-6);
        }
        if at.len() >= 2 {
            let labels = at
                .iter()
                .map(|&v| {
                    let decimals =
                        (-(v.log10() + 1e-9).floor()).max(0.0) as usize;
                    decimal(v, decimals)
                })
                .collect();
            return Ticks { at, labels };
        }
    }
    let first = (lo.log(b) - 1e-9).ceil() as i32;
    let last = (hi.log(b) + 1e-9).floor() as i32;
    let count = (last - first + 1).max(1) as usize;
    let every = count.div_ceil(max.max(1)).max(1) as i32;
    // Counted from the bottom, so the floor of the axis is labelled.
    let at: Vec<f64> = (first..=last)
        .filter(|k| (k - first).rem_euclid(every) == 0)
        .map(|k| b.powi(k))
        .collect();
    // Powers of two up to 1024 read better as numbers (4, 8, …, 256).
    let plain = base == 2 && hi <= 1024.0 * (1.0 + 1e-9);
    let labels = at
        .iter()
        .map(|&v| {
            if plain {
                format!("{v:.0}")
            } else {
                power_label(base, v)
            }
        })
        .collect();
    Ticks { at, labels }
}

/// The ticks of one axis of a panel.
pub(crate) fn ticks_of(
    range: (f64, f64),
    log: Option<u32>,
    max: usize,
) -> Ticks {
    match log {
        Some(base) => log_ticks(range, base, max),
        None => linear_ticks(range, max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_get_superscript_labels_and_others_none() {
        assert_eq!(superscript(0), "⁰");
        assert_eq!(superscript(18), "¹⁸");
        assert_eq!(superscript(-3), "⁻³");
        assert_eq!(power_label(2, 1024.0), "2¹⁰");
        assert_eq!(power_label(10, 1e6), "10⁶");
        assert_eq!(power_label(10, 1.0), "10⁰");
        assert_eq!(power_label(10, 3e6), "");
    }

    #[test]
    fn a_short_log_axis_is_labelled_at_one_two_and_five() {
        let t = log_ticks((0.015, 0.5), 10, 8);
        assert_eq!(t.labels, ["0.02", "0.05", "0.1", "0.2", "0.5"]);
        let t = log_ticks((0.09, 4.0), 10, 8);
        assert_eq!(t.labels, ["0.1", "0.2", "0.5", "1", "2"]);
        // A long one at its powers, every other one when they crowd.
        let t = log_ticks((1e-14, 1e4), 10, 10);
        assert_eq!(t.at.len(), 10);
        assert_eq!(t.labels[0], "10⁻¹⁴");
        let t = log_ticks((1e-5, 10.0), 10, 5);
        assert_eq!(t.labels, ["10⁻⁵", "10⁻³", "10⁻¹", "10¹"]);
        let t = log_ticks((40.0, 4.0e5), 2, 5);
        assert_eq!(t.labels, ["2⁶", "2⁹", "2¹²", "2¹⁵", "2¹⁸"]);
        let t = log_ticks((3.0, 80.0), 2, 8);
        assert_eq!(t.labels, ["4", "8", "16", "32", "64"]);
    }

    #[test]
    fn a_linear_axis_steps_by_one_two_or_five() {
        let t = linear_ticks((-0.09, 0.021), 6);
        assert_eq!(
            t.labels,
            ["-0.08", "-0.06", "-0.04", "-0.02", "0.00", "0.02"]
        );
        let t = linear_ticks((0.0, 130.0), 5);
        assert_eq!(t.labels, ["0", "50", "100"]);
        assert_eq!(linear_ticks((-0.5, 12.5), 13).at.len(), 13);
    }
}
