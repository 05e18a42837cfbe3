//! Plain-text tables for the book's printed outputs: columns with a title,
//! a width and an alignment, rows of cells formatted by the caller. The
//! header is the first line, each row one more line, with no newline after
//! the last: what a hand-written `write!` with `{:>w}` fields printed.
//!
//! ```
//! # extern crate listings;
//! use listings::table::Table;
//! let mut t = Table::new().right("N", 4).right("error", 8);
//! t.row([1.to_string(), format!("{:.1e}", 0.00123)]);
//! assert_eq!(t.to_string(), "   N     error\n   1    1.2e-3");
//! ```

use std::fmt;

/// Where a cell sits in its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

struct Column {
    /// The text before this column (none before the first).
    gap: &'static str,
    title: String,
    width: usize,
    align: Align,
}

/// A table: columns, then rows of already formatted cells.
pub struct Table {
    gap: &'static str,
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl Table {
    /// An empty table whose columns are two spaces apart.
    pub fn new() -> Table {
        Table {
            gap: "  ",
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The text between two columns from the next column on (two spaces
    /// unless set).
    pub fn gap(mut self, gap: &'static str) -> Table {
        self.gap = gap;
        self
    }

    /// Add a column `width` characters wide, its cells right-aligned.
    pub fn right(self, title: &str, width: usize) -> Table {
        self.column(title, width, Align::Right)
    }

    /// Add a column `width` characters wide, its cells left-aligned.
    pub fn left(self, title: &str, width: usize) -> Table {
        self.column(title, width, Align::Left)
    }

    fn column(mut self, title: &str, width: usize, align: Align) -> Table {
        let title = title.to_string();
        self.columns.push(Column {
            gap: self.gap,
            title,
            width,
            align,
        });
        self
    }

    /// Add a row, one cell per column.
    pub fn row<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>) {
        let cells: Vec<String> =
            cells.into_iter().map(|c| c.to_string()).collect();
        assert_eq!(
            cells.len(),
            self.columns.len(),
            "a row has one cell per column"
        );
        self.rows.push(cells);
    }

    fn line(&self, f: &mut fmt::Formatter<'_>, cells: &[&str]) -> fmt::Result {
        for (i, (column, cell)) in self.columns.iter().zip(cells).enumerate() {
            if i > 0 {
                f.write_str(column.gap)?;
            }
            let width = column.width;
            match column.align {
                Align::Left => write!(f, "{cell:<width$}")?,
                Align::Right => write!(f, "{cell:>width$}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let titles: Vec<&str> =
            self.columns.iter().map(|c| c.title.as_str()).collect();
        self.line(f, &titles)?;
        for row in &self.rows {
            f.write_str("\n")?;
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            self.line(f, &cells)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_prints_as_the_hand_written_format_did() {
        let mut t = Table::new().left("form", 10).right("N", 6).right("x", 8);
        let rows = [("recurrent", 256, 0.5), ("chunkwise", 16384, 1e-7)];
        for (form, n, x) in rows {
            t.row([form.to_string(), n.to_string(), format!("{x:.1e}")]);
        }
        let mut by_hand = format!("{:<10}  {:>6}  {:>8}", "form", "N", "x");
        for (form, n, x) in rows {
            by_hand += &format!("\n{form:<10}  {n:>6}  {x:>8.1e}");
        }
        assert_eq!(t.to_string(), by_hand);
    }

    #[test]
    fn each_column_keeps_the_gap_set_before_it() {
        let mut t = Table::new().gap(" ").right("a", 2).right("b", 2);
        let mut t2 = t.gap("  ").right("c", 2);
        t2.row(["1", "2", "3"]);
        t = t2;
        assert_eq!(t.to_string(), " a  b   c\n 1  2   3");
    }

    #[test]
    #[should_panic(expected = "one cell per column")]
    fn a_row_with_a_missing_cell_is_refused() {
        Table::new().right("a", 1).right("b", 1).row(["1"]);
    }
}
