//! Checks on the inputs of every listing: shapes that must agree, sequences
//! that must not be empty, values that must be finite. A bad input is an
//! error that names the problem, never a silent broadcast or a NaN.

use ndarray::{
    Array, ArrayRef, ArrayRef1, ArrayRef2, Axis, Dimension, LinalgScalar,
};
use std::fmt;

/// What is wrong with an input, in words a reader can act on.
#[derive(Debug, Clone, PartialEq)]
pub enum InputError {
    /// Two operands whose sizes must agree do not.
    ShapeMismatch {
        left: (&'static str, [usize; 2]),
        right: (&'static str, [usize; 2]),
        rule: &'static str,
    },
    /// An operand with no rows or no columns.
    Empty {
        name: &'static str,
        shape: [usize; 2],
    },
    /// A NaN or an infinity in an operand.
    NonFinite {
        name: &'static str,
        at: [usize; 2],
        value: f64,
    },
    /// An index past the end of a sequence.
    OutOfRange {
        name: &'static str,
        index: usize,
        len: usize,
    },
    /// A size or count outside the range the method allows.
    BadParameter {
        name: &'static str,
        value: usize,
        rule: &'static str,
    },
    /// Finite inputs whose result leaves the range of the float type.
    Overflow {
        name: &'static str,
        at: [usize; 2],
        value: f64,
    },
    /// A divisor (the normaliser of a read, a row sum, a norm) that is not
    /// above zero: the read would not be a weighted average.
    NonPositive {
        name: &'static str,
        at: usize,
        value: f64,
    },
    /// A real parameter outside the interval it must lie in (a gate in
    /// (0, 1], a write strength in [0, 1]).
    Outside {
        name: &'static str,
        at: [usize; 2],
        value: f64,
        allowed: &'static str,
    },
}

impl InputError {
    /// The error of a block of rows that starts at row `first` of its
    /// operand, placed in the whole operand: a row index moves down by
    /// `first`; an error without a row is unchanged.
    pub fn rows_from(self, first: usize) -> InputError {
        use InputError::*;
        match self {
            NonFinite { name, at, value } => NonFinite {
                name,
                at: [at[0] + first, at[1]],
                value,
            },
            Overflow { name, at, value } => Overflow {
                name,
                at: [at[0] + first, at[1]],
                value,
            },
            NonPositive { name, at, value } => NonPositive {
                name,
                at: at + first,
                value,
            },
            Outside {
                name,
                at,
                value,
                allowed,
            } => Outside {
                name,
                at: [at[0] + first, at[1]],
                value,
                allowed,
            },
            other => other,
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::ShapeMismatch { left, right, rule } => write!(
                f,
                "shape mismatch: {} is {:?} but {} is {:?} ({rule})",
                left.0, left.1, right.0, right.1
            ),
            InputError::Empty { name, shape } => {
                write!(f, "empty input: {name} has shape {shape:?}")
            }
            InputError::NonFinite { name, at, value } => {
                write!(f, "non-finite value {value} in {name} at {at:?}")
            }
            InputError::OutOfRange { name, index, len } => write!(
                f,
                "index out of range: {name} is {index} \
                 but the sequence has {len} positions"
            ),
            InputError::BadParameter { name, value, rule } => {
                write!(f, "bad parameter: {name} is {value} ({rule})")
            }
            InputError::Overflow { name, at, value } => write!(
                f,
                "overflow: {name} is {value} at {at:?}; the inputs are \
                 finite but too large for this float type"
            ),
            InputError::NonPositive { name, at, value } => write!(
                f,
                "non-positive divisor: {name} is {value} at row {at}; \
                 it must be above 0 (a read is a weighted average only \
                 then)"
            ),
            InputError::Outside {
                name,
                at,
                value,
                allowed,
            } => write!(
                f,
                "out of range: {name} is {value} at {at:?}, \
                 but it must lie in {allowed}"
            ),
        }
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// The error of one vector (entry i at [i, 0]) that is row `t` of a
    /// matrix, placed in the matrix: entry i of row t is at [t, i].
    pub fn in_row(self, t: usize) -> InputError {
        use InputError::*;
        let place = |at: [usize; 2]| [t, at[0]];
        match self {
            NonFinite { name, at, value } => NonFinite {
                name,
                at: place(at),
                value,
            },
            Overflow { name, at, value } => Overflow {
                name,
                at: place(at),
                value,
            },
            other => other,
        }
    }

    /// The same error, its row counted from `rows` earlier: for a check
    /// made on one chunk of a longer sequence.
    pub fn below(self, rows: usize) -> InputError {
        self.shifted(rows, 0)
    }

    /// The same error, its row counted from `rows` earlier and its column
    /// from `cols` earlier: for a check made on one block of a matrix.
    pub fn shifted(self, rows: usize, cols: usize) -> InputError {
        match self {
            InputError::Overflow { name, at, value } => InputError::Overflow {
                name,
                at: [at[0] + rows, at[1] + cols],
                value,
            },
            InputError::NonPositive { name, at, value } => {
                InputError::NonPositive {
                    name,
                    at: at + rows,
                    value,
                }
            }
            other => other,
        }
    }
}

/// The entry types the checks accept: f64, the book's, and f32, the fast
/// forms' of Appendix E.
pub trait Entry: Copy {
    /// Neither NaN nor ±∞.
    fn finite(self) -> bool;
    /// Finite and above zero.
    fn positive(self) -> bool {
        self.finite() && self.widen() > 0.0
    }
    /// The same number as an f64 (exactly), for an error message.
    fn widen(self) -> f64;
}

impl Entry for f64 {
    fn finite(self) -> bool {
        self.is_finite()
    }
    fn widen(self) -> f64 {
        self
    }
}

impl Entry for f32 {
    fn finite(self) -> bool {
        self.is_finite()
    }
    fn widen(self) -> f64 {
        f64::from(self)
    }
}

fn shape<T>(a: &ArrayRef2<T>) -> [usize; 2] {
    [a.nrows(), a.ncols()]
}

/// `a` has at least one row and one column, and only finite entries.
pub fn nonempty_finite<T: Entry>(
    name: &'static str,
    a: &ArrayRef2<T>,
) -> Result<(), InputError> {
    if a.is_empty() {
        return Err(InputError::Empty {
            name,
            shape: shape(a),
        });
    }
    match first_non_finite(a) {
        Some((at, value)) => Err(InputError::NonFinite { name, at, value }),
        None => Ok(()),
    }
}

/// Whether every entry of `x` passes `ok`, by one branch-free pass over
/// its memory (it vectorises), so that a check looks for the position of
/// a failing entry only when there is one to report; false when `x` is
/// not contiguous in memory (then the caller's own search decides).
pub(crate) fn all_pass<T: Entry>(
    x: &ArrayRef2<T>,
    ok: impl Fn(T) -> bool,
) -> bool {
    x.as_slice_memory_order().is_some_and(|x| none_fail(x, ok))
}

/// Whether no entry of `x` fails `ok`, counted without a branch.
pub(crate) fn none_fail<T: Entry>(x: &[T], ok: impl Fn(T) -> bool) -> bool {
    x.iter().map(|&v| u32::from(!ok(v))).sum::<u32>() == 0
}

/// The row and column of the first NaN or ±∞ of `a`, and its value.
fn first_non_finite<T: Entry>(a: &ArrayRef2<T>) -> Option<([usize; 2], f64)> {
    if all_pass(a, T::finite) {
        return None;
    }
    let ((i, j), &value) = a.indexed_iter().find(|(_, x)| !x.finite())?;
    Some(([i, j], value.widen()))
}

/// A result computed from finite inputs, returned if every entry is
/// finite; an overflow that names it and the first bad position if not
/// (row and column of a matrix; index and 0 of a vector).
pub fn finite<T: Entry, D: Dimension>(
    name: &'static str,
    a: Array<T, D>,
) -> Result<Array<T, D>, InputError> {
    if a.as_slice_memory_order()
        .is_some_and(|x| none_fail(x, T::finite))
    {
        return Ok(a);
    }
    match first_bad(&a) {
        Some((at, value)) => Err(InputError::Overflow { name, at, value }),
        None => Ok(a),
    }
}

/// Every entry of an input `a` (a vector or a matrix) is finite; a NaN or
/// ±∞ is an error naming it and its position, as [`finite`] places it.
pub fn all_finite<T: Entry, D: Dimension>(
    name: &'static str,
    a: &ArrayRef<T, D>,
) -> Result<(), InputError> {
    match first_bad(a) {
        Some((at, value)) => Err(InputError::NonFinite { name, at, value }),
        None => Ok(()),
    }
}

/// The first NaN or ±∞ of `a` and its value: row and column of a matrix,
/// index and 0 of a vector.
fn first_bad<T: Entry, D: Dimension>(
    a: &ArrayRef<T, D>,
) -> Option<([usize; 2], f64)> {
    let i = a.iter().position(|x| !x.finite())?;
    let value = a.iter().nth(i).map_or(f64::NAN, |x| x.widen());
    let at = match a.shape() {
        [_, cols] => [i / cols, i % cols],
        _ => [i, 0],
    };
    Some((at, value))
}

/// Every row of `a` sums to a finite number above zero, as the sum
/// normalisation of a row of features needs.
pub fn positive_row_sums<T: Entry + LinalgScalar>(
    name: &'static str,
    a: &ArrayRef2<T>,
) -> Result<(), InputError> {
    normalisers(name, &a.sum_axis(Axis(1)))
}

/// No row of `a` is all zeros (a relative error divides by its norm).
pub fn nonzero_rows<T: Entry>(
    name: &'static str,
    a: &ArrayRef2<T>,
) -> Result<(), InputError> {
    let zero = a
        .rows()
        .into_iter()
        .position(|r| r.iter().all(|x| x.widen() == 0.0));
    match zero {
        Some(at) => Err(InputError::NonPositive {
            name,
            at,
            value: 0.0,
        }),
        None => Ok(()),
    }
}

/// One normaliser, returned if it is finite and above zero.
pub fn normaliser<T: Entry>(
    name: &'static str,
    t: usize,
    value: T,
) -> Result<T, InputError> {
    match value {
        x if x.positive() => Ok(x),
        x if !x.finite() => Err(InputError::Overflow {
            name,
            at: [t, 0],
            value: x.widen(),
        }),
        x => Err(InputError::NonPositive {
            name,
            at: t,
            value: x.widen(),
        }),
    }
}

/// Every normaliser of `den`, one per row, finite and above zero.
pub fn normalisers<'a, T: Entry + 'a>(
    name: &'static str,
    den: impl IntoIterator<Item = &'a T>,
) -> Result<(), InputError> {
    den.into_iter()
        .enumerate()
        .try_for_each(|(t, &x)| normaliser(name, t, x).map(|_| ()))
}

/// `a` and `b` have the same number of columns.
pub fn same_cols<T>(
    (a_name, a): (&'static str, &ArrayRef2<T>),
    (b_name, b): (&'static str, &ArrayRef2<T>),
    rule: &'static str,
) -> Result<(), InputError> {
    agree(a.ncols() == b.ncols(), (a_name, a), (b_name, b), rule)
}

/// `a` and `b` have the same number of rows.
pub fn same_rows<T>(
    (a_name, a): (&'static str, &ArrayRef2<T>),
    (b_name, b): (&'static str, &ArrayRef2<T>),
    rule: &'static str,
) -> Result<(), InputError> {
    agree(a.nrows() == b.nrows(), (a_name, a), (b_name, b), rule)
}

fn agree<T>(
    ok: bool,
    (a_name, a): (&'static str, &ArrayRef2<T>),
    (b_name, b): (&'static str, &ArrayRef2<T>),
    rule: &'static str,
) -> Result<(), InputError> {
    if ok {
        Ok(())
    } else {
        Err(InputError::ShapeMismatch {
            left: (a_name, shape(a)),
            right: (b_name, shape(b)),
            rule,
        })
    }
}

/// The checks every attention variant makes on q: (N, d), k: (N_k, d) and
/// v: (N_k, m). A causal read also needs one key per query (N_k = N).
pub fn check_qkv<T: Entry>(
    q: &ArrayRef2<T>,
    k: &ArrayRef2<T>,
    v: &ArrayRef2<T>,
    causal: bool,
) -> Result<(), InputError> {
    nonempty_finite("q", q)?;
    nonempty_finite("k", k)?;
    nonempty_finite("v", v)?;
    same_cols(("q", q), ("k", k), "queries and keys share the width d")?;
    same_rows(("k", k), ("v", v), "each key has one value")?;
    if causal {
        same_rows(("q", q), ("k", k), "a causal read has one key per query")?;
    }
    Ok(())
}

/// The checks of [`check_qkv`] on features φ(q): (N, p), φ(k): (N_k, p)
/// and values, and no negative feature: with φ(q), φ(k) ≥ 0 every weight
/// φ(q)ᵀφ(k) is at least zero, so a read whose normaliser is above zero
/// is a weighted average of the values. A negative feature is an error
/// naming its operand and position.
pub fn check_features<T: Entry>(
    phi_q: &ArrayRef2<T>,
    phi_k: &ArrayRef2<T>,
    v: &ArrayRef2<T>,
    causal: bool,
) -> Result<(), InputError> {
    check_qkv(phi_q, phi_k, v, causal)?;
    no_negative_feature("phi_q", phi_q)?;
    no_negative_feature("phi_k", phi_k)
}

/// No entry of the features `a` below zero; an error naming the first.
pub fn no_negative_feature<T: Entry>(
    name: &'static str,
    a: &ArrayRef2<T>,
) -> Result<(), InputError> {
    let allowed = "[0, ∞): a negative feature can make a weight negative, \
                   and the read no average";
    first_outside(name, a, |x| x >= 0.0, allowed)
}

/// Every entry of `x` passes `ok` (a range such as a gate's (0, 1]); else
/// an error naming the first that does not, and the range it must lie in.
pub fn first_outside<T: Entry>(
    name: &'static str,
    x: &ArrayRef2<T>,
    ok: impl Fn(f64) -> bool,
    allowed: &'static str,
) -> Result<(), InputError> {
    if all_pass(x, |v| ok(v.widen())) {
        return Ok(());
    }
    match x.indexed_iter().find(|(_, v)| !ok(v.widen())) {
        Some(((i, j), v)) => Err(InputError::Outside {
            name,
            at: [i, j],
            value: v.widen(),
            allowed,
        }),
        None => Ok(()),
    }
}

/// The operands of one write to a memory: memory: (m, p), v: (m), k: (p),
/// v and k finite (the memory is the caller's own, checked when made).
pub fn check_write<T: Entry>(
    memory: &ArrayRef2<T>,
    v: &ArrayRef1<T>,
    k: &ArrayRef1<T>,
) -> Result<(), InputError> {
    let column = v.view().insert_axis(Axis(1)); // (m, 1)
    let row = k.view().insert_axis(Axis(0)); // (1, p)
    same_rows(
        ("memory", memory),
        ("v", &column),
        "v has one entry per row",
    )?;
    same_cols(
        ("memory", memory),
        ("k", &row),
        "k has one entry per column",
    )?;
    nonempty_finite("v", &column)?;
    nonempty_finite("k", &row)
}

/// A trained model's weights, as its own functions made them: slice i,
/// named `names[i]`, has `want[i]` entries, all finite. `sized_by` says
/// what sets the sizes ("its size for this model"), `rule` how they are
/// made, for the error.
pub fn weights_fit<T: num_traits::Float>(
    weights: &[&[T]],
    (names, want): (&[&'static str], &[usize]),
    sized_by: &'static str,
    rule: &'static str,
) -> Result<(), InputError> {
    for ((x, &len), &name) in weights.iter().zip(want).zip(names) {
        if x.len() != len {
            return Err(InputError::ShapeMismatch {
                left: (name, [x.len(), 1]),
                right: (sized_by, [len, 1]),
                rule,
            });
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            let value = x[i].to_f64().unwrap_or(f64::NAN);
            return Err(InputError::NonFinite {
                name,
                at: [i, 0],
                value,
            });
        }
    }
    Ok(())
}

/// A number a step takes (a write strength, a decay) is finite.
pub fn finite_number(name: &'static str, x: f64) -> Result<(), InputError> {
    match x.is_finite() {
        true => Ok(()),
        false => Err(InputError::NonFinite {
            name,
            at: [0, 0],
            value: x,
        }),
    }
}

/// A chunkwise schedule's chunk size: at least one token.
pub fn check_chunk(chunk: usize) -> Result<(), InputError> {
    at_least_one("chunk", chunk, "a chunk holds at least one token")
}

/// A count that must be at least one: 0 is an error naming it and `rule`.
pub fn at_least_one(
    name: &'static str,
    value: usize,
    rule: &'static str,
) -> Result<(), InputError> {
    match value {
        0 => Err(InputError::BadParameter { name, value, rule }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn an_error_of_a_block_of_rows_moves_to_the_rows_of_the_whole() {
        use InputError::*;
        let (name, value, allowed) = ("x", 2.0, "(0, 1]");
        let non_positive = |at| NonPositive { name, at, value };
        let non_finite = |i| NonFinite {
            name,
            at: [i, 1],
            value,
        };
        let overflow = |i| Overflow {
            name,
            at: [i, 2],
            value,
        };
        let outside = |i| Outside {
            name,
            at: [i, 0],
            value,
            allowed,
        };
        let empty = Empty {
            name,
            shape: [0, 3],
        };
        let cases = [
            (non_positive(3), non_positive(13)),
            (non_finite(3), non_finite(13)),
            (overflow(0), overflow(10)),
            (outside(1), outside(11)),
            (empty.clone(), empty),
        ];
        for (in_block, in_whole) in cases {
            assert_eq!(in_block.rows_from(10), in_whole);
        }
    }

    #[test]
    fn mismatch_message_names_both_operands_and_shapes() {
        let q = Array2::<f64>::zeros((12, 8));
        let k = Array2::<f64>::zeros((12, 6));
        let v = Array2::<f64>::zeros((12, 8));
        let msg = check_qkv(&q, &k, &v, false).unwrap_err().to_string();
        assert!(msg.contains("q is [12, 8]"), "{msg}");
        assert!(msg.contains("k is [12, 6]"), "{msg}");
    }

    #[test]
    fn empty_sequence_is_an_error_not_a_nan() {
        let e = Array2::<f64>::zeros((0, 8));
        let err = check_qkv(&e, &e, &e, true).unwrap_err();
        assert_eq!(
            err,
            InputError::Empty {
                name: "q",
                shape: [0, 8]
            }
        );
        assert!(err.to_string().contains("empty input: q"));
    }

    #[test]
    fn non_finite_values_are_reported_with_their_position() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let q = Array2::<f64>::zeros((3, 2));
            let mut k = q.clone();
            k[[2, 1]] = bad;
            let err = check_qkv(&q, &k, &q, true).unwrap_err();
            assert!(
                matches!(
                    err,
                    InputError::NonFinite {
                        name: "k",
                        at: [2, 1],
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn non_finite_values_are_found_in_f32_and_in_strided_views() {
        let mut a = Array2::<f32>::zeros((4, 6));
        a[[3, 4]] = f32::NAN;
        let err = nonempty_finite("v", &a).unwrap_err();
        assert!(matches!(err, InputError::NonFinite { at: [3, 4], .. }));
        // Every other column: not one slice of memory, so the slow path.
        let strided = a.slice(ndarray::s![.., ..;2]);
        let err = nonempty_finite("v", &strided).unwrap_err();
        assert!(matches!(err, InputError::NonFinite { at: [3, 2], .. }));
        let clean = a.slice(ndarray::s![.., 1..;2]);
        assert!(nonempty_finite("v", &clean).is_ok());
        assert!(nonempty_finite("v", &a.t()).is_err()); // column-major
    }

    #[test]
    fn causal_read_needs_one_key_per_query() {
        let q = Array2::<f64>::zeros((4, 2));
        let kv = Array2::<f64>::zeros((5, 2));
        assert!(check_qkv(&q, &kv, &kv, false).is_ok());
        let msg = check_qkv(&q, &kv, &kv, true).unwrap_err().to_string();
        assert!(msg.contains("one key per query"), "{msg}");
    }
}
