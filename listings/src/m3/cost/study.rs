//! The cost tables "Why attention is expensive" prints, memory and
//! decoding, their parameters, and the number formats every chapter's
//! tables use.

use super::{
    decode_flops, fixed_state_floats, fixed_state_step_flops, kv_cache_floats,
    score_matrix_floats,
};
use crate::table::Table;
use std::fmt;

/// Sequence lengths of the cost tables, 2¹⁰ to 2¹⁸.
pub const COST_LENGTHS: [u64; 5] =
    [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18];

/// Width d = m of one head's keys, queries and values in the cost tables.
pub const COST_D: u64 = 64;

/// Bytes per float in the cost tables (16-bit floats).
pub const COST_BYTES_PER_FLOAT: u64 = 2;

/// Output `cost-memory`.
pub fn cost_memory() -> String {
    let table = cost_table(&COST_LENGTHS, COST_D, COST_BYTES_PER_FLOAT);
    MemoryTable(&table).to_string()
}

/// Output `cost-decoding`.
pub fn cost_decoding() -> String {
    let table = cost_table(&COST_LENGTHS, COST_D, COST_BYTES_PER_FLOAT);
    DecodingTable(&table).to_string()
}

/// One length of the cost table.
pub struct CostRow {
    pub n: u64,
    pub score_floats: u64,
    pub cache_floats: u64,
    pub state_floats: u64,
    /// FLOPs to decode token n, and all tokens 1..=n.
    pub decode_flops: u64,
    pub decode_flops_total: u64,
    pub state_step_flops: u64,
    pub state_flops_total: u64,
}

/// The counts for one head with keys, queries and values of width d (so
/// p = d for the fixed state), at each length.
pub fn cost_table(lengths: &[u64], d: u64, bytes_per_float: u64) -> CostTable {
    let m = d;
    let rows = lengths
        .iter()
        .map(|&n| CostRow {
            n,
            score_floats: score_matrix_floats(n),
            cache_floats: kv_cache_floats(n, d, m),
            state_floats: fixed_state_floats(d, m),
            decode_flops: decode_flops(n, d, m),
            decode_flops_total: (1..=n).map(|t| decode_flops(t, d, m)).sum(),
            state_step_flops: fixed_state_step_flops(d, m),
            state_flops_total: n * fixed_state_step_flops(d, m),
        })
        .collect();
    CostTable {
        d,
        bytes_per_float,
        rows,
    }
}

/// The cost table; it prints as two tables, memory and decoding.
pub struct CostTable {
    pub d: u64,
    pub bytes_per_float: u64,
    pub rows: Vec<CostRow>,
}

/// The memory half of the cost table.
pub struct MemoryTable<'a>(pub &'a CostTable);

/// The decoding half of the cost table.
pub struct DecodingTable<'a>(pub &'a CostTable);

impl fmt::Display for MemoryTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CostTable {
            d,
            bytes_per_float: b,
            rows,
        } = self.0;
        writeln!(f, "one head, d = m = {d}, {b} bytes per float")?;
        let titles = format!(
            "{:>7}  {:^24}  {:^20}  {:^16}",
            "", "score matrix N x N", "KV cache N(d + m)", "fixed S and z"
        );
        writeln!(f, "{}", titles.trim_end())?;
        let mut table = Table::new()
            .right("N", 7)
            .right("floats", 14)
            .gap(" ")
            .right("bytes", 9)
            .gap("  ")
            .right("floats", 10)
            .gap(" ")
            .right("bytes", 9)
            .gap("  ")
            .right("floats", 6)
            .gap(" ")
            .right("bytes", 9);
        for r in rows {
            table.row([
                group_digits(r.n).to_string(),
                group_digits(r.score_floats).to_string(),
                bytes(r.score_floats * b).to_string(),
                group_digits(r.cache_floats).to_string(),
                bytes(r.cache_floats * b).to_string(),
                group_digits(r.state_floats).to_string(),
                bytes(r.state_floats * b).to_string(),
            ]);
        }
        write!(f, "{table}")?;
        if let Some(last) = rows.last() {
            write!(
                f,
                "\nat N = {}, the score matrix holds {} times\nthe floats of \
                 the KV cache",
                group_digits(last.n),
                group_digits(last.score_floats / last.cache_floats)
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for DecodingTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0.d;
        writeln!(
            f,
            "one head, d = m = {d}; FLOPs of attention while decoding"
        )?;
        let titles = format!(
            "{:>7}  {:^30}  {:^24}",
            "", "softmax with a KV cache", "fixed S and z"
        );
        writeln!(f, "{}", titles.trim_end())?;
        let mut table = Table::new()
            .right("N", 7)
            .right("token N", 10)
            .right("tokens 1..N", 18)
            .right("token N", 7)
            .right("tokens 1..N", 15);
        for r in &self.0.rows {
            table.row([
                group_digits(r.n).to_string(),
                group_digits(r.decode_flops).to_string(),
                group_digits(r.decode_flops_total).to_string(),
                group_digits(r.state_step_flops).to_string(),
                group_digits(r.state_flops_total).to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

/// 1234567 → "1,234,567".
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in binary units with three significant figures:
/// 512 → "512 B", 2048 → "2.00 KiB", 3 · 2³⁰ → "3.00 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut size = n as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n} B"),
        _ if size >= 100.0 => format!("{size:.0} {}", UNITS[unit]),
        _ if size >= 10.0 => format!("{size:.1} {}", UNITS[unit]),
        _ => format!("{size:.2} {}", UNITS[unit]),
    }
}
